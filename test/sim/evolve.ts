// One step of the world without the controller: CAPI provisions and deletes infrastructure, kubeadm inits or
// joins, etcd processes start, catch up, elect a leader; kubelets register Nodes; the MachineHealthCheck marks
// broken Machines. Faults are injected separately (faults.ts); this file is the "healthy physics".
import { configVersion, uploadKubeadmObjects } from "./kubeadm.ts";
import {
  cameUp,
  electLeader,
  findMember,
  foreignHookHeld,
  addedByProposal,
  newMemberId,
  nodeReady,
  NETWORK_START_MAX_STEPS,
  HALF_JOIN_RATE,
  REFUSED_NODE_RATE,
  MAX_HOST_NAME_LENGTH,
  quorumSize,
  STEP_MS,
  voters,
  type SimMachine,
  type World,
} from "./world.ts";

/** A Machine with no Node this long after creation is marked by the MachineHealthCheck (nodeStartupTimeout). */
export const NODE_STARTUP_STEPS = 24;
/** A Node not ready (or a Machine failed) this long is marked by the MachineHealthCheck. */
export const UNHEALTHY_STEPS = 3;
/** etcd refuses to promote a learner whose log is behind 90% of the leader's. */
export const LEARNER_READY_RATIO = 0.9;

export function evolve(world: World): void {
  world.step++;
  world.now += STEP_MS;
  endOutages(world);
  deleteReleasedInfrastructure(world);
  for (const machine of world.machines) advanceMachine(world, machine);
  electLeader(world);
  uploadKubeadmConfig(world);
  advanceRaft(world);
  selfPromoteLearners(world);
  runMachineHealthCheck(world);
}

function endOutages(world: World): void {
  for (const member of world.members) {
    if (member.downUntil !== undefined && world.step >= member.downUntil) {
      member.downUntil = undefined;
      cameUp(world, member);
    }
  }
}

/** CAPI deletes the infrastructure (and the Node) of a deleting Machine once no pre-terminate hook holds it. */
function deleteReleasedInfrastructure(world: World): void {
  const released = (candidate: SimMachine) =>
    candidate.deleting !== undefined && !candidate.hook && !foreignHookHeld(world, candidate);
  for (const machine of world.machines.filter(released)) {
    const member = machine.memberId === undefined ? undefined : findMember(world, machine.memberId);
    if (member) {
      // The etcd process goes with the host, but its membership stays: etcd only forgets members it is told to remove.
      member.up = false;
      member.downUntil = undefined;
      member.lostForGood = true;
    }
    world.machines = world.machines.filter((candidate) => candidate !== machine);
  }
}

function advanceMachine(world: World, machine: SimMachine): void {
  // The bootstrap provider renders the data secret within a step of the Machine's creation.
  if (!machine.bootstrapReady && machine.phase !== "broken") machine.bootstrapReady = true;
  if (world.step < machine.phaseUntil) return;
  switch (machine.phase) {
    case "provisioning":
      if (machine.bootFault === "infrastructure") {
        machine.phase = "broken";
        machine.failed = true;
        return;
      }
      machine.infrastructureReady = true;
      machine.phase = "booting";
      machine.phaseUntil = world.step + world.rng.int(1, 3);
      return;
    case "booting":
      kubeadm(world, machine);
      return;
    case "member-added":
      startEtcd(world, machine);
      return;
    case "running":
      runningMachine(world, machine);
      return;
    case "broken":
      return;
  }
}

