// Everything that goes wrong in a schedule, while faults are on: members that die and recover, Machines that die,
// ghost members, users deleting Machines, spec changes mid-flight, pauses, boot failures. Faults that are for
// good (a dead Machine, a dead ghost) are only injected while the cluster could still regain quorum once the
// temporary ones end, so a world whose faults stopped can always be finished by a correct controller.
import { minorOf } from "../../src/api/version.ts";
import { survivesLosing } from "./evolve.ts";
import type { Prng } from "./prng.ts";
import {
  cameUp,
  electLeader,
  healthy,
  healthyVoterCount,
  kubeletDown,
  liveMachines,
  markDeleting,
  addedByProposal,
  newMemberId,
  nodeLabelled,
  quorumSize,
  voters,
  type BootFault,
  type World,
} from "./world.ts";

export interface FaultProfile {
  /** Probability that a step brings one fault. */
  rate: number;
  /** Probability that a reconcile crashes somewhere between its API calls. */
  crashRate: number;
  /** Probability that a crash also loses what the controller kept in status (grace-period clocks). */
  memoryLossRate: number;
  /** Probability that a Machine created while faults are on fails to boot in some way. */
  bootFaultRate: number;
  /** Probability that a reconcile sees the Machines as the previous one did (informer lag). */
  staleCacheRate: number;
}

type FaultKind =
  | "member-outage"
  | "machine-dies"
  | "ghost-stray"
  | "ghost-vanish"
  | "stale-same-name"
  | "user-deletes-machine"
  | "user-marks-machine"
  | "version-bump"
  | "template-change"
  | "metadata-change"
  | "replicas-change"
  | "strategy-change"
  | "pause"
  | "alarm"
  | "workload-unreadable"
  | "status-wiped";

const FAULT_WEIGHTS: readonly (readonly [FaultKind, number])[] = [
  ["member-outage", 3],
  ["machine-dies", 1.5],
  ["ghost-stray", 1],
  ["ghost-vanish", 1],
  ["stale-same-name", 1],
  ["user-deletes-machine", 1],
  ["user-marks-machine", 0.5],
  ["version-bump", 1],
  ["template-change", 0.5],
  ["metadata-change", 0.5],
  ["replicas-change", 1.5],
  ["strategy-change", 0.5],
  ["pause", 0.5],
  ["alarm", 0.5],
  ["workload-unreadable", 0.7],
  ["status-wiped", 0.3],
];

/** Injects at most one fault this step; returns what happened, for the trace. */
export function injectFault(world: World, rng: Prng, profile: FaultProfile): string | undefined {
  if (!rng.chance(profile.rate)) return undefined;
  const kind = rng.weighted(FAULT_WEIGHTS);
  const outcome = FAULTS[kind](world, rng);
  electLeader(world);
  return outcome;
}

