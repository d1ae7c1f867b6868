// A schedule's starting point, all drawn from its seed: the spec, how kubeadm joins, how Nodes are named, the
// failure domains, whether the control plane starts converged or from nothing, and how hard faults hit.
import {
  CERTIFICATES_EXPIRY_ANNOTATION,
  FINALIZER,
  MIN_CERTIFICATES_EXPIRY_DAYS,
  TEMPLATE_METADATA_ANNOTATION,
} from "../../src/api/constants.ts";
import type { EtcdMemberStatus } from "../../src/api/types.ts";
import { nextMachineName } from "../../src/controller/machine-factory.ts";
import { templateKeysRecord } from "../../src/core/in-place.ts";
import type { FaultProfile } from "./faults.ts";
import { KUBEADM_START_VERSION, uploadKubeadmObjects } from "./kubeadm.ts";
import { Prng } from "./prng.ts";
import {
  CONTROL_PLANE,
  LONG_CONTROL_PLANE,
  DAY_MS,
  drawLags,
  hostNameFor,
  newAddress,
  newMemberId,
  STEP_MS,
  type JoinMode,
  type NodeNaming,
  type World,
} from "./world.ts";

/** How often a schedule has each trait of WorldTraits. */
export const TRAIT_WEIGHTS = {
  nodeRefLag: 0.25,
  addressLag: 0.25,
  secondOwner: 0.15,
  racingOutage: 0.25,
  kubeadm: 0.3,
  noStartupTimeout: 0.3,
  certificateExpiry: 0.25,
  noNodeReadyCheck: 0.3,
  halfJoins: 0.5,
  longName: 0.3,
  refusedNodes: 0.3,
  foreignHooks: 0.3,
} as const;

/** Mixed into the schedule's seed for the longName trait's own stream. */
const LONG_NAME_STREAM = 0x6c6f6e67;

/**
 * spec.rollout.before.certificatesExpiryDays in a certificateExpiry world, by weight: from CAPI's minimum
 * (MIN_CERTIFICATES_EXPIRY_DAYS) to a notice longer than kubeadm's one-year certificates, where the planner must not
 * replace Machines forever (a replacement's certificates would be within the notice at once).
 */
const CERTIFICATES_EXPIRY_DAYS = [
  [MIN_CERTIFICATES_EXPIRY_DAYS, 2],
  [30, 3],
  [90, 2],
  [400, 1],
] as const;
/** Each starting Machine's certificates fall within the notice this many steps after faults stop, at the latest. */
const CERTIFICATES_DUE_AFTER_FAULTS = 60;
/** In a kubeadm world, the share of starting Machines whose expiry an earlier controller or a user recorded on them. */
const CERTIFICATES_ANNOTATED = 0.3;

/** Faults stop by this step at the latest. */
export const MAX_FAULT_STEPS = 40;
const EPOCH = Date.UTC(2026, 0, 1);

export interface Scenario {
  world: World;
  profile: FaultProfile;
  /**
   * Separate streams (world faults; controller crashes and cache lag; random planner variants; the racing outage;
   * kubelet outages), so that drawing more for one concern does not change another's draws.
   */
  rngs: { faults: Prng; controller: Prng; planner: Prng; race: Prng; kubelet: Prng };
}

