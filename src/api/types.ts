// The QuorumControlPlane API (controlplane.cluster.x-k8s.io/v1beta1) as TypeScript types.
// config/crd/ holds the matching OpenAPI schema; test/unit/api keeps the two in step.
import type { EtcdAccess, MemberRemoval } from "./constants.ts";

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A reference to an object in the same namespace (v1beta2 contract: apiGroup/kind/name). */
export interface ObjectRef {
  apiVersion?: string;
  apiGroup?: string;
  kind: string;
  name: string;
  namespace?: string;
}

/** A condition the Machine's Ready condition also waits for (CAPI Machine v1beta2 spec.readinessGates). */
export interface MachineReadinessGate {
  conditionType: string;
  /** Positive (default): the condition is True when all is well. Negative: False when all is well. */
  polarity?: "Positive" | "Negative";
}

/** A Node taint CAPI keeps on the Machine's Node (CAPI Machine v1beta2 spec.taints, feature gate MachineTaintPropagation). */
export interface MachineTaint {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  propagation: "Always" | "OnInitialization";
}

/** How CAPI deletes a control-plane Machine (CAPI Machine v1beta2 spec.deletion), in whole seconds. */
export interface MachineDeletionSpec {
  nodeDrainTimeoutSeconds?: number;
  nodeVolumeDetachTimeoutSeconds?: number;
  nodeDeletionTimeoutSeconds?: number;
}

/** spec.machineTemplate.spec: the v1beta2 control-plane contract's fields, plus the bootstrap template Quorum clones. */
export interface MachineTemplateSpec {
  infrastructureRef: ObjectRef;
  /** A bootstrap config *template* cloned once per Machine (e.g. KubeadmConfigTemplate). */
  bootstrapConfigTemplateRef: ObjectRef;
  readinessGates?: MachineReadinessGate[];
  deletion?: MachineDeletionSpec;
  taints?: MachineTaint[];
}

export interface MachineTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: MachineTemplateSpec;
}

export interface RolloutStrategy {
  type?: "RollingUpdate";
  rollingUpdate?: {
    /** 1: add a new Machine before removing an old one. 0: remove first (needs replicas >= 3). */
    maxSurge?: 0 | 1;
    /**
     * BeforeDelete: remove the member, then delete the Machine. AfterDrain: delete, drain, remove in the hook. Unset:
     * AfterDrain for kubeadm Machines at Kubernetes >= 1.31, else BeforeDelete (src/api/flavour.ts).
     */
    memberRemoval?: MemberRemoval;
  };
}

/** spec.rollout, laid out as KubeadmControlPlane v1beta2 has it; the topology controller writes rollout.after. */
export interface RolloutSpec {
  /** RFC 3339: Machines created before it are replaced once it has passed. */
  after?: string;
  before?: RolloutBeforeSpec;
  strategy?: RolloutStrategy;
}

/** spec.rollout.before, as KubeadmControlPlane v1beta2 has it. */
export interface RolloutBeforeSpec {
  /**
   * A Machine whose API server serving certificate expires within this many days is replaced (kubeadm control planes
   * only; at least 7, as KCP). Unset: certificate expiry rolls nothing out.
   */
  certificatesExpiryDays?: number;
}

export interface RemediationSpec {
  maxRetry?: number;
  retryPeriod?: string;
  minHealthyPeriod?: string;
  /**
   * How long a Machine's etcd member stays down, or its Node NotReady, before status offers deleting the Machine as
   * lost. Quorum never deletes it on its own: a user or a MachineHealthCheck does.
   */
  machineLostAfter?: string;
}

export interface EtcdSpec {
  clientPort?: number;
  /**
   * Direct: dial each member's client URL. APIServerProxy: port-forward through the workload API server to the
   * member's pod `kube-system/etcd-<node>`. Unset: APIServerProxy for kubeadm Machines, else Direct (src/api/flavour.ts).
   */
  access?: EtcdAccess;
  /** How long a member that maps to no Machine is tolerated before it counts as a ghost to remove. */
  ghostMemberGracePeriod?: string;
  /** How long a learner may take to catch up before it is evicted and its Machine replaced. */
  learnerPromotionTimeout?: string;
  /** How long a learner may make no raft progress before it counts as stalled. */
  learnerStallTimeout?: string;
  /**
   * How long a new Machine may take from creation until its member joins and until it has a Node (a down member on a
   * Machine with no Node past it is evicted); during a rollout a down member of an up-to-date Machine younger than this
   * is waited for.
   */
  memberJoinGracePeriod?: string;
}