const FAULTS: Record<FaultKind, (world: World, rng: Prng) => string | undefined> = {
  "member-outage": (world, rng) => {
    const candidates = world.members.filter((member) => member.up);
    if (candidates.length === 0) return undefined;
    const member = rng.pick(candidates);
    member.up = false;
    member.downUntil = world.step + rng.int(1, 8);
    return `member ${label(member.name, member.id)} down until step ${member.downUntil}`;
  },
  "machine-dies": (world, rng) => {
    const candidates = liveMachines(world).filter((machine) => machine.phase === "running");
    if (candidates.length === 0) return undefined;
    const machine = rng.pick(candidates);
    const member =
      machine.memberId === undefined ? undefined : world.members.find((candidate) => candidate.id === machine.memberId);
    const losesVoter = member !== undefined && !member.learner && !member.lostForGood;
    if (!survivesLosing(world, losesVoter ? 1 : 0)) return undefined;
    machine.phase = "broken";
    machine.failed = rng.chance(0.4);
    if (member) {
      member.up = false;
      member.downUntil = undefined;
      member.lostForGood = true;
    }
    return `machine ${machine.name} dies${machine.failed ? " (CAPI reports it failed)" : ""}`;
  },
  "ghost-stray": (world, rng) => {
    // member add is a raft proposal: only possible while there is a leader.
    if (world.leaderId === undefined) return undefined;
    const alive = rng.chance(0.4);
    if (!survivesLosing(world, 0, 1)) return undefined;
    const n = world.nextStray++;
    const started = alive || rng.chance(0.5);
    world.members.push({
      id: newMemberId(world),
      name: started ? `stray-${n}` : "",
      peerHost: `10.99.0.${n + 2}`,
      learner: false,
      started,
      up: alive,
      lostForGood: !alive,
      appliedIndex: alive ? world.leaderIndex : 0,
      catchUpRate: 1,
      activeSince: world.now,
      addedAt: addedByProposal(world),
    });
    return `ghost member stray-${n} ${alive ? "(alive)" : started ? "(dead)" : "(added, never started)"}`;
  },
  // A member left behind under a live Machine's host name at an address no Machine has: a host re-joined after a
  // reset without its old member being removed, or a forgotten VM with the same name. Reachable or not.
  "stale-same-name": (world, rng) => {
    if (world.leaderId === undefined || !survivesLosing(world, 0, 1)) return undefined;
    const named = liveMachines(world).filter((machine) =>
      world.members.some((member) => member.id === machine.memberId && member.name !== ""),
    );
    if (named.length === 0) return undefined;
    const machine = rng.pick(named);
    const alive = rng.chance(0.4);
    const n = world.nextStray++;
    const peerHost = `10.98.0.${n + 2}`;
    world.members.push({
      id: newMemberId(world),
      name: machine.hostName,
      peerHost,
      learner: false,
      started: true,
      up: alive,
      lostForGood: !alive,
      appliedIndex: alive ? world.leaderIndex : 0,
      catchUpRate: 1,
      activeSince: world.now,
      addedAt: addedByProposal(world),
    });
    return `stale member named ${machine.hostName} (the name of machine ${machine.name}) at ${peerHost}, ${alive ? "alive" : "dead"}`;
  },
  "ghost-vanish": (world, rng) => {
    const candidates = liveMachines(world).filter((machine) => machine.memberId !== undefined);
    if (candidates.length === 0) return undefined;
    const machine = rng.pick(candidates);
    const member = world.members.find((candidate) => candidate.id === machine.memberId);
    if (member && !member.learner && !member.lostForGood && !survivesLosing(world, 1)) return undefined;
    world.machines = world.machines.filter((candidate) => candidate !== machine);
    if (member) {
      member.up = false;
      member.downUntil = undefined;
      member.lostForGood = true;
    }
    if (machine.nodeRegistered && machine.address)
      world.staleNodes.push({
        name: machine.hostName,
        address: machine.address,
        notReadySince: world.now,
        labelled: nodeLabelled(world, machine),
      });
    return `machine ${machine.name} vanished out of band; its member stays`;
  },
  "user-deletes-machine": (world, rng) => {
    const candidates = liveMachines(world);
    if (candidates.length === 0) return undefined;
    const machine = rng.pick(candidates);
    // Without Quorum's hook CAPI deletes the infrastructure at once: for its member that is a loss for good.
    const member =
      machine.memberId === undefined ? undefined : world.members.find((candidate) => candidate.id === machine.memberId);
    if (!machine.hook && member && !member.learner && !member.lostForGood && !survivesLosing(world, 1))
      return undefined;
    markDeleting(world, machine);
    return `user deletes machine ${machine.name}`;
  },
  "user-marks-machine": (world, rng) => {
    const candidates = liveMachines(world).filter((machine) => !machine.markedForDeletion);
    if (candidates.length === 0) return undefined;
    const machine = rng.pick(candidates);
    machine.markedForDeletion = true;
    return `user marks machine ${machine.name} for deletion`;
  },
  "version-bump": (world, rng) => {
    const match = /^v(\d+)\.(\d+)\.(\d+)$/.exec(world.spec.version);
    if (!match) return undefined;
    // kubeadm worlds also take patch releases: kubeadm-config and kube-proxy follow those too (no RBAC changes).
    // Drawn only there, so that a generic world's fault stream stays as it was.
    const patch = world.kubeadm !== undefined && rng.chance(0.5);
    const next = patch ? `v${match[1]}.${match[2]}.${Number(match[3]) + 1}` : `v${match[1]}.${Number(match[2]) + 1}.0`;
    // The CRD refuses a minor more than one above status.version, the oldest Machine's (a second bump mid-rollout),
    // as the real API server does; a status lost to clusterctl move leaves nothing to compare with.
    const oldest = world.status?.version === undefined ? undefined : minorOf(world.status.version);
    const nextMinor = minorOf(next);
    if (oldest !== undefined && nextMinor !== undefined && nextMinor > oldest + 1)
      return `spec.version -> ${next} refused by the API server: status.version is ${world.status?.version}`;
    world.spec.version = next;
    world.spec.generation++;
    return `spec.version -> ${world.spec.version}`;
  },
  "template-change": (world, rng) => {
    world.spec.templateHash = `tpl-${world.spec.generation + 1}`;
    world.spec.generation++;
    // In kubeadm worlds a new template sometimes gives kube-apiserver a bad extra arg (drawn only there, so that a
    // generic world's fault stream stays as it was); a later template fixes it, at the latest when faults stop.
    if (world.kubeadm !== undefined && rng.chance(0.6)) {
      world.kubeadm.brokenTemplates.add(world.spec.templateHash);
      return `spec.machineTemplate changed (hash ${world.spec.templateHash}) to one whose kube-apiserver cannot start`;
    }
    return `spec.machineTemplate changed (hash ${world.spec.templateHash})`;
  },
  "status-wiped": (world) => {
    // clusterctl move recreates the QuorumControlPlane on the target without its status; annotations travel.
    world.status = undefined;
    return "status wiped (clusterctl move recreated the QuorumControlPlane without it)";
  },
  "metadata-change": (world, rng) => {
    // A new value for one label, or a label removed: either reaches the Machines in place.
    world.spec.machineLabels = rng.chance(0.3) ? {} : { tier: `t${world.spec.generation + 1}` };
    world.spec.generation++;
    return `spec.machineTemplate.metadata.labels -> ${JSON.stringify(world.spec.machineLabels)}`;
  },
  "replicas-change": (world, rng) => {
    const replicas = rng.pick([1, 3, 5].filter((count) => count !== world.spec.replicas));
    world.spec.replicas = replicas;
    // The CRD rejects maxSurge 0 with one replica: a user scaling to 1 changes both.
    if (replicas === 1) world.spec.maxSurge = 1;
    world.spec.generation++;
    return `spec.replicas -> ${replicas}`;
  },
  "strategy-change": (world, rng) => {
    if (world.spec.replicas >= 3 && rng.chance(0.5)) {
      world.spec.maxSurge = world.spec.maxSurge === 1 ? 0 : 1;
    } else {
      world.spec.memberRemoval = world.spec.memberRemoval === "BeforeDelete" ? "AfterDrain" : "BeforeDelete";
    }
    world.spec.generation++;
    return `spec.rollout.strategy -> maxSurge ${world.spec.maxSurge}, memberRemoval ${world.spec.memberRemoval}`;
  },
  alarm: (world, rng) => {
    const candidates = world.members.filter(
      (member) => member.up && !world.alarms.some((alarm) => alarm.memberId === member.id),
    );
    if (candidates.length === 0) return undefined;
    const member = rng.pick(candidates);
    world.alarms.push({ memberId: member.id, alarm: "NOSPACE" });
    return `alarm NOSPACE raised on ${member.name || member.id}`;
  },
  // A user-managed kubeconfig Secret full of garbage, or the control-plane endpoint down: etcd still answers, the
  // workload API (Nodes) does not. Quorum must not remove a healthy voter while it cannot see the others serve.
  "workload-unreadable": (world, rng) => {
    world.workloadUnreadableUntil = Math.min(world.step + rng.int(1, 15), world.faultsUntil);
    return `workload API unreadable until step ${world.workloadUnreadableUntil}`;
  },
  pause: (world, rng) => {
    if (rng.chance(0.5)) {
      world.spec.paused = !world.spec.paused;
      return `QuorumControlPlane ${world.spec.paused ? "paused" : "unpaused"}`;
    }
    world.spec.clusterPaused = !world.spec.clusterPaused;
    return `Cluster ${world.spec.clusterPaused ? "paused" : "unpaused"}`;
  },
};

