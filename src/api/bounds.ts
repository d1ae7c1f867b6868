// Lower bounds of the QuorumControlPlane's duration fields. The CRD enforces them with CEL
// (config/crd/bases, one rule per field with the same minimum and reason); durationOr enforces them again for
// objects stored before the CRD had the rule, so an old `ghostMemberGracePeriod: 0s` is refused, not obeyed.
// test/unit/api/crd-schema.test.ts keeps the CRD's rules and messages equal to this table.

export interface DurationMinimum {
  /** The smallest accepted value, as the Go duration the CRD's rule compares with. */
  min: string;
  minMs: number;
  /** What a smaller value would break; ends the error message. */
  why: string;
}

export const SPEC_DURATION_MINIMUMS: Readonly<Record<string, DurationMinimum>> = {
  "spec.etcd.ghostMemberGracePeriod": {
    min: "20s",
    minMs: 20_000,
    why: "a shorter one makes every new member a ghost before its Machine reports the address it is recognised by",
  },
  "spec.etcd.memberJoinGracePeriod": {
    min: "1m",
    minMs: 60_000,
    why: "no Machine boots and joins etcd faster, so a shorter one fails every new Machine",
  },
  "spec.etcd.learnerPromotionTimeout": {
    min: "30s",
    minMs: 30_000,
    why: "a learner needs time to receive the snapshot etcd sends it, so a shorter one evicts learners that are catching up",
  },
  "spec.etcd.learnerStallTimeout": {
    min: "30s",
    minMs: 30_000,
    why: "a healthy learner may apply nothing for several seconds, so a shorter one evicts learners that are fine",
  },
  "spec.remediation.retryPeriod": {
    min: "30s",
    minMs: 30_000,
    why: "a shorter one remediates a replacement before it could have booted, churning Machines",
  },
  "spec.remediation.minHealthyPeriod": {
    min: "1m",
    minMs: 60_000,
    why: "a shorter one counts no failed replacement as a retry, which switches maxRetry off",
  },
  "spec.remediation.machineLostAfter": {
    min: "10s",
    minMs: 10_000,
    why: "a shorter one offers deleting a Machine whose etcd is only restarting",
  },
  "spec.deletion.etcdMemberRemovalTimeout": {
    min: "30s",
    minMs: 30_000,
    why: "a shorter one gives up before etcd lets a removal through, since etcd refuses a removal until the peer connections of the serving member are 5s old (a leader that just joined or restarted)",
  },
};

/** The message the CRD and the controller give for a value below the minimum of `path`. */
export function belowMinimumMessage(path: string, minimum: DurationMinimum, got?: string): string {
  return `${path} must be at least ${minimum.min}${got === undefined ? "" : ` (got "${got}")`}: ${minimum.why}`;
}
