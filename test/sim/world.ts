// The simulated world: the truth the controller can only observe. Machines (CAPI), their infrastructure and
// kubeadm bootstrap, the workload Nodes, and the etcd cluster (members, processes, leader, raft indices).
// Everything here is plain mutable data plus small helpers; evolve.ts moves it forward in time, faults.ts breaks
// it, and ports.ts shows it to the real reconcile() as Kubernetes objects and an etcd cluster and applies its calls.
import type { MetaV1Condition } from "../../src/api/capi.ts";
import type { MemberRemoval } from "../../src/api/constants.ts";
import type { OwnerReference, QuorumControlPlaneStatus } from "../../src/api/types.ts";
import type { Prng } from "./prng.ts";

/** One reconcile per step; grace periods in the simulated spec are set in steps of this size. */
export const STEP_MS = 10_000;
export const CONTROL_PLANE = "qcp";
/**
 * The control plane's name in a longName world: ClusterClass names it `<cluster>-<random>`, cut to 63 characters, so
 * the Machines cannot be named `<control plane>-<suffix>` whole.
 */
export const LONG_CONTROL_PLANE = "payments-platform-production-eu-west-1-primary-cluster-26-x7k2p";
/** The second QuorumControlPlane of a secondOwner world: labelled for the same Cluster, not named by it. */
export const COPY_CONTROL_PLANE = "qcp-copy";
export const NAMESPACE = "default";
export const CLUSTER = "sim";

/** The simulated spec's timers, short enough that every timer fires within a schedule. */
export const SIM_TIMERS = {
  ghostGracePeriodMs: 60_000,
  learnerPromotionTimeoutMs: 240_000,
  learnerStallMs: 60_000,
  memberJoinGracePeriodMs: 180_000,
  remediationRetryPeriodMs: 60_000,
  remediationMinHealthyPeriodMs: 300_000,
  remediationMaxRetry: 1000,
  /** Inside the 1-8 steps of a member outage (faults.ts): some outages end before it, some after. */
  machineLostAfterMs: 60_000,
} as const;

/**
 * How kubeadm join adds the member: as a learner that Quorum promotes, as a learner kubeadm promotes itself
 * once in sync (EtcdLearnerMode), or straight as a voter (older kubeadm: the dangerous unstarted-voter window).
 */
export type JoinMode = "learner" | "learner-self-promote" | "voter";
/** The Node (and etcd member) name: the Machine name, or a host name derived from the address (AWS-style). */
export type NodeNaming = "machine" | "hostname";
/** A boot fault decided when the Machine is created (only while faults are on). */
export type BootFault = "infrastructure" | "bootstrap" | "after-member-add" | "stalled-learner";

export type MachinePhase =
  | "provisioning" // infrastructure not ready
  | "booting" // infrastructure ready, bootstrap (kubeadm) running
  | "member-added" // kubeadm added the member, etcd not started yet
  | "running" // etcd process started (it may be down now)
  | "broken"; // will never run etcd again (failed boot, died, or its member was removed)