/** The boot fault of a Machine created now, if any (never for the Machine that initialises the cluster). */
export function bootFaultFor(world: World, rng: Prng, profile: FaultProfile): BootFault | undefined {
  if (world.step >= world.faultsUntil || !world.initialized || !rng.chance(profile.bootFaultRate)) return undefined;
  const kinds: BootFault[] = ["infrastructure", "bootstrap", "after-member-add"];
  if (world.joinMode !== "voter") kinds.push("stalled-learner");
  return rng.pick(kinds);
}

/**
 * A kubelet stops posting status (drawn from a stream of its own, so the other faults keep their draws): its Node
 * goes NotReady while etcd and the static pods run on. For a while (a crash loop, a cut-off host) or, 30 % of the
 * time, for good (a broken kubelet config), which only a MachineHealthCheck or the operator gets past.
 */
export function kubeletOutage(world: World, rng: Prng): string | undefined {
  const candidates = liveMachines(world).filter(
    (machine) => machine.phase === "running" && machine.nodeRegistered && !kubeletDown(world, machine),
  );
  if (candidates.length === 0) return undefined;
  const machine = rng.pick(candidates);
  if (rng.chance(0.3)) {
    machine.kubeletLost = true;
    return `the kubelet of machine ${machine.name} stops for good: its Node is NotReady, its etcd member runs on`;
  }
  machine.kubeletDownUntil = world.step + rng.int(1, 10);
  return `the kubelet of machine ${machine.name} stops until step ${machine.kubeletDownUntil}: its Node is NotReady`;
}

