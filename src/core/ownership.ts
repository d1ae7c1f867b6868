// One owner (issue 12, bug 4: "two owners strip each other"). A second QuorumControlPlane labelled for the same
// Cluster — a copy-paste mistake, a migration from KubeadmControlPlane — saw the first one's healthy members as
// ghosts and removed them one by one, 4 voters -> 1. Two rules close that:
//   1. Quorum acts only when the Cluster's spec.controlPlaneRef names this QuorumControlPlane. Otherwise it takes
//      no step at all and says which control plane the Cluster does name, and the fix. The one exception is the
//      fix itself: a QuorumControlPlane being deleted still removes its own Machines and their members (under the
//      same health check, never a member that maps to none of its Machines), and the named control plane holds its
//      own steps while those Machines exist (rule 2), so only one of the two acts at a time and the deletion
//      cannot wedge on a finalizer.
//   2. Control-plane Machines of our Cluster that are not ours (another controller owner UID) have etcd members in
//      our etcd that we cannot judge: assess would call them ghosts. While they exist Quorum takes no step that
//      creates, removes or deletes anything; hooks, learner promotion and status go on.
// Why rule 2 blocks rather than counting their members as voters of a known foreign owner: the other owner acts
// on its members at the same time as we act on ours, and assess's quorum arithmetic holds only when one
// controller makes at most one disruptive change at a time. Two owners each making a step assess calls safe can
// together lose quorum; no step is the only safe one until a single owner remains.
import { GROUP, KIND } from "../api/constants.ts";
import { namesControlPlane } from "../api/ownership.ts";
import { ACTION_KINDS, type Action } from "./actions.ts";
import type { ForeignMachineView, Snapshot } from "./snapshot.ts";

export interface OwnershipConflict {
  /** The OwnershipConflict condition's reason. */
  reason: "NotReferencedByCluster" | "ForeignMachinesInCluster" | "ForeignMachinesLabelled";
  message: string;
  /** The other claimant(s), for status.nextAction.blockedBy. */
  claimant: string;
  /**
   * What Quorum holds back: every step; everything but removing its own Machines and their members (it is being
   * deleted); every step that adds or removes a member or a Machine; or nothing.
   */
  holds: "everything" | "allButOwnRemovals" | "membership" | "nothing";
}

const ALLOWED: Record<OwnershipConflict["holds"], ReadonlySet<Action["kind"]>> = {
  everything: new Set(["Wait"]),
  // Never RemoveGhost: a member that maps to none of our Machines may be the other owner's; never CreateMachine.
  allButOwnRemovals: new Set(["Wait", "AddHook", "ForwardLeadership", "RemoveMember", "DeleteMachine", "ReleaseHook"]),
  // Steps that neither add nor remove an etcd member nor create or delete a Machine.
  membership: new Set(["Wait", "AddHook", "PromoteLearner", "ReleaseHook"]),
  nothing: new Set(ACTION_KINDS),
};

/** Whether `action` may be taken while `conflict` lasts. A Wait always may. */
export function allowedDespite(conflict: OwnershipConflict, action: Action): boolean {
  if (action.kind === "RemoveMember" && conflict.holds === "allButOwnRemovals" && action.machine === undefined)
    return false;
  return ALLOWED[conflict.holds].has(action.kind);
}

export function ownershipConflict(snapshot: Snapshot): OwnershipConflict | undefined {
  const { namespace, name } = snapshot.controlPlane;
  const key = `QuorumControlPlane ${namespace}/${name}`;
  const cluster = `Cluster ${namespace}/${snapshot.cluster.name}`;
  const ref = snapshot.cluster.controlPlaneRef;
  if (!namesControlPlane(ref, name)) {
    const wanted = `{apiGroup: ${GROUP}, kind: ${KIND}, name: ${name}}`;
    const holds = snapshot.controlPlane.deleting ? "allButOwnRemovals" : "everything";
    if (!ref || !ref.name) {
      return {
        reason: "NotReferencedByCluster",
        holds,
        claimant: cluster,
        message: `${cluster} has no spec.controlPlaneRef, so nothing names ${key} as its control plane: Quorum does nothing here; set the Cluster's spec.controlPlaneRef to ${wanted}, or delete this QuorumControlPlane`,
      };
    }
    const other = `${ref.kind}${ref.kind === KIND && ref.apiGroup !== GROUP ? `.${ref.apiGroup || "(no apiGroup)"}` : ""} ${namespace}/${ref.name}`;
    const what = snapshot.controlPlane.deleting
      ? `this QuorumControlPlane is being deleted, so it removes its own Machines and their members one at a time and never a member that maps to none of them (it may be ${other}'s)`
      : `Quorum does nothing here; delete this QuorumControlPlane or point the Cluster at it (${wanted})`;
    return {
      reason: "NotReferencedByCluster",
      holds,
      claimant: other,
      message: `${cluster} names ${other} in spec.controlPlaneRef, not this QuorumControlPlane: ${what}`,
    };
  }
  const inCluster = snapshot.cluster.foreignMachines.filter((machine) => machine.sameCluster);
  if (inCluster.length > 0) {
    return {
      reason: "ForeignMachinesInCluster",
      holds: "membership",
      claimant: owners(inCluster),
      message:
        `control-plane Machine(s) of ${cluster} that are not ${key}'s: ${listed(inCluster)}. Their etcd members are in this Cluster's etcd and not Quorum's to judge, ` +
        `so Quorum creates, removes and deletes nothing while they exist (hooks and learner promotion go on); ` +
        `scale down or delete them through their owner, or delete them once their etcd members are removed`,
    };
  }
  const elsewhere = snapshot.cluster.foreignMachines;
  if (elsewhere.length > 0) {
    return {
      reason: "ForeignMachinesLabelled",
      holds: "nothing",
      claimant: owners(elsewhere),
      message: `Machine(s) labelled for ${key} that are not its own are ignored (never acted on, never counted): ${listed(elsewhere)}; remove the cluster.x-k8s.io/control-plane-name label from them if it was copied by mistake`,
    };
  }
  return undefined;
}

function listed(machines: ForeignMachineView[]): string {
  return machines.map((machine) => `${machine.name} (${machine.why})`).join(", ");
}

function owners(machines: ForeignMachineView[]): string {
  return [...new Set(machines.map((machine) => machine.owner))].join(", ");
}