export interface SimMachine {
  name: string;
  created: number;
  createdStep: number;
  deleting?: number;
  /** Step at which CAPI has drained a deleting Machine and waits only on pre-terminate hooks. */
  drainedAt?: number;
  /** foreignHooks worlds: the step at which the other controller takes its hook off a deleting Machine. */
  foreignHookUntil?: number;
  version: string;
  templateHash: string;
  /**
   * The labels and annotations from spec.machineTemplate.metadata (with Quorum's record of their keys) the Machine
   * carries; Quorum's own keys are added when it is shown (machineObject).
   */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The conditions Quorum owns on the Machine (UpToDate, OwnerRemediated) as it last wrote them. */
  ownedConditions?: MetaV1Condition[];
  failureDomain?: string;
  /** Assigned when the infrastructure is ready. */
  address?: string;
  /** The name its Node and etcd member get (known to the world from the start, to the controller once the Node exists). */
  hostName: string;
  phase: MachinePhase;
  /** Step at which the current phase moves on. */
  phaseUntil: number;
  infrastructureReady: boolean;
  bootstrapReady: boolean;
  hook: boolean;
  /** The MachineHealthCheck finds the Machine unhealthy and asked its owner to remediate it (both conditions False). */
  remediationRequested: boolean;
  /**
   * OwnerRemediated=False is on the Machine. The MachineHealthCheck sets it with its request but never takes it off
   * again: when the Machine recovers first, only its owner removes it (as KCP does).
   */
  ownerRemediatedPending?: boolean;
  /** CAPI reports a terminal failure (failureReason). */
  failed: boolean;
  markedForDeletion: boolean;
  bootFault?: BootFault;
  /** The member this Machine's kubeadm added (world truth; the controller has to map it). */
  memberId?: string;
  /** Step at which the kubelet registers the Node. */
  nodeAt?: number;
  /**
   * Until this step CAPI shows no nodeRef and the Node no providerID (no cloud controller manager has set it yet),
   * though the Node may be registered.
   */
  nodeRefAt?: number;
  /** Until this step the Machine reports its addresses as `addressesBefore` says, not its etcd peer address. */
  addressAt?: number;
  /** What it reports before addressAt: nothing yet, or only an external address etcd does not listen on. */
  addressesBefore?: "none" | "external-only";
  nodeRegistered: boolean;
  /**
   * kubeadm worlds: from this step its Node carries node-role.kubernetes.io/control-plane (kubeadm join's last phase,
   * mark-control-plane, a step or two after the kubelet registered it). Drawn at registration; never with joinStopped.
   */
  labelledAt?: number;
  /** kubeadm worlds: its join stopped before mark-control-plane (World.traits.halfJoins); its Node is never labelled. */
  joinStopped?: boolean;
  /**
   * Its kubelet's registration is refused for good (World.traits.refusedNodes): no Node ever, while its etcd member and
   * static pods run.
   */
  nodeRefused?: boolean;
  /**
   * Until this step its Node is NotReady however healthy the Machine is: the network plugin's pod has not started on it
   * yet (what every kubeadm join goes through, tens of seconds after the kubelet registers). Drawn at registration.
   */
  networkReadyAt?: number;
  /**
   * The kubelet stops posting status until this step (a crash loop, its client certificate expired, the Node cut off
   * from the API server): the Node goes NotReady while etcd and the static pods keep running.
   */
  kubeletDownUntil?: number;
  /** The kubelet never comes back (a broken kubelet config on this host): NotReady for good, etcd still fine. */
  kubeletLost?: boolean;
  /** Its Node's Ready condition, and since when (world time): the condition's lastTransitionTime (trackNodeReadiness). */
  nodeReadiness?: { ready: boolean; since: number };
  /** First step the MachineHealthCheck saw it unhealthy. */
  unhealthySince?: number;
  /** The remediation this Machine was created to replace (world truth, SimRemediation.replacedBy). */
  replaces?: SimRemediation;
  /**
   * kubeadm worlds: the version its static pods (API server, controller-manager, scheduler, etcd) run. kubeadm init
   * renders them at the Machine's version; kubeadm join renders them from kubeadm-config's kubernetesVersion at the
   * moment it joins, whatever the Machine's spec.version says. Nothing changes them afterwards (no kubeadm upgrade).
   */
  staticPodVersion?: string;
  /**
   * World truth, in certificateExpiry worlds: when its API server serving certificate expires (kubeadm issues them at
   * init or join). Quorum learns it from the Machine's certificates-expiry annotation or by dialling the Machine (the
   * workload port's certificatesExpiry); undefined where neither could tell it (a generic world's Machine unannotated).
   */
  certificatesExpiry?: number;
}

