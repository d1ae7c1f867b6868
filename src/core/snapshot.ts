// Everything one reconcile knows, as plain serialisable data. Built by src/controller/observe from the
// sources of truth (Machines, Nodes, the etcd member list); read by the pure planner. Times are epoch ms.
import type { MemberRemoval } from "../api/constants.ts";

export interface Snapshot {
  now: number;
  controlPlane: ControlPlaneView;
  cluster: ClusterView;
  machines: MachineView[];
  /** Nodes of the workload cluster; empty when the workload API is not reachable yet. */
  nodes: NodeView[];
  /** Whether the workload API (where the Nodes are) exists and could be read; absent: no workload API to ask. */
  workload?: WorkloadView;
  /**
   * What the bootstrap flavour needs in the workload cluster (kubeadm: RBAC, kubeadm-config, kube-proxy), observed
   * while the workload API is expected; absent for a flavour that needs nothing, or before there is a workload API.
   */
  workloadSteps?: WorkloadStepsView;
  etcd: EtcdView;
}

export interface WorkloadStepsView {
  /** "kubeadm". */
  flavour: string;
  /** In the order they are taken. */
  steps: WorkloadStepView[];
  /**
   * Each node's control-plane components as the flavour sees them (kubeadm: the mirror Pods of its static pods), and
   * the components every control-plane node must run; absent when the flavour cannot see them. A voter leaves only
   * once every Machine that stays runs all of them ready (servingGate).
   */
  components?: ComponentView[];
  componentNames?: string[];
  /** The flavour's own word that the control plane is initialised (kubeadm: kubeadm-config exists); unknown on error. */
  initialized?: boolean;
  /** The steps could not be observed (the workload API did not answer): creating a Machine waits. */
  error?: string;
}

export interface ComponentView {
  node: string;
  component: string;
  ready: boolean;
  /** The image its pod runs: a kubeadm node's static pods are tagged with the version kubeadm-config said at its join. */
  image?: string;
  detail: string;
}

export interface WorkloadStepView {
  name: string;
  /** BeforeCreate: done before a Machine is created (a joining node reads it). AfterRollout: once all are up to date. */
  when: "BeforeCreate" | "AfterRollout";
  done: boolean;
  detail: string;
  /** Quorum cannot do it now: why, and what fixes it. */
  blocked?: string;
}

/**
 * The workload cluster's API as one reconcile saw it. A control plane exists to serve that API, so an old Machine
 * leaves only once the Machines that stay are seen serving (their Nodes Ready), which needs this API to be readable.
 */
export interface WorkloadView {
  /**
   * There is a workload API to ask: the control plane is initialised and the Cluster has a control-plane endpoint,
   * or a workload API answered anyway (a user's kubeconfig Secret). Without either there is nothing to check Nodes
   * with (clusters whose Machines run etcd only, like the integration stacks), and nothing is held back for it.
   */
  expected: boolean;
  /** The Nodes were listed; false with `error` when the API could not be read. */
  readable: boolean;
  error?: string;
}

export interface ControlPlaneView {
  namespace: string;
  name: string;
  generation: number;
  replicas: number;
  version: string;
  /** Hash of spec.machineTemplate's infrastructure and bootstrap template refs; Machines with another are outdated. */
  templateHash: string;
  /** The hash an earlier release recorded for the same spec (metadata included): a Machine carrying it is up to date. */
  legacyTemplateHash?: string;
  /** spec.rollout.after: Machines created before it are outdated once now >= rolloutAfter. */
  rolloutAfter?: number;
  /**
   * spec.rollout.before.certificatesExpiryDays: a Machine whose certificates expire within this many days of `now`
   * is outdated (kubeadm control planes; see MachineView.certificatesExpiry).
   */
  certificatesExpiryDays?: number;
  maxSurge: 0 | 1;
  memberRemoval: MemberRemoval;
  /** The QuorumControlPlane itself is being deleted. */
  deleting: boolean;
  /** The QuorumControlPlane carries the paused annotation. */
  paused: boolean;
  /** Member ids listed in the quorum-remove-etcd-member annotation (as written: decimal or hex). */
  removeMemberIds?: string[];
  remediation: {
    maxRetry: number;
    retryPeriodMs: number;
    minHealthyPeriodMs: number;
    /** A member down or a Node NotReady this long gets its Machine offered as lost (deleting it) in status. */
    machineLostAfterMs: number;
    /**
     * The last Machine Quorum remediated (its quorum-last-remediation annotation, else status.lastRemediation): the
     * Machine created next carries it as the remediation it replaces (MachineView.remediationFor).
     */
    last?: RemediationRecord;
  };
  etcd: {
    ghostGracePeriodMs: number;
    learnerPromotionTimeoutMs: number;
    learnerStallMs: number;
    memberJoinGracePeriodMs: number;
  };
  /** How the control plane is taken down once deleted (src/core/deletion.ts). */
  deletion: {
    /** metadata.deletionTimestamp: the bound below is counted from it. Set exactly when `deleting` is. */
    startedAt?: number;
    /** After this long, remaining Machines are deleted and their hooks released without removing their members. */
    etcdMemberRemovalTimeoutMs: number;
  };
}

