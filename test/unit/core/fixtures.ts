// Snapshot builders for the core's unit tests, plus an idealised world that applies an Action the way the
// executors would if everything succeeded at once (used to walk multi-step scenarios such as 1 -> 3 -> 1).
import { GROUP, KIND } from "../../../src/api/constants.ts";
import type { Action } from "../../../src/core/actions.ts";
import type {
  ClusterView,
  ControlPlaneView,
  MachineView,
  MemberView,
  NodeView,
  Snapshot,
} from "../../../src/core/snapshot.ts";

export const SECOND = 1_000;
export const MINUTE = 60 * SECOND;
export const NOW = 1_750_000_000_000;
export const VERSION = "v1.31.2";
export const OLD_VERSION = "v1.30.5";
export const HASH = "tmpl-1";

export function controlPlane(overrides: Partial<ControlPlaneView> = {}): ControlPlaneView {
  return {
    namespace: "default",
    name: "qcp",
    generation: 1,
    replicas: 3,
    version: VERSION,
    templateHash: HASH,
    maxSurge: 1,
    memberRemoval: "BeforeDelete",
    deleting: false,
    paused: false,
    remediation: {
      maxRetry: 3,
      retryPeriodMs: 5 * MINUTE,
      minHealthyPeriodMs: 60 * MINUTE,
      machineLostAfterMs: 5 * MINUTE,
    },
    etcd: {
      ghostGracePeriodMs: 5 * MINUTE,
      learnerPromotionTimeoutMs: 10 * MINUTE,
      learnerStallMs: 5 * MINUTE,
      memberJoinGracePeriodMs: 10 * MINUTE,
    },
    deletion: { etcdMemberRemovalTimeoutMs: 10 * MINUTE },
    ...overrides,
  };
}

export function clusterView(overrides: Partial<ClusterView> = {}): ClusterView {
  // Real Clusters name their control plane in spec.controlPlaneRef; the planner acts only when it names this one.
  const claims = { controlPlaneRef: { apiGroup: GROUP, kind: KIND, name: "qcp" }, foreignMachines: [] };
  return {
    name: "demo",
    paused: false,
    failureDomains: ["fd-a", "fd-b", "fd-c"],
    infrastructureReady: true,
    controlPlaneInitialized: true,
    ...claims,
    ...overrides,
    foreignMachines: overrides.foreignMachines ?? claims.foreignMachines,
  };
}

/** Stable, distinct addresses per name, so peer-URL mapping in tests is never accidental. */
const addresses = new Map<string, string>();
export function addressOf(name: string): string {
  let address = addresses.get(name);
  if (!address) {
    const n = addresses.size + 2;
    address = `10.0.${Math.floor(n / 250)}.${n % 250}`;
    addresses.set(name, address);
  }
  return address;
}

/** A joined, up-to-date, hooked Machine created an hour ago. */
export function machine(name: string, overrides: Partial<MachineView> = {}): MachineView {
  return {
    name,
    created: NOW - 60 * MINUTE,
    version: VERSION,
    templateHash: HASH,
    memberName: name,
    nodeName: name,
    providerID: `sim://${name}`,
    addresses: [addressOf(name)],
    infrastructureReady: true,
    bootstrapReady: true,
    hasPreTerminateHook: true,
    remediationRequested: false,
    failed: false,
    markedForDeletion: false,
    ...overrides,
  };
}

let nextId = 1000;
const ids = new Map<string, string>();
export function idOf(name: string): string {
  let id = ids.get(name);
  if (!id) {
    id = String(nextId++) + "7";
    ids.set(name, id);
  }
  return id;
}

/** A started, healthy voter named after its Machine, observed an hour ago. */
export function member(name: string, overrides: Partial<MemberView> = {}): MemberView {
  return {
    id: idOf(name),
    name,
    peerURLs: [`https://${addressOf(name)}:2380`],
    clientURLs: [`https://${addressOf(name)}:2379`],
    learner: false,
    reachable: true,
    leader: false,
    raftTerm: 2,
    raftIndex: 5000,
    raftAppliedIndex: 5000,
    errors: [],
    firstObserved: NOW - 60 * MINUTE,
    startedObserved: NOW - 60 * MINUTE,
    lastProgress: NOW,
    ...overrides,
  };
}

export function dead(name: string, overrides: Partial<MemberView> = {}): MemberView {
  return member(name, {
    reachable: false,
    errors: ["context deadline exceeded"],
    raftAppliedIndex: undefined,
    raftIndex: undefined,
    ...overrides,
  });
}

export function nodeFor(machineView: MachineView): NodeView {
  return {
    name: machineView.nodeName ?? machineView.name,
    providerID: machineView.providerID ?? "",
    ready: true,
    controlPlaneLabel: true,
    addresses: machineView.addresses,
  };
}

export interface SnapshotParts {
  machines?: MachineView[];
  members?: MemberView[];
  nodes?: NodeView[];
  controlPlane?: Partial<ControlPlaneView>;
  cluster?: Partial<ClusterView>;
  alarms?: { memberId: string; alarm: string }[];
  observed?: boolean;
  error?: string;
  now?: number;
}

