// The cluster's operator, as far as Quorum asks for one. A healthy etcd member that maps to no Machine is
// never removed by Quorum on its own (it may be the live member of a Machine whose address or nodeRef has not
// shown yet); the EtcdMembersMapped condition names it by id and tells the fix. The operator reads the status the
// real controller wrote, and for each member named there that the world knows to be stale (a forgotten VM, a
// re-join after a reset: no Machine stands behind it), follows the fix by listing its id in the
// quorum-remove-etcd-member annotation. A member that does belong to a Machine is left alone: the mapping
// evidence (address, nodeRef) catches up by itself, and removing it by hand would be the operator's mistake.
// Likewise, where no MachineHealthCheck watches Node readiness, a voter that stays down has its Machine named in
// status.nextAction with "if machine <name> is lost, delete it": the operator deletes that Machine when the world
// knows its VM is gone for good, and leaves one whose member is only out for a while. A kubeadm Machine whose
// NodeKubeadmLabelSet condition is False is deleted when the world knows its join stopped (halfJoins), never one whose
// Node is only about to be labelled. A Machine status.nextAction names with "if it never registers a Node, delete
// machine <name>" is deleted when the world knows its kubelet's registration was refused (refusedNodes), never one
// whose Node only came late or whose nodeRef lags.
import { NODE_KUBEADM_LABEL_CONDITION } from "../../src/api/capi.ts";
import { CONDITION } from "../../src/api/constants.ts";
import { markDeleting, type World } from "./world.ts";

/** Lists the stale members the condition names; returns what the operator did, for the trace. */
export function followUnmappedMemberFix(world: World): string | undefined {
  const condition = world.status?.conditions?.find((candidate) => candidate.type === CONDITION.EtcdMembersMapped);
  if (condition?.status !== "False" || condition.reason !== "UnmappedMember") return undefined;
  const named = new Set([...(condition.message ?? "").matchAll(/\(id (\d+)\)/g)].map((match) => match[1]));
  const stale = world.members.filter(
    (member) => named.has(member.id) && member.machine === undefined && !world.spec.removeMemberIds.includes(member.id),
  );
  if (stale.length === 0) return undefined;
  world.spec.removeMemberIds.push(...stale.map((member) => member.id));
  return `operator annotates the QuorumControlPlane to remove stale member(s) ${stale.map((member) => `${member.name || "(unstarted)"}:${member.id}`).join(", ")}`;
}

/** The Machines status.nextAction says to delete if they are lost ("if machine <name> is lost, delete it"). */
export function offeredAsLost(world: World): Set<string> {
  const message = world.status?.nextAction?.message ?? "";
  return new Set([...message.matchAll(/if machine (\S+) is lost, delete it/g)].map((match) => match[1]));
}

/** Deletes the Machines status.nextAction says to delete if lost, when they are; returns what the operator did. */
export function followLostMachineFix(world: World): string | undefined {
  const named = offeredAsLost(world);
  const lost = world.machines.filter(
    (machine) =>
      named.has(machine.name) && machine.deleting === undefined && (machine.phase === "broken" || machine.kubeletLost),
  );
  for (const machine of lost) markDeleting(world, machine);
  if (lost.length === 0) return undefined;
  return `operator deletes lost machine(s) ${lost.map((machine) => machine.name).join(", ")}, as status.nextAction says`;
}

/** The Machines status.nextAction says to delete if they never register a Node (src/core/nodeless.ts). */
function offeredAsNodeless(world: World): Set<string> {
  const message = world.status?.nextAction?.message ?? "";
  return new Set(
    [...message.matchAll(/if it never registers a Node, delete machine (\S+) to replace it/g)].map((match) => match[1]),
  );
}

/** Deletes the Machines status.nextAction names as never getting a Node, when their registration was refused. */
export function followNodelessMachineFix(world: World): string | undefined {
  const named = offeredAsNodeless(world);
  const refused = world.machines.filter(
    (machine) => named.has(machine.name) && machine.deleting === undefined && machine.nodeRefused === true,
  );
  for (const machine of refused) markDeleting(world, machine);
  if (refused.length === 0) return undefined;
  return `operator deletes machine(s) ${refused.map((machine) => machine.name).join(", ")} whose kubelet cannot register, as status.nextAction says`;
}

/** Deletes the Machines whose NodeKubeadmLabelSet says their join did not label the Node, when it stopped for good. */
export function followUnlabelledNodeFix(world: World): string | undefined {
  const stopped = world.machines.filter(
    (machine) =>
      machine.joinStopped === true &&
      machine.deleting === undefined &&
      machine.ownedConditions?.some(
        (condition) => condition.type === NODE_KUBEADM_LABEL_CONDITION && condition.status === "False",
      ),
  );
  for (const machine of stopped) markDeleting(world, machine);
  if (stopped.length === 0) return undefined;
  return `operator deletes half-joined machine(s) ${stopped.map((machine) => machine.name).join(", ")}, as their NodeKubeadmLabelSet condition says`;
}