export interface ClusterView {
  name: string;
  /** Cluster.spec.paused. */
  paused: boolean;
  /** Cluster.status.failureDomains that may hold control-plane Machines, sorted. */
  failureDomains: string[];
  infrastructureReady: boolean;
  /**
   * Set when the Cluster has an infrastructureRef and its spec.controlPlaneEndpoint is not valid yet (host empty or
   * port 0): that provider sets the endpoint, and Machines wait for it, as KCP's do.
   */
  awaitingEndpoint?: boolean;
  /** The workload control plane has been initialised (the first member and apiserver are up). */
  controlPlaneInitialized: boolean;
  /** Cluster.spec.controlPlaneRef: Quorum acts only when it names this QuorumControlPlane (issue 12, bug 4). */
  controlPlaneRef?: { apiGroup: string; kind: string; name: string };
  /**
   * Machines that carry this QuorumControlPlane's label or are control-plane Machines of its Cluster, but are not
   * its own (another controller owner UID, or another spec.clusterName). Never acted on, never counted.
   */
  foreignMachines: ForeignMachineView[];
}

export interface ForeignMachineView {
  name: string;
  /** Its controller owner as "Kind ns/name", or "no controller owner". */
  owner: string;
  /** Its spec.clusterName is this Cluster: its etcd member, if any, is in this Cluster's etcd. */
  sameCluster: boolean;
  /** Why it is not ours, for the condition. */
  why: string;
}

/** One remediation: the Machine deleted, when, and how many replacements in a row had failed before it. */
export interface RemediationRecord {
  machine: string;
  time: number;
  retryCount: number;
}

export interface MachineView {
  name: string;
  /** Machine creation time. */
  created: number;
  /** Set when the Machine is being deleted (by Quorum, a user or a MachineHealthCheck). */
  deleting?: number;
  /**
   * The remediation this Machine was created to replace (its quorum-remediation-for annotation); unset for any other
   * Machine, and when the annotation is unreadable (a hand edit: its remediation then counts as a first try, as KCP's).
   */
  remediationFor?: RemediationRecord;
  version: string;
  templateHash?: string;
  failureDomain?: string;
  /** The etcd member name this Machine's member uses (node name once known, else the Machine name). */
  memberName: string;
  nodeName?: string;
  providerID?: string;
  /** Machine addresses (IPs or host names) from status.addresses. */
  addresses: string[];
  infrastructureReady: boolean;
  bootstrapReady: boolean;
  /**
   * CAPI's v1beta2 Ready and Available conditions of the Machine are True (CAPI's Machine controller sets them from
   * the bootstrap, the infrastructure and the Node). Only the contract's replica counters read them: Quorum's own
   * decisions use the etcd member and the Node it sees itself.
   */
  capiReady?: boolean;
  capiAvailable?: boolean;
  /**
   * When its API server serving certificate expires (epoch ms): from the Machine's certificates-expiry annotation, or
   * read over TLS this reconcile. Unknown (undefined) for Machines nobody could read it from: never outdated for it.
   */
  certificatesExpiry?: number;
  /**
   * Its API server, dialled at the Machine's address this reconcile (kubeadm: GET /readyz): not ready when it does not
   * answer or says it is not ready, with why. Unknown (undefined) where the flavour does not dial (the simulator).
   */
  apiServer?: { ready: boolean; detail: string };
  /** Carries Quorum's pre-terminate hook annotation. */
  hasPreTerminateHook: boolean;
  /**
   * The id of its etcd member Quorum removed (its quorum-removed-etcd-member annotation, written before the removal):
   * the Machine had a member, so its join is past the etcd phase.
   */
  memberRemoved?: string;
  /**
   * The other pre-terminate hooks it carries (what follows the annotation prefix: another controller's, a backup's or a
   * storage detach's), which CAPI runs side by side with Quorum's. memberRemoval AfterDrain removes the member only once
   * they are gone, as KCP does from Kubernetes 1.31: their controllers may need the node's kubelet and etcd working.
   */
  otherPreTerminateHooks?: string[];
  /**
   * A MachineHealthCheck (or a user, through it) asked for this Machine to be remediated: OwnerRemediated and
   * HealthCheckSucceeded both False, as KCP reads it.
   */
  remediationRequested: boolean;
  /**
   * OwnerRemediated is still False but the MachineHealthCheck now finds the Machine healthy (HealthCheckSucceeded
   * True): it recovered before its owner acted. The MachineHealthCheck leaves OwnerRemediated to the owner, so Quorum
   * removes it; until then nothing remediates the Machine.
   */
  remediationWithdrawn?: boolean;
  /** The Machine's infrastructure failed for good (failureReason/failureMessage or a terminal condition). */
  failed: boolean;
  /** A user marked the Machine to be preferred for deletion (cluster.x-k8s.io/delete-machine). */
  markedForDeletion: boolean;
  /**
   * For a deleting Machine: false while CAPI still drains it; true once it waits only on pre-terminate hooks
   * (v1beta2 condition Deleting, reason WaitingForPreTerminateHook). memberRemoval AfterDrain removes the member
   * only then. Unset when unknown: treated as finished, so a missing signal cannot wedge a deletion.
   */
  drainFinished?: boolean;
  /** While drainFinished is false: what CAPI says the drain waits on (its Deleting condition's message, one line). */
  drainDetail?: string;
  /**
   * Why this Machine could not be read as a CAPI Machine (no spec, no spec.bootstrap, no spec.version...), when it
   * could not. It is still counted and its member still maps to it (by name, annotation or whatever was readable),
   * so nothing treats its member as a ghost. It is never judged outdated nor remediated as member-lost, and a
   * scale-down takes it after the well-formed Machines unless it has no member (then nothing in etcd is lost); the
   * MachinesReady condition names it. Finishing work on it (its deletion, its hook) goes on.
   */
  malformed?: string;
}