export interface SimMember {
  id: string;
  /** "" until the process first starts (an unstarted member, as etcd lists it). */
  name: string;
  peerHost: string;
  learner: boolean;
  started: boolean;
  /** The process runs and answers. */
  up: boolean;
  /** A temporary outage ends at this step. */
  downUntil?: number;
  /**
   * World time since when a member has not answered (down or not started), without an answer between that a status
   * write saw (trackMemberOutages): a controller cannot count from a later moment than the outage it saw, if it never
   * saw the member back.
   */
  downSince?: number;
  /** Since its last outage ended, a status write recorded it answering (SimPorts.noteSeenOutages). */
  backSeen?: boolean;
  /** When its last outage began, kept until a status write sees it back (trackMemberOutages). */
  lastOutage?: number;
  /** Will never answer again (its Machine died or vanished): the fault injector counts it as lost for good. */
  lostForGood: boolean;
  appliedIndex: number;
  /** Fraction of the leader's index a learner catches up per step; 0 for a stalled learner. */
  catchUpRate: number;
  /** World truth: the Machine whose kubeadm added it; undefined for stray members. */
  machine?: string;
  /**
   * The raft index of the entry that added it (addedByProposal); undefined for members from before the simulation.
   * A member that has not applied that index does not list it in its own (serializable) view.
   */
  addedAt?: number;
  /** When its process last came up (started or recovered): its peer connections are this old. */
  activeSince: number;
  /** A status write saw it down during its current outage (so the controller could know its connections restarted). */
  outageSeen?: boolean;
  /** Its last recovery came after an outage no status write saw: its young connections are invisible to the controller. */
  unseenBounce?: boolean;
}

/** A Node object left behind in the workload cluster by a Machine that vanished out of band. */
export interface StaleNode {
  name: string;
  address: string;
  /** World time its Machine vanished: its Node has been NotReady since. */
  notReadySince: number;
  /** It kept kubeadm's control-plane label (its join had labelled it). */
  labelled: boolean;
}

export interface SimSpec {
  replicas: number;
  version: string;
  templateHash: string;
  /** spec.machineTemplate.metadata.labels: a change reaches Machines in place, never by a rollout. */
  machineLabels: Record<string, string>;
  maxSurge: 0 | 1;
  memberRemoval: MemberRemoval;
  paused: boolean;
  clusterPaused: boolean;
  generation: number;
  /** Member ids the operator listed in the quorum-remove-etcd-member annotation (operator.ts). */
  removeMemberIds: string[];
  /** spec.rollout.before.certificatesExpiryDays (certificateExpiry worlds). */
  certificatesExpiryDays?: number;
}