/** kubeadm init on the first Machine of an uninitialised cluster, kubeadm join (member add first) on the others. */
function kubeadm(world: World, machine: SimMachine): void {
  if (machine.bootFault === "bootstrap") {
    machine.phase = "broken";
    return;
  }
  const address = machine.address ?? "";
  if (!world.initialized) {
    const id = newMemberId(world);
    world.members.push({
      id,
      name: machine.hostName,
      peerHost: address,
      learner: false,
      started: true,
      up: true,
      lostForGood: false,
      appliedIndex: world.leaderIndex,
      catchUpRate: 1,
      machine: machine.name,
      activeSince: world.now,
    });
    world.leaderId = id;
    world.initialized = true;
    machine.memberId = id;
    if (world.kubeadm) {
      // kubeadm init renders the static pods at its own version and uploads its config once its API server serves.
      machine.staticPodVersion = machine.version;
      world.kubeadm.uploadAt = world.step + world.rng.int(1, 2);
      world.kubeadm.initVersion = machine.version;
    }
    machine.phase = "running";
    machine.nodeAt = world.step + world.rng.int(1, 2);
    return;
  }
  // member add is a raft proposal: without a leader kubeadm retries.
  if (world.leaderId === undefined) {
    machine.phaseUntil = world.step + 1;
    return;
  }
  if (world.kubeadm) {
    // kubeadm join discovers the cluster's ClusterConfiguration in kubeadm-config and renders the static pods from
    // it, not from the Machine's own version; without the document its discovery retries.
    const version = configVersion(world);
    if (version === undefined) {
      machine.phaseUntil = world.step + 1;
      return;
    }
    machine.staticPodVersion = version;
  }
  const learner = world.joinMode !== "voter";
  const id = newMemberId(world);
  world.members.push({
    id,
    name: "",
    peerHost: address,
    learner,
    started: false,
    up: false,
    lostForGood: false,
    appliedIndex: 0,
    catchUpRate: 0,
    machine: machine.name,
    activeSince: world.now,
    addedAt: addedByProposal(world),
  });
  machine.memberId = id;
  machine.phase = "member-added";
  machine.phaseUntil = world.step + world.rng.int(1, 2);
  if (machine.bootFault === "after-member-add") {
    const member = findMember(world, id)!;
    // An unstarted voter that never starts is a loss for good; allow it only while the cluster could still heal.
    if (member.learner || survivesLosing(world, 1)) {
      member.lostForGood = true;
      machine.phase = "broken";
    }
  }
}

/** kubeadm init's upload-config phase: it needs the new API server, which needs an etcd leader. */
function uploadKubeadmConfig(world: World): void {
  const objects = world.kubeadm;
  if (objects?.uploadAt === undefined || world.step < objects.uploadAt || world.leaderId === undefined) return;
  uploadKubeadmObjects(world, objects.initVersion ?? world.spec.version);
}

function startEtcd(world: World, machine: SimMachine): void {
  const member = machine.memberId === undefined ? undefined : findMember(world, machine.memberId);
  if (!member) {
    // Its member was removed before it started: etcd refuses to start with an ID the cluster no longer knows.
    machine.phase = "broken";
    return;
  }
  member.started = true;
  member.name = machine.hostName;
  cameUp(world, member);
  member.appliedIndex = member.learner ? 0 : world.leaderIndex;
  member.catchUpRate = machine.bootFault === "stalled-learner" && member.learner ? 0 : 0.2 + world.rng.next() * 0.4;
  machine.phase = "running";
  machine.nodeAt = world.step + world.rng.int(1, 3);
}

function runningMachine(world: World, machine: SimMachine): void {
  const member = machine.memberId === undefined ? undefined : findMember(world, machine.memberId);
  if (!member) {
    // Removed from the cluster, its etcd shut itself down; the apiserver on this host is useless from now on.
    machine.phase = "broken";
    return;
  }
  // The kubelet registers through the workload apiserver, which needs etcd quorum; kubeadm points a control-plane
  // node's kubelet at its own API server, which a broken template keeps from starting. A host name longer than a label
  // value (kubernetes.io/hostname) is refused for good, and so, in a refusedNodes world while faults last, is a share
  // of the registrations (an admission policy, credentials the API server does not take).
  if (
    !machine.nodeRegistered &&
    machine.nodeRefused !== true &&
    !apiServerBroken(world, machine) &&
    machine.hostName.length <= MAX_HOST_NAME_LENGTH &&
    machine.nodeAt !== undefined &&
    world.step >= machine.nodeAt &&
    world.leaderId !== undefined
  ) {
    if (world.traits.refusedNodes && world.step < world.faultsUntil && world.registerRng.chance(REFUSED_NODE_RATE)) {
      machine.nodeRefused = true;
      return;
    }
    machine.nodeRegistered = true;
    machine.networkReadyAt = world.step + world.networkRng.int(1, NETWORK_START_MAX_STEPS);
    // kubeadm join labels the Node last (mark-control-plane); in a halfJoins world, while faults last, some stop first.
    if (world.traits.kubeadm) {
      if (world.traits.halfJoins && world.step < world.faultsUntil && world.joinRng.chance(HALF_JOIN_RATE))
        machine.joinStopped = true;
      else machine.labelledAt = world.step + world.joinRng.int(0, 2);
    }
  }
}