export function createScenario(seed: number): Scenario {
  const rng = new Prng(seed);
  const setup = rng.fork();
  const replicas = setup.weighted([
    [1, 2],
    [3, 5],
    [5, 3],
  ] as const);
  const maxSurge: 0 | 1 = replicas >= 3 && setup.chance(0.3) ? 0 : 1;
  const world: World = {
    step: 0,
    now: EPOCH,
    traits: {
      nodeRefLag: false,
      addressLag: false,
      secondOwner: false,
      racingOutage: false,
      kubeadm: false,
      noStartupTimeout: false,
      certificateExpiry: false,
      noNodeReadyCheck: false,
      halfJoins: false,
      longName: false,
      refusedNodes: false,
      foreignHooks: false,
    },
    spec: {
      replicas,
      version: "v1.30.2",
      templateHash: "tpl-0",
      machineLabels: { tier: "gold" },
      maxSurge,
      memberRemoval: setup.chance(0.7) ? "BeforeDelete" : "AfterDrain",
      paused: false,
      clusterPaused: false,
      generation: 1,
      removeMemberIds: [],
    },
    joinMode: setup.weighted([
      ["learner", 4],
      ["learner-self-promote", 3],
      ["voter", 3],
    ] as const) as JoinMode,
    // kubeadm names the member after the node name, which on most clouds is the host name (ip-10-0-0-9).
    nodeNaming: (setup.chance(0.3) ? "machine" : "hostname") as NodeNaming,
    controlPlaneName: CONTROL_PLANE,
    failureDomains: setup.chance(0.3) ? [] : ["fd-a", "fd-b", "fd-c"],
    machines: [],
    members: [],
    staleNodes: [],
    alarms: [],
    leaderIndex: 1000 + setup.int(0, 100_000),
    initialized: false,
    finalizers: [FINALIZER],
    clones: new Set(),
    templateOwners: new Map(),
    faultsUntil: setup.int(0, MAX_FAULT_STEPS),
    nextAddress: 0,
    nextStray: 0,
    rng: rng.fork(),
    // Replaced below by a stream forked after every other one (forking here would shift the streams forked after).
    networkRng: new Prng(0),
    joinRng: new Prng(0),
    registerRng: new Prng(0),
    hookRng: new Prng(0),
  };
  // Drawn here, the world built after the traits (a kubeadm world starts at another version).
  const startsConverged = setup.chance(0.75);
  const profile: FaultProfile = {
    rate: 0.05 + setup.next() * 0.35,
    crashRate: 0.05 + setup.next() * 0.35,
    memoryLossRate: 0.3,
    bootFaultRate: 0.1 + setup.next() * 0.3,
    staleCacheRate: 0.2,
  };
  const rngs = { faults: rng.fork(), controller: rng.fork(), planner: rng.fork() };
  // Drawn from a stream of their own, so that adding a trait leaves every other draw of the schedule as it was.
  const traits = rng.fork();
  world.traits = {
    nodeRefLag: traits.chance(TRAIT_WEIGHTS.nodeRefLag),
    addressLag: traits.chance(TRAIT_WEIGHTS.addressLag),
    secondOwner: traits.chance(TRAIT_WEIGHTS.secondOwner),
    racingOutage: traits.chance(TRAIT_WEIGHTS.racingOutage),
    kubeadm: false,
    noStartupTimeout: false,
    certificateExpiry: false,
    noNodeReadyCheck: false,
    halfJoins: false,
    longName: false,
    refusedNodes: false,
    foreignHooks: false,
  };
  // From a stream of its own, seeded from the schedule's, so that every other draw of the schedule stays as it was.
  world.traits.longName = new Prng(seed ^ LONG_NAME_STREAM).chance(TRAIT_WEIGHTS.longName);
  if (world.traits.longName) world.controlPlaneName = LONG_CONTROL_PLANE;
  const race = traits.fork();
  // Drawn after the race stream's fork, so that a world without the trait keeps every draw it had before it existed.
  world.traits.kubeadm = traits.chance(TRAIT_WEIGHTS.kubeadm);
  world.traits.noStartupTimeout = traits.chance(TRAIT_WEIGHTS.noStartupTimeout);
  if (world.traits.kubeadm) {
    world.spec.version = KUBEADM_START_VERSION;
    world.kubeadm = { bindings: new Set(), brokenTemplates: new Set(), resourceVersion: 1 };
  }
  if (startsConverged) startConverged(world);
  // Drawn after the traits above, from the traits' stream, so that a world without the trait keeps every draw it had
  // before it existed.
  world.traits.certificateExpiry = traits.chance(TRAIT_WEIGHTS.certificateExpiry);
  if (world.traits.certificateExpiry) certificatesExpiring(world, traits);
  // Drawn after everything else from the traits' stream, for the same reason.
  world.traits.noNodeReadyCheck = traits.chance(TRAIT_WEIGHTS.noNodeReadyCheck);
  // The kubelet outages' stream, forked last for the same reason (faults.ts, kubeletOutage).
  const kubelet = traits.fork();
  // The network plugin's start after each registration, forked after the kubelet's for the same reason.
  world.networkRng = traits.fork();
  // kubeadm's mark-control-plane after each registration, and the trait of joins stopping before it: last, likewise.
  world.joinRng = traits.fork();
  world.traits.halfJoins = world.traits.kubeadm && traits.chance(TRAIT_WEIGHTS.halfJoins);
  // Refused registrations: after everything else from the traits' stream, for the same reason.
  world.registerRng = traits.fork();
  world.traits.refusedNodes = traits.chance(TRAIT_WEIGHTS.refusedNodes);
  // Another controller's pre-terminate hooks: last, likewise.
  world.hookRng = traits.fork();
  world.traits.foreignHooks = traits.chance(TRAIT_WEIGHTS.foreignHooks);
  if (world.traits.secondOwner) world.copy = { finalizers: [] };
  for (const machine of world.machines) drawLags(world, machine);
  return { world, profile, rngs: { ...rngs, race, kubelet } };
}