/** The worlds real clusters produce that a schedule may contain (scenario.ts draws them). */
export interface WorldTraits {
  /** Machines wait long for their nodeRef (no cloud controller manager sets the Node's providerID yet). */
  nodeRefLag: boolean;
  /** Machines report their addresses late, or first only an external one. */
  addressLag: boolean;
  /** A second QuorumControlPlane claims the same Cluster (World.copy). */
  secondOwner: boolean;
  /**
   * A voter goes down after the controller planned a removal and before it sends it (a member SIGKILLed while the
   * controller planned: the e2e member-down race). The controller acts on a snapshot that is already stale.
   */
  racingOutage: boolean;
  /**
   * The bootstrap config template is a KubeadmConfigTemplate: the workload cluster holds kubeadm's objects
   * (World.kubeadm), joins render their static pods from kubeadm-config, and the real KubeadmFlavour keeps them.
   */
  kubeadm: boolean;
  /**
   * The MachineHealthCheck has no node startup timeout (`nodeStartupTimeoutSeconds: 0`, as users set it for slow
   * clouds): a Machine that never registers a Node is never marked, and Quorum alone must get past it.
   */
  noStartupTimeout: boolean;
  /**
   * spec.rollout.before.certificatesExpiryDays is set, and the Machines the schedule starts with carry certificates
   * that fall within it during the run (SimMachine.certificatesExpiry): they must be rolled out.
   */
  certificateExpiry: boolean;
  /**
   * The MachineHealthCheck does not watch Node readiness (no MachineHealthCheck for the control plane, or one whose
   * unhealthyNodeConditions is empty): a Machine whose VM died stays unmarked unless CAPI calls it failed. Quorum
   * cannot tell a dead VM from a long outage, so the operator gets past it by the fix the status names (operator.ts).
   */
  noNodeReadyCheck: boolean;
  /**
   * kubeadm worlds: some joins stop after their etcd phase and before mark-control-plane (an upload-config or
   * update-status that failed): the member is a healthy voter, the Node registered, but never labelled. Quorum must say
   * so on the Machine (NodeKubeadmLabelSet False); the operator then deletes it (operator.ts), Quorum replaces it.
   */
  halfJoins: boolean;
  /**
   * The control plane is named LONG_CONTROL_PLANE, 63 characters, as ClusterClass names one for a long cluster name.
   * Where hosts are named after their Machines, a Machine name over 63 characters would never get a Node.
   */
  longName: boolean;
  /**
   * While faults last, some kubelets' registrations are refused for good (an admission policy that rejects the Node, a
   * kubelet whose credentials the API server does not take): the Machine's etcd member joins and is a healthy voter,
   * its static pods run, and it never gets a Node. A MachineHealthCheck with a node startup timeout marks it; where there
   * is none (noStartupTimeout) status.nextAction must name it, and the operator deletes it (operator.ts).
   */
  refusedNodes: boolean;
  /**
   * Another controller (an etcd backup, a storage detach) keeps a pre-terminate hook of its own (FOREIGN_HOOK) on every
   * control-plane Machine and takes it off 1 to 3 steps after CAPI drained the Machine; CAPI deletes the infrastructure
   * only once every hook is gone. With memberRemoval AfterDrain, Quorum removes the member only after it (rule 12).
   */
  foreignHooks: boolean;
}

/**
 * The kubeadm objects of a kubeadm world's workload cluster, as the API server holds them. kubeadm init on the first
 * Machine uploads them; after that only the controller (through the real KubeadmFlavour) changes them.
 */
