// The written form of a remediation record, in one place with its reader: the QuorumControlPlane's
// quorum-last-remediation annotation (and status.lastRemediation) and a replacement Machine's quorum-remediation-for
// annotation all hold {"machine","time" (ISO 8601),"retryCount"}, as KCP's remediation-for does.
import type { QuorumControlPlaneStatus } from "../api/types.ts";
import type { RemediationRecord } from "../core/snapshot.ts";

/** status.lastRemediation's shape, which the annotations hold as JSON. */
export type WrittenRemediation = NonNullable<QuorumControlPlaneStatus["lastRemediation"]>;

/** A record as Quorum writes it: its time as ISO 8601. */
export function writtenRemediation({ machine, time, retryCount }: RemediationRecord): WrittenRemediation {
  return { machine, time: new Date(time).toISOString(), retryCount };
}

/** An annotation's value: the written record as JSON. */
export function remediationText(record: RemediationRecord): string {
  return JSON.stringify(writtenRemediation(record));
}

/**
 * A record as Quorum writes it, with its time in epoch ms; undefined when absent or unreadable (a hand edit).
 */
export function readRemediation(text: string | undefined): RemediationRecord | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null) return undefined;
    const { machine, time, retryCount } = value as Record<string, unknown>;
    const at = typeof time === "string" ? Date.parse(time) : Number.NaN;
    if (
      typeof machine === "string" &&
      !Number.isNaN(at) &&
      typeof retryCount === "number" &&
      Number.isInteger(retryCount) &&
      retryCount >= 0
    )
      return { machine, time: at, retryCount };
  } catch {
    // Not JSON.
  }
  return undefined;
}