export interface DeletionSpec {
  /**
   * How long after the deletionTimestamp Quorum keeps removing etcd members before it releases the hooks and deletes
   * the remaining Machines without removing theirs (at once when etcd cannot be read or has lost quorum).
   */
  etcdMemberRemovalTimeout?: string;
}

export interface QuorumControlPlaneSpec {
  replicas?: number;
  version: string;
  machineTemplate: MachineTemplate;
  rollout?: RolloutSpec;
  remediation?: RemediationSpec;
  etcd?: EtcdSpec;
  deletion?: DeletionSpec;
}

export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message?: string;
  lastTransitionTime: string;
  observedGeneration?: number;
  severity?: "Error" | "Warning" | "Info" | "";
}

export interface EtcdMemberStatus {
  id: string;
  name: string;
  machine?: string;
  node?: string;
  learner: boolean;
  healthy: boolean;
  leader: boolean;
  /** ghost, joining, deleting, unreachable, alarm text... */
  state?: string;
  error?: string;
  /** When Quorum first saw this member (RFC 3339); grace periods count from here across restarts. */
  firstObserved?: string;
  /** When Quorum first saw this member started (RFC 3339): etcd refuses some removals until it is 5 s old. */
  startedObserved?: string;
  /** When etcd last refused removing this member with "unhealthy cluster" (RFC 3339): Quorum asks early only once. */
  removalRefused?: string;
  /** Since when Quorum has seen this member not answering, without an answer between (RFC 3339). */
  downSince?: string;
  /** Last raft applied index seen, and when it last moved (learner stall detection). */
  raftAppliedIndex?: number;
  lastProgress?: string;
}

export interface EtcdQuorumStatus {
  voters: number;
  healthyVoters: number;
  quorumSize: number;
  failuresTolerated: number;
}

export interface NextActionStatus {
  kind: string;
  /** One line a human reads: what Quorum will do next, and why. */
  message: string;
  /** What stops it now, when it waits. */
  blockedBy?: string;
  target?: string;
}

export interface QuorumControlPlaneStatus {
  observedGeneration?: number;
  selector?: string;
  replicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  upToDateReplicas?: number;
  updatedReplicas?: number;
  unavailableReplicas?: number;
  version?: string;
  initialized?: boolean;
  ready?: boolean;
  initialization?: { controlPlaneInitialized?: boolean };
  failureReason?: string;
  failureMessage?: string;
  conditions?: Condition[];
  /** v1beta1 counters are kept beside the v1beta2 ones; deprecated.v1beta1 holds v1beta1-style conditions. */
  deprecated?: {
    v1beta1?: {
      conditions?: Condition[];
      readyReplicas?: number;
      updatedReplicas?: number;
      unavailableReplicas?: number;
    };
  };
  etcd?: {
    members?: EtcdMemberStatus[];
    quorum?: EtcdQuorumStatus;
    /**
     * When Quorum last saw the member list change (added, started, promoted, removed), RFC 3339. Not the time of
     * every read: that would rewrite an idle cluster's status on every poll.
     */
    lastObserved?: string;
    /** "<healthyVoters>/<voters>", e.g. "2/3": the Etcd printer column (JSONPath cannot compute it). */
    summary?: string;
    /** How Quorum reached etcd in the last reconcile: spec.etcd.access, else the flavour's default. */
    access?: EtcdAccess;
  };
  nextAction?: NextActionStatus;
  lastRemediation?: { machine: string; time: string; retryCount: number };
}

export interface QuorumControlPlane {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: QuorumControlPlaneSpec;
  status?: QuorumControlPlaneStatus;
}

export interface QuorumControlPlaneTemplate {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: {
    template: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: Omit<QuorumControlPlaneSpec, "replicas" | "version" | "machineTemplate"> & {
        machineTemplate?: { metadata?: MachineTemplate["metadata"]; spec?: Partial<MachineTemplateSpec> };
      };
    };
  };
}