/** The Machine joined with a template whose kube-apiserver cannot start (KubeadmObjects.brokenTemplates). */
export function apiServerBroken(world: World, machine: SimMachine): boolean {
  return world.kubeadm?.brokenTemplates.has(machine.templateHash) === true;
}

function advanceRaft(world: World): void {
  if (world.leaderId === undefined) return;
  world.leaderIndex += world.rng.int(3, 30);
  for (const member of world.members) {
    if (!member.up) continue;
    if (!member.learner) member.appliedIndex = world.leaderIndex;
    else
      member.appliedIndex = Math.min(
        world.leaderIndex,
        member.appliedIndex + Math.ceil(member.catchUpRate * world.leaderIndex),
      );
  }
}

export function learnerInSync(world: World, appliedIndex: number): boolean {
  return appliedIndex >= LEARNER_READY_RATIO * world.leaderIndex;
}

/** kubeadm's EtcdLearnerMode promotes its own learner once etcd accepts it, retrying now and then. */
function selfPromoteLearners(world: World): void {
  if (world.joinMode !== "learner-self-promote" || world.leaderId === undefined) return;
  for (const member of world.members) {
    if (
      member.learner &&
      member.up &&
      member.machine !== undefined &&
      learnerInSync(world, member.appliedIndex) &&
      world.rng.chance(0.5)
    ) {
      member.learner = false;
    }
  }
}

/**
 * The MachineHealthCheck: a Machine that failed, whose Node stays not ready (unless the world's check does not watch
 * Node readiness), or that never got a Node (unless it has no node startup timeout), is marked for its owner's
 * remediation. It only judges while the workload cluster answers (it reads Nodes from there).
 */
function runMachineHealthCheck(world: World): void {
  if (world.leaderId === undefined) return;
  for (const machine of world.machines) {
    if (machine.deleting !== undefined) continue;
    const unhealthy =
      machine.failed ||
      (machine.nodeRegistered && !nodeReady(world, machine) && !world.traits.noNodeReadyCheck) ||
      (!machine.nodeRegistered &&
        !world.traits.noStartupTimeout &&
        world.step - machine.createdStep > NODE_STARTUP_STEPS);
    if (!unhealthy) {
      // CAPI's MachineHealthCheck sets HealthCheckSucceeded True again on a Machine that recovered before its owner
      // acted, and leaves OwnerRemediated=False for the owner to take off (ownerRemediatedPending).
      machine.unhealthySince = undefined;
      machine.remediationRequested = false;
      continue;
    }
    machine.unhealthySince ??= world.step;
    if (world.step - machine.unhealthySince >= UNHEALTHY_STEPS) {
      machine.remediationRequested = true;
      machine.ownerRemediatedPending = true;
    }
  }
}

/**
 * Whether the cluster could still regain a healthy quorum once every temporary outage ends, if `extra` more
 * voters were lost for good. The fault injector only breaks things for good while this holds, so that a world
 * whose faults stopped can always be brought back by a correct controller. Only members on Machines count as
 * recoverable: a quorum of stray members is one the controller cannot even reach.
 */
export function survivesLosing(world: World, extra: number, addedVoters = 0): boolean {
  const voterList = voters(world);
  const recoverable = voterList.filter((member) => !member.lostForGood && member.machine !== undefined).length;
  return recoverable - extra >= quorumSize(voterList.length + addedVoters);
}