/** Faults stop: temporary outages end and pauses are lifted; what broke for good stays broken for the controller to fix. */
export function endFaults(world: World): string {
  for (const machine of world.machines) machine.kubeletDownUntil = undefined;
  for (const member of world.members) {
    if (member.downUntil !== undefined) {
      member.downUntil = undefined;
      cameUp(world, member);
    }
  }
  world.spec.paused = false;
  world.spec.clusterPaused = false;
  world.alarms = [];
  world.workloadUnreadableUntil = undefined;
  electLeader(world);
  if (world.kubeadm?.brokenTemplates.has(world.spec.templateHash)) {
    world.spec.templateHash = `tpl-${world.spec.generation + 1}`;
    world.spec.generation++;
    return `faults stop: temporary outages end, pauses lifted, alarms cleared; the user fixes the template (hash ${world.spec.templateHash})`;
  }
  return "faults stop: temporary outages end, pauses lifted, alarms cleared";
}

function label(name: string, id: string): string {
  return name === "" ? `(unstarted ${id})` : name;
}

/**
 * The racingOutage trait: right after the controller planned a removal, another up voter goes down before the
 * removal is sent, when the cluster keeps quorum without it. Returns what happened, for the trace.
 */
export function racingOutage(world: World, rng: Prng, removing: string): string | undefined {
  if (!world.traits.racingOutage || world.step >= world.faultsUntil || !rng.chance(0.5)) return undefined;
  const candidates = world.members.filter(
    (member) => member.up && !member.learner && member.id !== removing && healthy(world, member),
  );
  // Only outages the cluster survives: quorum lost by the fault itself is not the controller's doing.
  if (candidates.length === 0 || healthyVoterCount(world) - 1 < quorumSize(voters(world).length)) return undefined;
  const member = rng.pick(candidates);
  member.up = false;
  member.downUntil = world.step + rng.int(1, 8);
  electLeader(world);
  return `member ${label(member.name, member.id)} went down after the plan, until step ${member.downUntil}`;
}