export interface KubeadmObjects {
  /** When kubeadm init uploads its config (a step or two after its etcd started); undefined once uploaded or before init. */
  uploadAt?: number;
  /** The version of the Machine that ran kubeadm init: the one its upload says. */
  initVersion?: string;
  /** kube-system/kubeadm-config: its ClusterConfiguration document (YAML, kubeadm v1beta4), absent before upload. */
  clusterConfiguration?: string;
  /** kube-system/kube-proxy: the kube-proxy container's image, absent before upload. */
  kubeProxyImage?: string;
  /** ClusterRoleBindings in the workload cluster, by name. */
  bindings: Set<string>;
  /**
   * Templates whose clusterConfiguration gives kube-apiserver a flag it does not know: a Machine joined with one runs
   * etcd (its member joins and is promoted) but no API server, so its kubelet, which kubeadm points at its local API
   * server, never registers a Node. The user replaces such a template sooner or later (faults.ts).
   */
  brokenTemplates: Set<string>;
  /** Bumped on every write, as metadata.resourceVersion (the ConfigMap's and the DaemonSet's). */
  resourceVersion: number;
}
export interface World {
  step: number;
  traits: WorldTraits;
  now: number;
  spec: SimSpec;
  joinMode: JoinMode;
  nodeNaming: NodeNaming;
  /** The QuorumControlPlane's name: CONTROL_PLANE, or LONG_CONTROL_PLANE in a longName world. */
  controlPlaneName: string;
  failureDomains: string[];
  machines: SimMachine[];
  members: SimMember[];
  staleNodes: StaleNode[];
  /** etcd alarms (NOSPACE) raised on members; an operator clears them once faults stop. */
  alarms: { memberId: string; alarm: string }[];
  leaderId?: string;
  leaderIndex: number;
  initialized: boolean;
  /** The QuorumControlPlane's status: what the real controller wrote (and may lose), read back by its next reconcile. */
  status?: QuorumControlPlaneStatus;
  /** The QuorumControlPlane's remediation memory annotation, as the controller last wrote it. */
  lastRemediationAnnotation?: string;
  /** Every remediation the controller recorded, in order: rule 9 judges the retries among them. */
  remediations?: SimRemediation[];
  /** The QuorumControlPlane's metadata.finalizers. */
  finalizers: string[];
  /**
   * A second QuorumControlPlane labelled for the same Cluster (a copy-paste mistake, a migration from another
   * control plane): the real controller reconciles it too, and it must never act, since the Cluster names `qcp`.
   */
  copy?: { status?: QuorumControlPlaneStatus; finalizers: string[] };
  /** Names of the infrastructure and bootstrap clones the controller created ("kind/name"). */
  clones: Set<string>;
  /** ownerReferences the controller set on the referenced templates ("kind/name"): clusterctl move follows them. */
  templateOwners: Map<string, OwnerReference[]>;
  /**
   * Until this step the workload API cannot be read (a garbage user-managed kubeconfig Secret, an endpoint down):
   * listing Nodes fails while etcd answers.
   */
  workloadUnreadableUntil?: number;
  /** Set in kubeadm worlds (WorldTraits.kubeadm). */
  kubeadm?: KubeadmObjects;
  /** Faults (including crashes and spec changes) happen only before this step. */
  faultsUntil: number;
  nextAddress: number;
  nextStray: number;
  rng: Prng;
  /** The network plugin's start after each registration (networkReadyAt): a stream of its own, see scenario.ts. */
  networkRng: Prng;
  /** kubeadm's mark-control-plane after each registration, and joins that stop before it (halfJoins). */
  joinRng: Prng;
  /** Which registrations are refused (refusedNodes): a stream of its own, see scenario.ts. */
  registerRng: Prng;
  /** When another controller takes its pre-terminate hook off (foreignHooks): a stream of its own, see scenario.ts. */
  hookRng: Prng;
}

/**
 * A Node's network plugin runs 1 to this many steps (10 s each) after its kubelet registers it: less than the world's
 * MachineHealthCheck waits on a NotReady Node (UNHEALTHY_STEPS in evolve.ts), as a real one's timeout (minutes) is
 * set to exceed a network plugin's start.
 */
export const NETWORK_START_MAX_STEPS = 2;

/** In a halfJoins world, while faults last, the share of kubeadm joins that stop before mark-control-plane. */
export const HALF_JOIN_RATE = 0.5;

/** In a refusedNodes world, while faults last, the share of kubelet registrations refused for good. */
export const REFUSED_NODE_RATE = 0.3;

export const DAY_MS = 24 * 60 * 60 * 1000;
/** kubeadm's certificates are valid for a year: what a Machine created in the run gets. */
export const CERTIFICATE_VALIDITY_MS = 365 * DAY_MS;

/**
 * When the Machine's certificates fall within spec.rollout.before.certificatesExpiryDays (written again here, apart
 * from src/core/selection.ts, like quorumSize): undefined when the spec sets no notice, the Machine's expiry is
 * unknown, or its certificates were issued for no longer than the notice (counted from the Machine's creation): a
 * replacement's would be within it at once, so rolling out cannot help (certificatesExpiryDays 400 against kubeadm's
 * one year must replace the Machines issued for longer once, and then stop).
 */
export function certificatesDueAt(world: World, machine: SimMachine): number | undefined {
  const days = world.spec.certificatesExpiryDays;
  if (days === undefined || machine.certificatesExpiry === undefined) return undefined;
  const notice = days * DAY_MS;
  if (machine.certificatesExpiry - machine.created <= notice) return undefined;
  return machine.certificatesExpiry - notice;
}