export interface NodeView {
  name: string;
  providerID?: string;
  ready: boolean;
  /**
   * For a Node that is not Ready, since when (ms since the epoch): its Ready condition's lastTransitionTime, which a
   * new Node's kubelet sets when it registers. Absent when the Node has no Ready condition or no time on it.
   */
  notReadySince?: number;
  addresses: string[];
  /** It carries node-role.kubernetes.io/control-plane (kubeadm sets it as a control-plane join's last step). */
  controlPlaneLabel: boolean;
}

export interface EtcdView {
  /** False when the member list could not be read at all (no endpoint answered); members is then empty. */
  observed: boolean;
  /** Why the member list could not be read, for the status and the Wait reason. */
  error?: string;
  /**
   * Only a user can fix why it could not be read (a garbage etcd CA Secret, an expired certificate): look again
   * less often, since waiting changes nothing. From the adapter error's `needsUser`.
   */
  needsUser?: boolean;
  /**
   * Set when the leader could not confirm the member list (etcd's linearizable read failed): why. The list is then
   * one member's own view, which may lack a member added since, so a Machine absent from it may still have one.
   */
  unconfirmed?: string;
  members: MemberView[];
  /** Cluster-wide alarms (NOSPACE, CORRUPT), with the member they were raised on. */
  alarms: { memberId: string; alarm: string }[];
}

export interface MemberView {
  /** etcd member ID as a decimal string. */
  id: string;
  /** Empty while an added member has not started yet (unstarted joiner). */
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  learner: boolean;
  /** A status call to this member answered within its deadline. */
  reachable: boolean;
  leader: boolean;
  raftTerm?: number;
  raftIndex?: number;
  raftAppliedIndex?: number;
  /** Errors the member reported in its status (e.g. "etcdserver: no leader"), or why it did not answer. */
  errors: string[];
  /** First time Quorum saw this member (from status; falls back to now). Drives grace periods. */
  firstObserved: number;
  /**
   * First time Quorum saw this member started (named), from status. Its peer connections are at least this old,
   * which is what etcd's removal check counts (see removalWindow). Undefined while it has not started.
   */
  startedObserved?: number;
  /** When etcd last refused removing this member ("unhealthy cluster"), from status: see removalMayBeOpen. */
  removalRefused?: number;
  /** Since when Quorum has seen this member not answering, without an answer between (from status downSince). */
  downObserved?: number;
  /** Last time raftAppliedIndex was seen to move (learner stall detection). */
  lastProgress: number;
}
