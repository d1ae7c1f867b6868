// Taking a deleted control plane down, bounded. While etcd can be read and keeps quorum, the planner removes the
// members one at a time like any scale-down to 0 (plan.ts), so the cluster never loses quorum through Quorum's hand.
// When it cannot — etcd unreadable (workload unreachable, every member frozen, no Machine ever got an address, the
// etcd CA Secret gone with its namespace), quorum lost — or once spec.deletion.etcdMemberRemovalTimeout has passed
// since the deletionTimestamp, waiting longer only keeps the finalizer (and a namespace being deleted) forever:
// nobody will use this etcd again. KCP in the same place releases its hooks and deletes every Machine; so does this,
// naming the members it leaves in etcd in a Warning Event and in the Deleting condition.
import type { Action } from "./actions.ts";
import type { Verdict } from "./assess.ts";
import { formatDuration } from "./format.ts";
import type { MachineView, Snapshot } from "./snapshot.ts";

export interface ForcedDeletion {
  /** Why members are no longer removed: "etcd cannot be read: ...". */
  why: string;
}

/** Whether the deletion has stopped removing members; undefined while it still removes them (or is no deletion). */
export function forcedDeletion(snapshot: Snapshot, base: Verdict): ForcedDeletion | undefined {
  const spec = snapshot.controlPlane;
  if (!spec.deleting) return undefined;
  if (!base.observed) return { why: `etcd cannot be read (${snapshot.etcd.error ?? "no etcd endpoint answered"})` };
  if (!base.hasQuorum) {
    const { healthyVoters, voters, quorumSize } = base.quorum;
    return {
      why: `etcd has lost quorum (${healthyVoters} of ${voters} voters healthy, quorum ${quorumSize}), so no member can be removed`,
    };
  }
  const timeoutMs = spec.deletion.etcdMemberRemovalTimeoutMs;
  const elapsedMs = snapshot.now - (spec.deletion.startedAt ?? snapshot.now);
  if (elapsedMs >= timeoutMs)
    return {
      why: `the members were not all removed within spec.deletion.etcdMemberRemovalTimeout (${formatDuration(timeoutMs)}) of the deletion`,
    };
  return undefined;
}

/** When a deletion that still removes members gives up on them (epoch ms). */
export function memberRemovalDeadline(snapshot: Snapshot): number {
  const { deletion } = snapshot.controlPlane;
  return (deletion.startedAt ?? snapshot.now) + deletion.etcdMemberRemovalTimeoutMs;
}

/**
 * The etcd members a Machine leaves behind if it goes now: its member when etcd was read, or, unread, the member
 * it would have (a Machine that never joined has none, which nobody can tell without etcd).
 */
export function membersOf(base: Verdict, machine: MachineView): string[] {
  if (!base.observed) return [`etcd member ${machine.memberName} (machine ${machine.name}), if it has one`];
  const memberId = base.machines.find((candidate) => candidate.name === machine.name)?.memberId;
  const member = memberId === undefined ? undefined : base.members.find((candidate) => candidate.id === memberId);
  return member ? [`${member.label} (id ${member.id}, machine ${machine.name})`] : [];
}

/** Every member the forced deletion leaves in etcd: those of the remaining Machines, and those that map to none. */
export function membersLeft(snapshot: Snapshot, base: Verdict): string[] {
  const ofMachines = snapshot.machines.flatMap((machine) => membersOf(base, machine));
  const unmapped = base.members
    .filter((member) => member.machine === undefined)
    .map((member) => `${member.label} (id ${member.id}, no Machine)`);
  return [...ofMachines, ...unmapped];
}

function byName(machines: MachineView[]): MachineView[] {
  return [...machines].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The one step of a forced deletion: release the hook of a Machine that is already being deleted (its
 * infrastructure goes next), else delete a Machine that is not yet; undefined when only CAPI has work left. Hooks
 * first, so Machines already on their way go at once; a Machine deleted here has its hook released next.
 */
export function forcedDeletionStep(
  snapshot: Snapshot,
  base: Verdict,
  forced: ForcedDeletion,
): Extract<Action, { kind: "ReleaseHook" | "DeleteMachine" }> | undefined {
  const key = `QuorumControlPlane ${snapshot.controlPlane.namespace}/${snapshot.controlPlane.name}`;
  const hooked = snapshot.machines
    .filter((machine) => machine.deleting !== undefined && machine.hasPreTerminateHook)
    .sort((a, b) => (a.deleting ?? 0) - (b.deleting ?? 0) || (a.name < b.name ? -1 : 1));
  const release = hooked[0];
  if (release) {
    const left = membersOf(base, release);
    return {
      kind: "ReleaseHook",
      machine: release.name,
      ...(left.length > 0 ? { membersLeft: left } : {}),
      reason: `release the pre-terminate hook of machine ${release.name} without removing ${left.length > 0 ? left.join(", ") : "an etcd member (it has none)"}: ${key} is being deleted and ${forced.why}`,
    };
  }
  const active = byName(snapshot.machines.filter((machine) => machine.deleting === undefined))[0];
  if (active) {
    const left = membersOf(base, active);
    // Without Quorum's hook CAPI deletes the infrastructure at once, so this step is the one that leaves the member.
    const then = active.hasPreTerminateHook ? "; its hook is released next" : "";
    return {
      kind: "DeleteMachine",
      machine: active.name,
      ...(left.length > 0 && !active.hasPreTerminateHook ? { membersLeft: left } : {}),
      reason: `delete machine ${active.name} without removing ${left.length > 0 ? left.join(", ") : "an etcd member (it has none)"}${then}: ${key} is being deleted and ${forced.why}`,
    };
  }
  return undefined;
}
