// The single next step the planner chose, as data. Executors in src/controller carry each out idempotently.
import type { RemediationRecord } from "./snapshot.ts";

export type Action =
  /** `remediationFor`: the remediation this Machine replaces, recorded on it (REMEDIATION_FOR_ANNOTATION). */
  | { kind: "CreateMachine"; failureDomain?: string; remediationFor?: RemediationRecord; reason: string }
  | { kind: "PromoteLearner"; memberId: string; memberName: string; reason: string }
  | { kind: "ForwardLeadership"; fromMemberId: string; toMemberId: string; toMemberName: string; reason: string }
  /** Remove the member of a Machine that is leaving (scale-down, rollout, remediation, deleted by a user). */
  | { kind: "RemoveMember"; memberId: string; memberName: string; machine?: string; reason: string }
  /**
   * `membersLeft` (here and on ReleaseHook): the etcd members this step lets go with their Machine's infrastructure
   * without removing them, which only a deletion of the control plane that gave up on etcd does
   * (src/core/deletion.ts). The controller records such a step as a Warning Event naming them.
   */
  | { kind: "DeleteMachine"; machine: string; reason: string; membersLeft?: string[] }
  /** The Machine is deleting and its member is gone: let CAPI delete its infrastructure. */
  | { kind: "ReleaseHook"; machine: string; reason: string; membersLeft?: string[] }
  /** Add the pre-terminate hook to an owned Machine that lacks it (adopted or created by an older version). */
  | { kind: "AddHook"; machine: string; reason: string }
  /** Remove a member that maps to no Machine, once its grace period passed and removing it is safe. */
  | { kind: "RemoveGhost"; memberId: string; memberName: string; reason: string }
  /** Delete a Machine a MachineHealthCheck asked to remediate (its member already removed). */
  /**
   * `remediation`: what is recorded before the delete (the last remediation, which the replacement will carry); its
   * retryCount is 0 for a first try, else one more than the remediation the Machine replaces (KCP's count).
   */
  | { kind: "Remediate"; machine: string; remediation: RemediationRecord; reason: string }
  /**
   * Bring the workload cluster to what the bootstrap flavour needs (snapshot.workloadSteps: kubeadm's RBAC, its
   * kubeadm-config ClusterConfiguration before a Machine joins, kube-proxy's image after a rollout).
   */
  | { kind: "PrepareWorkload"; step: string; reason: string }
  | {
      kind: "Wait";
      reason: string;
      blockedBy?: string;
      recheckAfterMs: number;
      /**
       * Nothing to do and nothing in flight: every Machine joined, every member a healthy voter mapped to one. Only
       * an etcd-side change could call for a step, so the controller may look less often (--etcd-idle-poll-interval).
       */
      settled?: true;
    };

export type ActionKind = Action["kind"];

export const ACTION_KINDS: readonly ActionKind[] = [
  "CreateMachine",
  "PromoteLearner",
  "ForwardLeadership",
  "RemoveMember",
  "DeleteMachine",
  "ReleaseHook",
  "AddHook",
  "RemoveGhost",
  "Remediate",
  "PrepareWorkload",
  "Wait",
] as const;

/** Actions that change etcd membership or take a Machine away: at most one per reconcile, each with an Event. */
export function isDisruptive(action: Action): boolean {
  return (
    action.kind === "RemoveMember" ||
    action.kind === "RemoveGhost" ||
    action.kind === "DeleteMachine" ||
    action.kind === "Remediate" ||
    action.kind === "ForwardLeadership"
  );
}
