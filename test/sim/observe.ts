// What the real observe() would see of the world: Machines from the management cluster, Nodes from the workload
// apiserver (only while etcd has quorum), the member list as a member that answers reports it, each member's
// status, and the controller's memory from status. Also returns the memory this reconcile would write back.
import { GROUP, KIND } from "../../src/api/constants.ts";
import type { MachineView, MemberView, NodeView, Snapshot } from "../../src/core/snapshot.ts";
import { CONTROL_PLANE, NAMESPACE, type ControllerMemory, type SimMachine, type SimMember, type World } from "./world.ts";

/** The simulated spec's timers, in milliseconds: short, so that a schedule stays tens of steps long. */
export const SIM_TIMERS = {
  ghostGracePeriodMs: 60_000,
  learnerPromotionTimeoutMs: 240_000,
  learnerStallMs: 60_000,
  memberJoinGracePeriodMs: 180_000,
  remediationRetryPeriodMs: 60_000,
  remediationMinHealthyPeriodMs: 300_000,
  remediationMaxRetry: 1000,
} as const;

export interface Observed {
  snapshot: Snapshot;
  /** The member memory this reconcile writes to status at its end (if it gets there). */
  memory: ControllerMemory;
}

/**
 * `staleMachines`: the Machines as an earlier reconcile saw them, standing in for an informer cache that has not
 * caught up yet (the member list is always read fresh).
 */
export function observe(world: World, staleMachines?: MachineView[]): Observed {
  const etcd = observeEtcd(world);
  const members: MemberView[] = [];
  const memory: ControllerMemory = { members: new Map(), ...(world.memory.lastRemediation ? { lastRemediation: world.memory.lastRemediation } : {}) };
  for (const member of etcd.members) {
    const before = world.memory.members.get(member.id);
    const applied = member.raftAppliedIndex;
    const progressed = before === undefined || (applied !== undefined && applied !== before.appliedIndex);
    const firstObserved = before?.firstObserved ?? world.now;
    const startedObserved = before?.startedObserved ?? (member.name !== "" ? world.now : undefined);
    const started = startedObserved === undefined ? {} : { startedObserved };
    const lastProgress = progressed ? world.now : before.lastProgress;
    members.push({ ...member, firstObserved, ...started, lastProgress });
    memory.members.set(member.id, { firstObserved, ...started, lastProgress, ...(applied !== undefined ? { appliedIndex: applied } : before?.appliedIndex !== undefined ? { appliedIndex: before.appliedIndex } : {}) });
  }
  // A member list that could not be read says nothing about who left: keep the memory as it was.
  if (!etcd.observed) memory.members = new Map(world.memory.members);
  const snapshot: Snapshot = {
    now: world.now,
    controlPlane: {
      namespace: NAMESPACE,
      name: CONTROL_PLANE,
      generation: world.spec.generation,
      replicas: world.spec.replicas,
      version: world.spec.version,
      templateHash: world.spec.templateHash,
      maxSurge: world.spec.maxSurge,
      memberRemoval: world.spec.memberRemoval,
      deleting: false,
      paused: world.spec.paused,
      remediation: {
        maxRetry: SIM_TIMERS.remediationMaxRetry,
        retryPeriodMs: SIM_TIMERS.remediationRetryPeriodMs,
        minHealthyPeriodMs: SIM_TIMERS.remediationMinHealthyPeriodMs,
        ...(world.memory.lastRemediation ? { last: { ...world.memory.lastRemediation } } : {}),
      },
      etcd: {
        ghostGracePeriodMs: SIM_TIMERS.ghostGracePeriodMs,
        learnerPromotionTimeoutMs: SIM_TIMERS.learnerPromotionTimeoutMs,
        learnerStallMs: SIM_TIMERS.learnerStallMs,
        memberJoinGracePeriodMs: SIM_TIMERS.memberJoinGracePeriodMs,
      },
    },
    cluster: {
      name: "sim",
      paused: world.spec.clusterPaused,
      failureDomains: [...world.failureDomains],
      infrastructureReady: true,
      controlPlaneInitialized: world.initialized,
      controlPlaneRef: { apiGroup: GROUP, kind: KIND, name: CONTROL_PLANE },
      foreignMachines: [],
    },
    machines: staleMachines ?? machineViews(world),
    nodes: observeNodes(world),
    etcd: { ...etcd, members },
  };
  return { snapshot, memory };
}

