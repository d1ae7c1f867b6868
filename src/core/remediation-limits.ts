// KCP's remediation limits (its checkRetryLimits), read by the planner and the Machines' OwnerRemediated condition.
// They apply only to a Machine created to replace a remediated one (MachineView.remediationFor), within
// minHealthyPeriod of that remediation: it waits out retryPeriod after it, and after maxRetry such retries in a row
// nothing replaces it until the user does. A Machine that fails on its own is a first try, whatever happened to others.
import { formatDuration } from "./format.ts";
import type { MachineView, RemediationRecord, Snapshot } from "./snapshot.ts";

/** The Machine was created to replace this remediation (it may carry the remediated Machine's name). */
export function replaces(machine: MachineView, remediation: RemediationRecord): boolean {
  const lineage = machine.remediationFor;
  return lineage !== undefined && lineage.machine === remediation.machine && lineage.time === remediation.time;
}

/**
 * The Machine is the one the last remediation recorded, not its replacement (which may reuse its name): a crash
 * between the record and the delete, or a stale cache. The remediation goes ahead again, as it was recorded.
 */
export function recordedRemediation(snapshot: Snapshot, machine: MachineView): boolean {
  const last = snapshot.controlPlane.remediation.last;
  return last !== undefined && last.machine === machine.name && !replaces(machine, last);
}

/** The remediation this Machine replaces, when that was less than minHealthyPeriod ago: remediating it is a retry. */
export function retryOf(snapshot: Snapshot, machine: MachineView): RemediationRecord | undefined {
  const lineage = machine.remediationFor;
  const { minHealthyPeriodMs } = snapshot.controlPlane.remediation;
  return lineage && snapshot.now - lineage.time < minHealthyPeriodMs ? lineage : undefined;
}

/** The retry a remediation would be is past maxRetry (a negative maxRetry means no limit). */
export function pastMaxRetry(snapshot: Snapshot, retry: RemediationRecord): boolean {
  const { maxRetry } = snapshot.controlPlane.remediation;
  return maxRetry >= 0 && retry.retryCount >= maxRetry;
}

/** maxRetry replacements in a row failed: this Machine is not replaced before minHealthyPeriod has passed. */
export function retriesExhausted(snapshot: Snapshot, machine: MachineView): RemediationRecord | undefined {
  if (recordedRemediation(snapshot, machine)) return undefined;
  const retry = retryOf(snapshot, machine);
  return retry && pastMaxRetry(snapshot, retry) ? retry : undefined;
}

/** "N replacement(s) in a row failed within minHealthyPeriod …": what a Machine past maxRetry is told. */
export function failedInARow(snapshot: Snapshot, retry: RemediationRecord): string {
  const { maxRetry, minHealthyPeriodMs } = snapshot.controlPlane.remediation;
  const failed = retry.retryCount + 1;
  return `${failed} replacement${failed === 1 ? "" : "s"} in a row failed within minHealthyPeriod ${formatDuration(minHealthyPeriodMs)} (maxRetry ${maxRetry})`;
}
