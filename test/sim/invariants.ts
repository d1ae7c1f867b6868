// The properties every schedule must keep, judged against the world's truth (not the controller's view of it).
// Safety rules are checked before each API call the controller makes and after its action; the liveness rules
// (converges, never stuck) are judged by run.ts over the steps after faults stop.
import type { Snapshot } from "../../src/core/snapshot.ts";
import type { Call } from "./execute.ts";
import { findMachine, findMember, healthy, healthyVoterCount, quorumSize, voters, type World } from "./world.ts";

export type Rule =
  | "1 quorum kept"
  | "2 projected healthy majority"
  | "2 one removal at a time"
  | "3 member removed before its machine"
  | "4 converges"
  | "5 never stuck"
  | "planner throws";

export interface Finding {
  kind: "violation" | "stuck";
  rule: Rule;
  message: string;
}

/** Safety rules about one call, judged on the world just before the call runs. */
export function checkCall(world: World, snapshot: Snapshot, call: Call): Finding | undefined {
  const effect = call.effect;
  switch (effect.kind) {
    case "remove-member":
      return checkRemoval(world, effect.memberId);
    case "delete-machine":
      return checkDelete(world, snapshot, effect.machine);
    case "set-hook":
      return effect.hook ? undefined : checkRelease(world, effect.machine);
    default:
      return undefined;
  }
}

/** Rule 1: the controller's own action never takes the voters from a healthy quorum to none. */
export function checkQuorumKept(world: World, hadQuorum: boolean, actionText: string): Finding | undefined {
  const count = voters(world).length;
  const healthyCount = healthyVoterCount(world);
  if (!hadQuorum || (count > 0 && healthyCount >= quorumSize(count))) return undefined;
  return { kind: "violation", rule: "1 quorum kept", message: `${actionText} left ${healthyCount} healthy of ${count} voters (quorum ${quorumSize(count)})` };
}

function checkRemoval(world: World, memberId: string): Finding | undefined {
  const member = findMember(world, memberId);
  if (!member || member.learner) return undefined;
  const projected = voters(world).length - 1;
  const projectedHealthy = healthyVoterCount(world) - (healthy(world, member) ? 1 : 0);
  const who = `${member.name || "(unstarted)"} ${member.id}`;
  if (projected === 0 || projectedHealthy < quorumSize(projected)) {
    return {
      kind: "violation",
      rule: "2 projected healthy majority",
      message: `removed voter ${who} (${healthy(world, member) ? "healthy" : "unhealthy"}) leaving ${projectedHealthy} healthy of ${projected} voters (quorum ${quorumSize(projected)})`,
    };
  }
  if (!healthy(world, member)) return undefined;
  // A Machine whose voter is already gone is a removal in flight: starting another takes the cluster down two
  // members for one step of work (the seed bug of a scale-down that does not finish what it started).
  const unfinished = world.machines.find((machine) => machine.voterRemoved && machine.name !== member.machine);
  if (unfinished) {
    return {
      kind: "violation",
      rule: "2 one removal at a time",
      message: `removed healthy voter ${who} while machine ${unfinished.name}, whose voter is already removed, is not finished`,
    };
  }
  return undefined;
}

function checkDelete(world: World, snapshot: Snapshot, machineName: string): Finding | undefined {
  if (snapshot.controlPlane.memberRemoval !== "BeforeDelete") return undefined;
  const machine = findMachine(world, machineName);
  if (!machine || machine.deleting !== undefined || machine.memberId === undefined) return undefined;
  const member = findMember(world, machine.memberId);
  if (!member || member.learner || !healthy(world, member)) return undefined;
  return {
    kind: "violation",
    rule: "3 member removed before its machine",
    message: `deleted machine ${machineName} (memberRemoval BeforeDelete) while its member ${member.name} ${member.id} is a healthy voter`,
  };
}

function checkRelease(world: World, machineName: string): Finding | undefined {
  const machine = findMachine(world, machineName);
  if (!machine || machine.memberId === undefined) return undefined;
  const member = findMember(world, machine.memberId);
  if (!member) return undefined;
  return {
    kind: "violation",
    rule: "3 member removed before its machine",
    message: `released the pre-terminate hook of machine ${machineName} while its member ${member.name || "(unstarted)"} ${member.id} is still in the cluster`,
  };
}

/** The spec is reached: replicas Machines at the spec, each with a Node and a healthy voter, nothing else. */
export function converged(world: World): boolean {
  const spec = world.spec;
  if (spec.paused || spec.clusterPaused || world.leaderId === undefined) return false;
  if (world.machines.length !== spec.replicas || world.members.length !== spec.replicas) return false;
  for (const machine of world.machines) {
    if (machine.deleting !== undefined || machine.remediationRequested || machine.phase !== "running" || !machine.nodeRegistered) return false;
    if (machine.version !== spec.version || machine.templateHash !== spec.templateHash) return false;
    const member = machine.memberId === undefined ? undefined : findMember(world, machine.memberId);
    if (!member || member.learner || !member.up) return false;
  }
  return true;
}

/** What counts as progress: any change to Machines, members or the leader (raft indices do not count). */
export function fingerprint(world: World): string {
  const machines = world.machines.map((m) => `${m.name}:${m.phase}:${m.deleting ?? ""}:${m.hook}:${m.nodeRegistered}:${m.remediationRequested}`).join(",");
  const members = world.members.map((m) => `${m.id}:${m.name}:${m.learner}:${m.up}`).join(",");
  return `${machines}|${members}|${world.leaderId ?? ""}|${world.spec.generation}`;
}