export function machineViews(world: World): MachineView[] {
  return world.machines.map((machine) => machineView(world, machine)).sort((a, b) => a.name.localeCompare(b.name));
}

function machineView(world: World, machine: SimMachine): MachineView {
  const node = machine.nodeRegistered ? machine.hostName : undefined;
  return {
    name: machine.name,
    created: machine.created,
    ...(machine.deleting !== undefined ? { deleting: machine.deleting, drainFinished: world.step >= (machine.drainedAt ?? 0) } : {}),
    version: machine.version,
    templateHash: machine.templateHash,
    ...(machine.failureDomain ? { failureDomain: machine.failureDomain } : {}),
    memberName: node ?? machine.name,
    ...(node ? { nodeName: node } : {}),
    ...(machine.infrastructureReady ? { providerID: `sim://${machine.name}` } : {}),
    addresses: machine.infrastructureReady && machine.address ? [machine.address] : [],
    infrastructureReady: machine.infrastructureReady,
    bootstrapReady: machine.bootstrapReady,
    hasPreTerminateHook: machine.hook,
    remediationRequested: machine.remediationRequested,
    failed: machine.failed,
    markedForDeletion: machine.markedForDeletion,
  };
}

/** The workload apiserver answers only while etcd has a leader; then it lists every registered Node. */
function observeNodes(world: World): NodeView[] {
  if (world.leaderId === undefined || !world.initialized) return [];
  const nodes: NodeView[] = [];
  for (const machine of world.machines) {
    if (!machine.nodeRegistered) continue;
    const member = world.members.find((candidate) => candidate.id === machine.memberId);
    nodes.push({ name: machine.hostName, providerID: `sim://${machine.name}`, ready: machine.phase === "running" && member !== undefined && member.up, addresses: machine.address ? [machine.address] : [] });
  }
  for (const stale of world.staleNodes) {
    if (!nodes.some((node) => node.name === stale.name)) nodes.push({ name: stale.name, ready: false, addresses: [stale.address] });
  }
  return nodes.sort((a, b) => a.name.localeCompare(b.name));
}

type ObservedMember = Omit<MemberView, "firstObserved" | "lastProgress">;

function observeEtcd(world: World): { observed: boolean; error?: string; members: ObservedMember[]; alarms: { memberId: string; alarm: string }[] } {
  // Like the real observe(): with no Machine there is nothing to ask, and it takes the membership to be empty.
  if (world.machines.length === 0) return { observed: true, members: [], alarms: [] };
  // Endpoints come from Machine addresses; the member list has to come from a member on one of them.
  const endpoints = new Set(world.machines.filter((machine) => machine.infrastructureReady && machine.address).map((machine) => machine.address));
  if (endpoints.size === 0) return { observed: false, error: "no control-plane Machine reports an address yet, so etcd cannot be reached", members: [], alarms: [] };
  if (!world.members.some((member) => member.up && endpoints.has(member.peerHost))) {
    return { observed: false, error: `no etcd member answered within its deadline (${endpoints.size} endpoints tried)`, members: [], alarms: [] };
  }
  const members = world.members.map((member) => memberView(world, member));
  return { observed: true, members, alarms: world.alarms.map((alarm) => ({ ...alarm })) };
}

function memberView(world: World, member: SimMember): ObservedMember {
  const peerURLs = [`https://${member.peerHost}:2380`];
  const clientURLs = member.started ? [`https://${member.peerHost}:2379`] : [];
  if (!member.up) {
    return { id: member.id, name: member.name, peerURLs, clientURLs, learner: member.learner, reachable: false, leader: false, errors: [member.started ? "context deadline exceeded" : "member not started"] };
  }
  const leader = world.leaderId === member.id;
  return {
    id: member.id,
    name: member.name,
    peerURLs,
    clientURLs,
    learner: member.learner,
    reachable: true,
    leader,
    raftTerm: 2,
    raftIndex: leader ? world.leaderIndex : member.appliedIndex,
    raftAppliedIndex: member.appliedIndex,
    errors: world.leaderId === undefined ? ["etcdserver: no leader"] : [],
  };
}
