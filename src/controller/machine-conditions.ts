// Writes the conditions Quorum owns on its Machines (UpToDate, OwnerRemediated, NodeKubeadmLabelSet;
// src/core/machine-conditions.ts decides them) where they differ from what the Machine carries. Only a changed type,
// status, reason or message is a write, so an idle control plane writes nothing; lastTransitionTime moves only when the
// status flips.
import type { Machine, MetaV1Condition } from "../api/capi.ts";
import type { Action } from "../core/actions.ts";
import { ownedMachineConditions, type MachineCondition } from "../core/machine-conditions.ts";
import type { Snapshot } from "../core/snapshot.ts";
import { isConflict, type ManagementApi } from "../ports/index.ts";
import type { Problem } from "./status.ts";

export interface MachineConditionsResult {
  /** "cp-abc12-0: UpToDate False (NotUpToDate)", one per Machine written. */
  updated: string[];
  problem?: Problem;
}

export async function keepMachineConditions(
  namespace: string,
  machines: readonly Machine[],
  snapshot: Snapshot,
  action: Action,
  management: ManagementApi,
): Promise<MachineConditionsResult> {
  const wanted = ownedMachineConditions(snapshot, action);
  const now = new Date(snapshot.now).toISOString();
  const updated: string[] = [];
  for (const machine of machines) {
    const desired = wanted.get(machine.metadata.name);
    const resourceVersion = machine.metadata.resourceVersion;
    if (!desired || !resourceVersion) continue;
    const existing = machine.status?.conditions ?? [];
    const changed = desired.set.filter((condition) => !carries(existing, condition));
    const removed = desired.remove.filter((type) => existing.some((condition) => condition.type === type));
    if (changed.length === 0 && removed.length === 0) continue;
    try {
      await management.setMachineConditions(
        namespace,
        machine.metadata.name,
        withConditions(existing, changed, now, machine.metadata.generation).filter(
          (condition) => !removed.some((type) => type === condition.type),
        ),
        resourceVersion,
      );
      updated.push(
        `${machine.metadata.name}: ${[
          ...changed.map((condition) => `${condition.type} ${condition.status} (${condition.reason})`),
          ...removed.map((type) => `${type} removed (the Machine recovered)`),
        ].join(", ")}`,
      );
    } catch (error) {
      // CAPI wrote the Machine since it was read: its watch event brings the next reconcile, which decides again.
      if (isConflict(error)) return { updated };
      const cause = error instanceof Error ? error.message : String(error);
      return {
        updated,
        problem: {
          reason: "MachineConditionsFailed",
          message: `could not set the ${[...changed.map((condition) => condition.type), ...removed].join(" and ")} condition of Machine ${namespace}/${machine.metadata.name}: ${cause}`,
        },
      };
    }
  }
  return { updated };
}

function carries(existing: readonly MetaV1Condition[], wanted: MachineCondition): boolean {
  const current = existing.find((condition) => condition.type === wanted.type);
  return (
    current !== undefined &&
    current.status === wanted.status &&
    (current.reason ?? "") === wanted.reason &&
    (current.message ?? "") === wanted.message
  );
}

/** The Machine's conditions with the changed ones replaced where they are (CAPI keeps its own order) or appended. */
function withConditions(
  existing: readonly MetaV1Condition[],
  changed: readonly MachineCondition[],
  now: string,
  generation: number | undefined,
): MetaV1Condition[] {
  const written = (condition: MachineCondition, before: MetaV1Condition | undefined): MetaV1Condition => ({
    type: condition.type,
    status: condition.status,
    reason: condition.reason,
    message: condition.message,
    lastTransitionTime:
      before?.status === condition.status && before.lastTransitionTime ? before.lastTransitionTime : now,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  });
  const result = existing.map((condition) => {
    const update = changed.find((candidate) => candidate.type === condition.type);
    return update ? written(update, condition) : { ...condition };
  });
  for (const condition of changed)
    if (!existing.some((candidate) => candidate.type === condition.type)) result.push(written(condition, undefined));
  return result;
}