/** The Machine's certificates expire within the notice now (KCP's rule: now + notice is past the expiry). */
export function certificatesDue(world: World, machine: SimMachine): boolean {
  const dueAt = certificatesDueAt(world, machine);
  return dueAt !== undefined && world.now > dueAt;
}

/** Written again here on purpose: the invariants must not share the arithmetic of the planner they judge. */
export function quorumSize(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

export function voters(world: World): SimMember[] {
  return world.members.filter((member) => !member.learner);
}

/** A Machine deleting without hooks loses its infrastructure at the next step: count its process as gone already. */
export function doomed(world: World, member: SimMember): boolean {
  const machine = member.machine === undefined ? undefined : findMachine(world, member.machine);
  return (
    machine !== undefined &&
    machine.deleting !== undefined &&
    !machine.hook &&
    !foreignHookHeld(world, machine) &&
    machine.memberId === member.id
  );
}

export function healthy(world: World, member: SimMember): boolean {
  return member.up && !doomed(world, member);
}

export function healthyVoterCount(world: World): number {
  return voters(world).filter((member) => healthy(world, member)).length;
}

/** Healthy voters ≥ ⌊voters/2⌋+1, counting ghosts and unstarted voters as voters. An empty cluster has none. */
export function hasQuorum(world: World): boolean {
  const count = voters(world).length;
  return count > 0 && healthyVoterCount(world) >= quorumSize(count);
}

/**
 * A remediation the controller recorded, as the world saw it: which Machine (its name and creation: a replacement may
 * reuse the name), when, the retry count KCP's rules give it, and the Machine created to replace it (world truth: the
 * first one created after its Machine began deleting; "surge" when one was created before, as for the only voter).
 */
export interface SimRemediation {
  machine: string;
  created: number;
  at: number;
  retry: number;
  replacedBy?: string;
}

export function findMachine(world: World, name: string): SimMachine | undefined {
  return world.machines.find((machine) => machine.name === name);
}

/** The Machine a remediation record names: the one not deleting yet, where a replacement reuses a deleting one's name. */
export function remediatedMachine(world: World, name: string): SimMachine | undefined {
  return (
    world.machines.find((machine) => machine.name === name && machine.deleting === undefined) ??
    findMachine(world, name)
  );
}

/** The controller records the remediation of this very Machine again (a crash between the record and the delete). */
export function sameRemediation(world: World, machine: SimMachine): boolean {
  const last = world.remediations?.at(-1);
  return last !== undefined && last.machine === machine.name && last.created === machine.created;
}

export function findMember(world: World, id: string): SimMember | undefined {
  return world.members.find((member) => member.id === id);
}

/** etcd elects a leader among the started, answering voters when they are a quorum; otherwise there is none. */
export function electLeader(world: World): void {
  const voterList = voters(world);
  const answering = voterList.filter((member) => member.up);
  if (voterList.length === 0 || answering.length < quorumSize(voterList.length)) {
    world.leaderId = undefined;
    return;
  }
  const current = world.leaderId === undefined ? undefined : findMember(world, world.leaderId);
  if (current && current.up && !current.learner) return;
  const next = answering.reduce((lowest, member) => (member.id < lowest.id ? member : lowest));
  world.leaderId = next.id;
  next.appliedIndex = world.leaderIndex;
}

/**
 * A member add is a raft proposal: it takes the next index of the leader's log, and the leader applies it once a
 * quorum has it. The followers apply it when they next hear from the leader (advanceRaft): one down until then, or
 * left without a leader first, does not list the new member in its own view.
 */
export function addedByProposal(world: World): number {
  world.leaderIndex += 1;
  const leader = world.leaderId === undefined ? undefined : findMember(world, world.leaderId);
  if (leader) leader.appliedIndex = world.leaderIndex;
  return world.leaderIndex;
}

export function newMemberId(world: World): string {
  for (;;) {
    // etcd member IDs are 64-bit; a 16-digit decimal string is enough to look real and stay unique.
    const id = `${world.rng.int(1, 9)}${String(world.rng.int(0, 999_999_999)).padStart(9, "0")}${String(world.rng.int(0, 999_999)).padStart(6, "0")}`;
    if (!findMember(world, id)) return id;
  }
}

export function newAddress(world: World): string {
  const n = world.nextAddress++;
  return `10.0.${Math.floor(n / 250)}.${(n % 250) + 2}`;
}

/** Draws how long a Machine made now waits for its nodeRef and addresses; nothing lags once faults stop. */
export function drawLags(world: World, machine: SimMachine): void {
  const until = (from: number) => Math.min(from + world.rng.int(3, 40), world.faultsUntil);
  if (world.traits.nodeRefLag && world.step < world.faultsUntil && world.rng.chance(0.6))
    machine.nodeRefAt = until(Math.max(world.step, machine.createdStep));
  if (world.traits.addressLag && world.step < world.faultsUntil && world.rng.chance(0.5)) {
    machine.addressAt = until(Math.max(world.step, machine.createdStep));
    machine.addressesBefore = world.rng.chance(0.5) ? "none" : "external-only";
  }
}

/** The Node carries kubeadm's control-plane label (generic worlds: no flavour sets it, so never judged). */
export function nodeLabelled(world: World, machine: SimMachine): boolean {
  return machine.nodeRegistered && machine.labelledAt !== undefined && world.step >= machine.labelledAt;
}

/**
 * The kubelet registers its Node with the kubernetes.io/hostname label, whose value may have at most 63 characters: a
 * longer host name (a Machine's, where the host is named after it) never registers.
 */
export const MAX_HOST_NAME_LENGTH = 63;

export function hostNameFor(world: World, machineName: string, address: string): string {
  return world.nodeNaming === "machine" ? machineName : `ip-${address.replaceAll(".", "-")}`;
}

/** A member's process came up (started or recovered) at some moment during the step that just passed. */
export function cameUp(world: World, member: SimMember): void {
  if (member.started && !member.up) member.unseenBounce = !member.outageSeen;
  member.outageSeen = false;
  member.up = true;
  member.activeSince = world.now - world.rng.int(0, STEP_MS - 1);
}

/** etcd's HealthInterval: a peer connection younger than this does not count towards a removal's quorum. */
export const ETCD_HEALTH_INTERVAL_MS = 5_000;

/**
 * Whether etcd refuses removing this member now with "unhealthy cluster" (mayRemoveMember with the strict
 * reconfig check): a learner or a member that is down is removed at once; otherwise the leader counts itself and
 * every voter whose connection to it is 5 s old (a connection is as young as the younger of its two ends), and
 * refuses unless that count minus one reaches a quorum of the voters that stay.
 */
export function etcdRefusesRemoval(world: World, member: SimMember): boolean {
  return youngConnections(world, member) !== undefined;
}

/**
 * When etcd refuses removing `member`, the voters whose connection to the leader is younger than 5 s (they are
 * what it waits on); undefined when it accepts.
 */
export function youngConnections(world: World, member: SimMember): SimMember[] | undefined {
  if (member.learner || !member.up || world.leaderId === undefined) return undefined;
  const leader = findMember(world, world.leaderId);
  if (!leader) return undefined;
  const voterList = voters(world);
  const since = world.now - ETCD_HEALTH_INTERVAL_MS;
  const old = (voter: SimMember) =>
    voter.id === leader.id || (voter.up && Math.max(voter.activeSince, leader.activeSince) <= since);
  const active = voterList.filter(old).length;
  if (active - 1 >= quorumSize(voterList.length - 1)) return undefined;
  return voterList.filter((voter) => voter.up && !old(voter));
}

/** Removes a member from the cluster; a removed etcd process shuts itself down. */
export function dropMember(world: World, id: string): void {
  world.members = world.members.filter((member) => member.id !== id);
  world.alarms = world.alarms.filter((alarm) => alarm.memberId !== id);
  if (world.leaderId === id) world.leaderId = undefined;
  electLeader(world);
}

/** Anyone deletes a Machine: CAPI sets the deletion timestamp and starts draining its Node. */
export function markDeleting(world: World, machine: SimMachine): void {
  if (machine.deleting !== undefined) return;
  machine.deleting = world.now;
  machine.drainedAt = world.step + world.rng.int(0, 2);
  if (world.traits.foreignHooks) machine.foreignHookUntil = machine.drainedAt + world.hookRng.int(1, 3);
}

/** Another controller's pre-terminate hook on control-plane Machines (foreignHooks). */
export const FOREIGN_HOOK = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/etcd-backup";

/** The other controller's hook is on the Machine: always before its deletion, until foreignHookUntil after. */
export function foreignHookHeld(world: World, machine: SimMachine): boolean {
  return world.traits.foreignHooks && (machine.deleting === undefined || world.step < (machine.foreignHookUntil ?? 0));
}

/**
 * What the kubelet reports: the Node is Ready while its Machine runs, its etcd member answers, its kubelet posts and its
 * network plugin runs.
 */
export function nodeReady(world: World, machine: SimMachine): boolean {
  return kubeletWouldPostReady(world, machine) && world.step >= (machine.networkReadyAt ?? 0);
}

/**
 * A registered Node that is NotReady only because its network plugin has not started yet: the Machine itself is
 * running, its member up and its kubelet posting. Nothing is wrong with it.
 */
export function networkStarting(world: World, machine: SimMachine): boolean {
  return kubeletWouldPostReady(world, machine) && world.step < (machine.networkReadyAt ?? 0);
}

/** A registered Node whose Machine runs, whose etcd member answers and whose kubelet posts: all but the network. */
function kubeletWouldPostReady(world: World, machine: SimMachine): boolean {
  const member = machine.memberId === undefined ? undefined : findMember(world, machine.memberId);
  return (
    machine.nodeRegistered &&
    machine.phase === "running" &&
    member !== undefined &&
    member.up &&
    !kubeletDown(world, machine)
  );
}

/**
 * Each registered Node's Ready condition moves with the world, and its lastTransitionTime with it, as a kubelet that
 * posts (and the node lifecycle controller, for one that stopped) keep it: once a step, after the world changed and
 * before the controller looks. A Node is NotReady from its registration until it is Ready the first time.
 */
export function trackNodeReadiness(world: World): void {
  for (const machine of world.machines) {
    if (!machine.nodeRegistered) continue;
    const ready = nodeReady(world, machine);
    if (machine.nodeReadiness?.ready !== ready) machine.nodeReadiness = { ready, since: world.now };
  }
}

/**
 * Each member's current time without answering (down, or not started yet: it has no client URL), from the first step
 * it does not answer until it does; one that follows another whose end no status write saw counts from that earlier
 * one (the controller saw no answer between).
 */
export function trackMemberOutages(world: World): void {
  for (const member of world.members) {
    if (!member.started || !member.up) {
      member.downSince ??= (member.backSeen === false ? member.lastOutage : undefined) ?? world.now;
    } else if (member.downSince !== undefined) {
      member.lastOutage = member.downSince;
      member.backSeen = false;
      member.downSince = undefined;
    }
  }
}

export function kubeletDown(world: World, machine: SimMachine): boolean {
  return (
    machine.kubeletLost === true || (machine.kubeletDownUntil !== undefined && world.step < machine.kubeletDownUntil)
  );
}

/** The workload API answers: its etcd has a leader and no fault cuts Quorum off from it. */
export function workloadReadable(world: World): boolean {
  return world.leaderId !== undefined && world.step >= (world.workloadUnreadableUntil ?? 0);
}

export function liveMachines(world: World): SimMachine[] {
  return world.machines.filter((machine) => machine.deleting === undefined);
}
