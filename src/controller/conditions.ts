// metav1-style conditions: set one by type, keeping lastTransitionTime unless the status flips, so an unchanged
// condition produces an unchanged status (and no write).
import type { Condition } from "../api/types.ts";

export interface ConditionInput {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message?: string;
}

export function setConditions(
  existing: Condition[] | undefined,
  updates: ConditionInput[],
  now: string,
  observedGeneration: number,
): Condition[] {
  const byType = new Map((existing ?? []).map((condition) => [condition.type, condition]));
  for (const update of updates) {
    const before = byType.get(update.type);
    byType.set(update.type, {
      type: update.type,
      status: update.status,
      reason: update.reason,
      message: update.message ?? "",
      lastTransitionTime: before && before.status === update.status ? before.lastTransitionTime : now,
      observedGeneration,
    });
  }
  return [...byType.values()].sort((a, b) => a.type.localeCompare(b.type));
}