/** A healthy control plane at the spec: one running Machine, Node and voter per replica. */
function startConverged(world: World): void {
  const taken = new Set<string>();
  const remembered: EtcdMemberStatus[] = [];
  for (let index = 0; index < world.spec.replicas; index++) {
    const name = nextMachineName(world.controlPlaneName, world.spec.version, world.spec.templateHash, taken);
    taken.add(name);
    const address = newAddress(world);
    const id = newMemberId(world);
    const created = world.now - (world.spec.replicas - index) * 3600_000;
    world.machines.push({
      name,
      created,
      createdStep: Math.floor((created - world.now) / STEP_MS),
      version: world.spec.version,
      templateHash: world.spec.templateHash,
      // As this release makes Machines: the template's labels and the record of their keys. (A Machine of a release
      // that kept no record cannot tell a template label removed since from one a user added: unit-tested only.)
      labels: { ...world.spec.machineLabels },
      annotations: {
        [TEMPLATE_METADATA_ANNOTATION]: templateKeysRecord({ labels: world.spec.machineLabels, annotations: {} }),
      },
      ...(world.failureDomains.length > 0
        ? { failureDomain: world.failureDomains[index % world.failureDomains.length] }
        : {}),
      address,
      hostName: hostNameFor(world, name, address),
      phase: "running",
      phaseUntil: 0,
      infrastructureReady: true,
      bootstrapReady: true,
      hook: true,
      remediationRequested: false,
      failed: false,
      markedForDeletion: false,
      memberId: id,
      nodeRegistered: true,
      ...(world.kubeadm ? { staticPodVersion: world.spec.version, labelledAt: 0 } : {}),
    });
    world.members.push({
      id,
      name: hostNameFor(world, name, address),
      peerHost: address,
      learner: false,
      started: true,
      up: true,
      lostForGood: false,
      appliedIndex: world.leaderIndex,
      catchUpRate: 1,
      machine: name,
      activeSince: created,
    });
    const since = new Date(created).toISOString();
    remembered.push({
      id,
      name: hostNameFor(world, name, address),
      machine: name,
      learner: false,
      healthy: true,
      leader: index === 0,
      firstObserved: since,
      startedObserved: since,
    });
  }
  world.leaderId = world.members[0].id;
  // What an earlier controller left in status: the members and when it first saw them.
  world.status = { initialization: { controlPlaneInitialized: true }, etcd: { members: remembered } };
  world.initialized = true;
  // kubeadm init uploaded its objects at this version long ago (and an older kubeadm created its bindings).
  uploadKubeadmObjects(world, world.spec.version);
  // An adopted Machine (or one made by an older release) lacks Quorum's pre-terminate hook.
  if (world.rng.chance(0.15)) world.rng.pick(world.machines).hook = false;
}

/**
 * The certificateExpiry trait: spec.rollout.before.certificatesExpiryDays is set, and each starting Machine's
 * certificates expire the notice plus 0..N steps from now (as if an earlier template's kubeadm had issued them with a
 * short certificateValidityPeriod), so each falls within the notice at some step of the run, while faults last or
 * shortly after. Machines made in the run get kubeadm's one year (ports.ts). A kubeadm world shows an expiry as a real
 * one does: on the Machine's certificates-expiry annotation (Quorum or a user recorded it; CAPI copies it into
 * status.certificatesExpiryDate), or else only to Quorum's dial of the Machine's API server. A generic world has no API
 * server Quorum dials: a Machine's expiry is known there only when something annotated it; otherwise the world models
 * none.
 */
function certificatesExpiring(world: World, rng: Prng): void {
  const days = rng.weighted(CERTIFICATES_EXPIRY_DAYS);
  world.spec.certificatesExpiryDays = days;
  for (const machine of world.machines) {
    const annotated = world.traits.kubeadm ? rng.chance(CERTIFICATES_ANNOTATED) : rng.chance(0.7);
    if (!world.traits.kubeadm && !annotated) continue;
    const expiry = world.now + days * DAY_MS + rng.int(0, world.faultsUntil + CERTIFICATES_DUE_AFTER_FAULTS) * STEP_MS;
    machine.certificatesExpiry = expiry;
    // RFC 3339 in whole seconds, as KCP and Quorum write it (the world's clock moves in whole seconds).
    if (annotated)
      machine.annotations[CERTIFICATES_EXPIRY_ANNOTATION] = new Date(expiry).toISOString().replace(".000Z", "Z");
  }
}