export function snapshot(parts: SnapshotParts = {}): Snapshot {
  const machines = parts.machines ?? [];
  const observed = parts.observed ?? true;
  return {
    now: parts.now ?? NOW,
    controlPlane: controlPlane(parts.controlPlane),
    cluster: clusterView(parts.cluster),
    machines,
    nodes:
      parts.nodes ??
      machines.filter((candidate) => candidate.nodeName !== undefined && candidate.deleting === undefined).map(nodeFor),
    etcd: {
      observed,
      ...(parts.error !== undefined ? { error: parts.error } : {}),
      members: observed ? (parts.members ?? []) : [],
      alarms: parts.alarms ?? [],
    },
  };
}

const DOMAINS = ["fd-a", "fd-b", "fd-c"];

/** n joined Machines m-1..m-n spread over the failure domains, each with a healthy voter; m-1 leads. */
export function healthyMachines(
  n: number,
  prefix = "m",
  overrides: Partial<MachineView> = {},
): { machines: MachineView[]; members: MemberView[] } {
  const machines: MachineView[] = [];
  const members: MemberView[] = [];
  for (let i = 1; i <= n; i++) {
    const name = `${prefix}-${i}`;
    machines.push(
      machine(name, {
        failureDomain: DOMAINS[(i - 1) % DOMAINS.length],
        created: NOW - (100 - i) * MINUTE,
        ...overrides,
      }),
    );
    members.push(member(name, { leader: i === 1 && prefix === "m" }));
  }
  return { machines, members };
}

export function withLeader(members: MemberView[], name: string): MemberView[] {
  return members.map((candidate) => ({ ...candidate, leader: candidate.name === name }));
}

// ---------------------------------------------------------------------------------------------------------------
// An idealised world: every action succeeds at once and new Machines join healthy at the next step.

let created = 0;

/**
 * A Wait that only lets time pass (etcd's removal window: seconds at most), as opposed to waiting on something the
 * idealised world never does by itself. Walks step over it with applyIdeal, which moves the clock by its recheck.
 */
export function passesTime(action: Action): boolean {
  return action.kind === "Wait" && action.recheckAfterMs <= 5 * SECOND;
}

/** Applies `action`; the clock moves 10 s per action, or by a Wait's recheck. */
export function applyIdeal(current: Snapshot, action: Action): Snapshot {
  const next: Snapshot = structuredClone(current);
  next.now += action.kind === "Wait" ? action.recheckAfterMs : 10 * SECOND;
  const findMachine = (name: string) => next.machines.find((candidate) => candidate.name === name);
  switch (action.kind) {
    case "CreateMachine": {
      const name = `new-${++created}`;
      const made = machine(name, {
        created: next.now,
        failureDomain: action.failureDomain,
        version: next.controlPlane.version,
        templateHash: next.controlPlane.templateHash,
        ...(action.remediationFor ? { remediationFor: action.remediationFor } : {}),
      });
      next.machines.push(made);
      next.nodes.push(nodeFor(made));
      const leader = next.etcd.members.find((candidate) => candidate.leader);
      next.etcd.members.push(
        member(name, { leader: !leader, firstObserved: next.now, startedObserved: next.now, lastProgress: next.now }),
      );
      next.etcd.observed = true;
      delete next.etcd.error;
      break;
    }
    case "PromoteLearner":
      for (const candidate of next.etcd.members) if (candidate.id === action.memberId) candidate.learner = false;
      break;
    case "ForwardLeadership":
      for (const candidate of next.etcd.members) candidate.leader = candidate.id === action.toMemberId;
      break;
    case "RemoveMember":
    case "RemoveGhost": {
      const removed = next.etcd.members.find((candidate) => candidate.id === action.memberId);
      next.etcd.members = next.etcd.members.filter((candidate) => candidate.id !== action.memberId);
      if (removed?.leader && next.etcd.members.length > 0) next.etcd.members[0].leader = true;
      break;
    }
    case "DeleteMachine":
    case "Remediate": {
      const target = findMachine(action.machine);
      if (target) {
        if (target.hasPreTerminateHook) target.deleting = next.now;
        else next.machines = next.machines.filter((candidate) => candidate !== target);
      }
      if (action.kind === "Remediate") next.controlPlane.remediation.last = action.remediation;
      break;
    }
    case "ReleaseHook": {
      // CAPI deletes the infrastructure; the etcd process on it dies with it.
      const target = findMachine(action.machine);
      next.machines = next.machines.filter((candidate) => candidate.name !== action.machine);
      next.nodes = next.nodes.filter((candidate) => candidate.name !== target?.nodeName);
      if (next.machines.length === 0) {
        next.etcd = { observed: false, error: "no control-plane Machine left", members: [], alarms: [] };
      }
      break;
    }
    case "AddHook": {
      const target = findMachine(action.machine);
      if (target) target.hasPreTerminateHook = true;
      break;
    }
    case "Wait":
      break;
  }
  return next;
}
