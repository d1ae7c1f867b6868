// A Machine whose etcd member is a healthy voter but that has no Node, long after its creation: its kubelet could not
// register (an admission webhook or a policy refused the Node, a host name the API server rejects, credentials that do
// not work), the Node registered and CAPI cannot match it (no cloud controller manager set its spec.providerID, so no
// nodeRef comes), or the Node was deleted (a running kubelet does not register it again). etcd is whole and nothing
// marks the Machine unless a MachineHealthCheck has a node startup timeout; yet Quorum cannot see it serve (every
// removal of another voter waits on it: servingGate) and CAPI never calls it Ready. Quorum names it and the way out,
// removes it first when scaling down, and keeps looking at the short poll interval. Pure.
import type { MemberAssessment } from "./assess.ts";
import { formatDuration } from "./format.ts";
import { nodeOfMachine } from "./identity.ts";
import type { MachineView, Snapshot } from "./snapshot.ts";

export interface NodelessMachine {
  machine: string;
  /** How long since the Machine's creation, in ms. */
  age: number;
  /** The Node its status.nodeRef names, which does not exist (deleted, and not registered again). */
  nodeRef?: string;
}

/**
 * The Machines that have had no Node (by nodeRef or providerID) for longer than memberJoinGracePeriod since their
 * creation while their etcd member is a healthy voter. Only while the workload API's Nodes were read: otherwise "no
 * Node" is not known.
 */
export function nodelessMachines(
  snapshot: Snapshot,
  members: readonly Pick<MemberAssessment, "machine" | "class">[],
): NodelessMachine[] {
  const found: NodelessMachine[] = [];
  for (const machine of snapshot.machines) {
    if (!judged(machine) || !noNodePastGrace(snapshot, machine)) continue;
    const voter = members.some((member) => member.machine === machine.name && member.class === "healthy-voter");
    if (!voter) continue;
    found.push({
      machine: machine.name,
      age: snapshot.now - machine.created,
      ...(machine.nodeName !== undefined ? { nodeRef: machine.nodeName } : {}),
    });
  }
  return found;
}

/**
 * The Machine has no Node (by nodeRef or providerID) longer than memberJoinGracePeriod after its creation, and the
 * workload API's Nodes were read, so that "no Node" is known. With a healthy voter it is named (above); with a voter
 * that is down it never came up and is evicted (`neverCameUp` in plan.ts).
 */
export function noNodePastGrace(snapshot: Snapshot, machine: MachineView): boolean {
  const workload = snapshot.workload;
  if (!workload?.expected || !workload.readable) return false;
  if (snapshot.now - machine.created <= snapshot.controlPlane.etcd.memberJoinGracePeriodMs) return false;
  return nodeOfMachine(machine, snapshot.nodes) === undefined;
}

function judged(machine: MachineView): boolean {
  return machine.deleting === undefined && machine.malformed === undefined;
}

/** The way out, in words the simulated operator (test/sim/operator.ts) and a user both follow. */
export function nodelessFix(machine: string): string {
  return `if it never registers a Node, delete machine ${machine} to replace it`;
}

/** Why such a Machine goes first when scaling down, in a few words. */
export function nodelessWhy({ nodeRef }: NodelessMachine): string {
  return nodeRef !== undefined
    ? `its Node ${nodeRef} (status.nodeRef) does not exist`
    : "it got no Node within memberJoinGracePeriod of its creation";
}

/** What status says of such a Machine: what it means and the way out. */
export function nodelessMessage({ machine, age, nodeRef }: NodelessMachine, graceMs: number): string {
  const why =
    nodeRef !== undefined
      ? `its Node ${nodeRef} (status.nodeRef) does not exist: it was deleted, and a kubelet registers its Node only ` +
        "when it starts (restart the kubelet on its host)"
      : "its kubelet has not registered, or no cloud controller manager has set the Node's spec.providerID, by which " +
        "CAPI finds it (status.nodeRef)";
  return (
    `machine ${machine} has had no Node in the ${formatDuration(age)} since its creation (memberJoinGracePeriod ` +
    `${formatDuration(graceMs)}) though its etcd member is a healthy voter: ${why}; Quorum cannot see it serve, so ` +
    `every removal of another voter waits on it; ${nodelessFix(machine)}`
  );
}
