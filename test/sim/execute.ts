// The controller's executor as a list of API calls against the world, one per call the real executor
// (src/controller/execute.ts) makes, followed by the status write. A crash can come between any two of them;
// the next reconcile starts from observation with nothing in memory but what status kept.
import { nextMachineName } from "../../src/controller/machine-factory.ts";
import type { Action } from "../../src/core/actions.ts";
import type { Snapshot } from "../../src/core/snapshot.ts";
import { learnerInSync } from "./evolve.ts";
import {
  CONTROL_PLANE,
  dropMember,
  electLeader,
  findMachine,
  findMember,
  hostNameFor,
  markDeleting,
  newAddress,
  type BootFault,
  type ControllerMemory,
  type World,
} from "./world.ts";

/** What one API call does to the world; the invariants judge calls by their effect. */
export type Effect =
  | { kind: "none" }
  | { kind: "create-machine"; failureDomain?: string }
  | { kind: "promote-learner"; memberId: string }
  | { kind: "move-leader"; toMemberId: string }
  | { kind: "remove-member"; memberId: string }
  | { kind: "delete-machine"; machine: string }
  | { kind: "set-hook"; machine: string; hook: boolean }
  | { kind: "write-status" };

export interface Call {
  name: string;
  effect: Effect;
}

export function callsFor(action: Action): Call[] {
  const writeStatus: Call = { name: "write status", effect: { kind: "write-status" } };
  switch (action.kind) {
    case "Wait":
      return [writeStatus];
    case "CreateMachine":
      return [
        { name: "create infrastructure clone", effect: { kind: "none" } },
        { name: "create bootstrap config clone", effect: { kind: "none" } },
        { name: "create Machine", effect: { kind: "create-machine", ...(action.failureDomain ? { failureDomain: action.failureDomain } : {}) } },
        writeStatus,
      ];
    case "PromoteLearner":
      return [{ name: `promote ${action.memberName}`, effect: { kind: "promote-learner", memberId: action.memberId } }, writeStatus];
    case "ForwardLeadership":
      return [{ name: `move leader to ${action.toMemberName}`, effect: { kind: "move-leader", toMemberId: action.toMemberId } }, writeStatus];
    case "RemoveMember":
    case "RemoveGhost":
      return [{ name: `remove member ${action.memberName || action.memberId}`, effect: { kind: "remove-member", memberId: action.memberId } }, writeStatus];
    case "DeleteMachine":
    case "Remediate":
      return [{ name: `delete Machine ${action.machine}`, effect: { kind: "delete-machine", machine: action.machine } }, writeStatus];
    case "ReleaseHook":
      return [{ name: `release hook of ${action.machine}`, effect: { kind: "set-hook", machine: action.machine, hook: false } }, writeStatus];
    case "AddHook":
      return [{ name: `add hook to ${action.machine}`, effect: { kind: "set-hook", machine: action.machine, hook: true } }, writeStatus];
  }
}

export interface CallContext {
  action: Action;
  snapshot: Snapshot;
  /** The memory observe() computed for this reconcile. */
  memory: ControllerMemory;
  /** Decided by the fault injector for a Machine created now. */
  bootFault?: BootFault;
}

/** Carries out one call; returns "ok" or the error the API (or etcd) would answer. */
export function runCall(world: World, call: Call, context: CallContext): string {
  const effect = call.effect;
  switch (effect.kind) {
    case "none":
      return "ok";
    case "create-machine":
      return createMachine(world, context, effect.failureDomain);
    case "promote-learner": {
      if (world.leaderId === undefined) return "etcdserver: no leader";
      const member = findMember(world, effect.memberId);
      if (!member) return "etcdserver: member not found";
      if (!member.learner) return "ok (already a voter)";
      if (!learnerInSync(world, member.appliedIndex)) return "etcdserver: can only promote a learner member which is in sync with leader";
      member.learner = false;
      electLeader(world);
      return "ok";
    }
    case "move-leader": {
      if (world.leaderId === undefined) return "etcdserver: no leader";
      const target = findMember(world, effect.toMemberId);
      if (!target || target.learner || !target.up) return "etcdserver: bad leader transferee";
      world.leaderId = target.id;
      target.appliedIndex = world.leaderIndex;
      return "ok";
    }
    case "remove-member": {
      const member = findMember(world, effect.memberId);
      if (!member) return "ok (already removed)";
      // A membership change is a raft proposal: it needs a leader.
      if (world.leaderId === undefined) return "etcdserver: no leader";
      dropMember(world, member.id);
      return "ok";
    }
    case "delete-machine": {
      const machine = findMachine(world, effect.machine);
      if (!machine) return "ok (already gone)";
      markDeleting(world, machine);
      return "ok";
    }
    case "set-hook": {
      const machine = findMachine(world, effect.machine);
      if (!machine) return `machines "${effect.machine}" not found`;
      machine.hook = effect.hook;
      return "ok";
    }
    case "write-status":
      world.memory = { members: context.memory.members, ...remediationRecord(context) };
      return "ok";
  }
}

function createMachine(world: World, context: CallContext, failureDomain: string | undefined): string {
  const { snapshot } = context;
  // As the real executor: the name comes from what this reconcile saw (names held by a Machine or an etcd member
  // are taken), and creating a Machine that already exists counts as done, so a stale cache cannot duplicate one.
  const taken = new Set([...snapshot.machines.map((machine) => machine.name), ...snapshot.etcd.members.map((member) => member.name)]);
  const name = nextMachineName(CONTROL_PLANE, snapshot.controlPlane.version, snapshot.controlPlane.templateHash, taken);
  if (findMachine(world, name)) return `ok (${name} already exists)`;
  const address = newAddress(world);
  world.machines.push({
    name,
    created: world.now,
    createdStep: world.step,
    version: world.spec.version,
    templateHash: world.spec.templateHash,
    ...(failureDomain ? { failureDomain } : {}),
    address,
    hostName: hostNameFor(world, name, address),
    phase: "provisioning",
    phaseUntil: world.step + world.rng.int(1, 3),
    infrastructureReady: false,
    bootstrapReady: false,
    hook: true,
    remediationRequested: false,
    failed: false,
    markedForDeletion: false,
    ...(context.bootFault ? { bootFault: context.bootFault } : {}),
    nodeRegistered: false,
  });
  return context.bootFault ? `ok (${name}; will fail: ${context.bootFault})` : `ok (${name})`;
}

/** The remediation history the real executor records with a Remediate, computed the same way. */
function remediationRecord(context: CallContext): Pick<ControllerMemory, "lastRemediation"> {
  const { action, snapshot, memory } = context;
  if (action.kind !== "Remediate") return memory.lastRemediation ? { lastRemediation: memory.lastRemediation } : {};
  const last = snapshot.controlPlane.remediation.last;
  const retryCount = last && last.machine !== action.machine && snapshot.now - last.time < snapshot.controlPlane.remediation.minHealthyPeriodMs ? last.retryCount + 1 : 0;
  return { lastRemediation: { machine: action.machine, time: snapshot.now, retryCount } };
}
