// Every label, annotation, finalizer, condition and API name Quorum reads or writes, in one place.

export const GROUP = "controlplane.cluster.x-k8s.io";
export const VERSION = "v1beta1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = "QuorumControlPlane";
export const TEMPLATE_KIND = "QuorumControlPlaneTemplate";
export const PLURAL = "quorumcontrolplanes";
export const TEMPLATE_PLURAL = "quorumcontrolplanetemplates";
export const SHORT_NAME = "qcp";

/** CAPI core objects are read and written in the version CAPI stores (v1beta2 since CAPI 1.11). */
export const CAPI_GROUP = "cluster.x-k8s.io";
export const CAPI_VERSION = "v1beta2";
export const CAPI_API_VERSION = `${CAPI_GROUP}/${CAPI_VERSION}`;

/** CRD label telling CAPI which contract our API version implements: v1beta2, and no other. */
export const CONTRACT_LABEL_V1BETA2 = "cluster.x-k8s.io/v1beta2";

export const LABEL_CLUSTER_NAME = "cluster.x-k8s.io/cluster-name";
export const LABEL_CONTROL_PLANE = "cluster.x-k8s.io/control-plane";
export const LABEL_CONTROL_PLANE_NAME = "cluster.x-k8s.io/control-plane-name";
/** `--watch-filter=<value>` reconciles only objects carrying this label with that value (CAPI's WatchLabel). */
export const LABEL_WATCH_FILTER = "cluster.x-k8s.io/watch-filter";

/** CAPI waits for every pre-terminate hook annotation (this prefix, then the owner's name) to go before it deletes a
 * Machine's infrastructure. */
export const PRE_TERMINATE_HOOK_PREFIX = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/";
export const PRE_TERMINATE_HOOK = `${PRE_TERMINATE_HOOK_PREFIX}quorum`;
/** Set by CAPI's MachineHealthCheck on a Machine it wants remediated (v1beta2 condition or legacy annotation). */
export const REMEDIATE_ANNOTATION = "cluster.x-k8s.io/remediate-machine";
export const PAUSED_ANNOTATION = "cluster.x-k8s.io/paused";
/** Hash of the machine template a Machine was created from; a change means the Machine is outdated. */
export const TEMPLATE_HASH_ANNOTATION = "controlplane.cluster.x-k8s.io/quorum-template-hash";
/**
 * On a Machine: which label and annotation keys came from spec.machineTemplate.metadata (JSON {"labels": [...],
 * "annotations": [...]}), so a key later removed from the template is removed from the Machine and its clones, while
 * keys others set are left alone (src/core/in-place.ts).
 */
export const TEMPLATE_METADATA_ANNOTATION = "controlplane.cluster.x-k8s.io/quorum-template-metadata";
/**
 * On a Machine: when its API server serving certificate expires (RFC 3339), CAPI's own annotation. Quorum records
 * what it read over TLS here (src/controller/certificates-expiry.ts); CAPI's Machine controller copies it into
 * Machine.status.certificatesExpiryDate, and a value a user sets is read, not dialled for.
 */
export const CERTIFICATES_EXPIRY_ANNOTATION = "machine.cluster.x-k8s.io/certificates-expiry";
/** spec.rollout.before.certificatesExpiryDays' smallest value (KCP's): kubeadm needs time to replace a Machine. */
export const MIN_CERTIFICATES_EXPIRY_DAYS = 7;
/** The member name Quorum expects this Machine's etcd member to use (defaults to the Machine name). */
export const MEMBER_NAME_ANNOTATION = "controlplane.cluster.x-k8s.io/quorum-etcd-member";
/**
 * On a Machine: the id of its etcd member Quorum removed, written just before the removal. It tells a deleting Machine
 * that shows no member because its member was removed from one whose kubeadm join may not have added its member yet
 * (src/core/selection.ts joinMayAddMember): the first has its pre-terminate hook released at once, the second held.
 */
export const MEMBER_REMOVED_ANNOTATION = "controlplane.cluster.x-k8s.io/quorum-removed-etcd-member";
/** A user asks for this Machine to be replaced, like KCP's remediation-in-progress / delete-machine. */
export const DELETE_MACHINE_ANNOTATION = "cluster.x-k8s.io/delete-machine";
/**
 * On the QuorumControlPlane: comma-separated etcd member ids (decimal as in status.etcd.members, or hex as etcdctl
 * prints them) a user asks Quorum to remove although they map to no Machine and are healthy. Still judged by the
 * health check; Quorum never removes a healthy unmapped member on its own, since it may be a Machine's live member.
 */
export const REMOVE_MEMBER_ANNOTATION = "controlplane.cluster.x-k8s.io/quorum-remove-etcd-member";

/**
 * Quorum's remediation memory on the QuorumControlPlane, JSON {"machine","time","retryCount"}: the last Machine it
 * remediated, which the retry limits (spec.remediation) count from. An annotation, not status, because
 * `clusterctl move` recreates objects without their status (KCP keeps its remediation data in annotations too).
 */
export const LAST_REMEDIATION_ANNOTATION = "controlplane.cluster.x-k8s.io/quorum-last-remediation";
/**
 * On a Machine Quorum created to replace a remediated one: that remediation, JSON {"machine","time","retryCount"}
 * (KCP's remediation-for). The retry limits (spec.remediation.retryPeriod, maxRetry) apply only to a Machine that
 * carries it, within minHealthyPeriod of that remediation: a Machine that fails on its own is remediated at once.
 */
export const REMEDIATION_FOR_ANNOTATION = "controlplane.cluster.x-k8s.io/quorum-remediation-for";

export const FINALIZER = "controlplane.cluster.x-k8s.io/quorum";

/** CAPI's topology controller labels every object it creates for a Cluster made from a ClusterClass. */
export const TOPOLOGY_OWNED_LABEL = "topology.cluster.x-k8s.io/owned";

export const CONDITION = {
  /** v1beta1-style summary condition. */
  Ready: "Ready",
  Available: "Available",
  EtcdClusterHealthy: "EtcdClusterHealthy",
  /** False while a member maps to no Machine (reason UnmappedMember for a healthy one, GhostMember otherwise). */
  EtcdMembersMapped: "EtcdMembersMapped",
  RollingOut: "RollingOut",
  ScalingUp: "ScalingUp",
  ScalingDown: "ScalingDown",
  Remediating: "Remediating",
  Paused: "Paused",
  MachinesReady: "MachinesReady",
  /** Every Machine not being deleted matches the spec (the UpToDate condition Quorum sets on each Machine). */
  MachinesUpToDate: "MachinesUpToDate",
  CertificatesAvailable: "CertificatesAvailable",
  Reconciled: "Reconciled",
  /**
   * True while the QuorumControlPlane is being deleted: reason RemovingEtcdMembers while members are still removed one
   * at a time, EtcdMembersNotRemoved once Machines go without (src/core/deletion.ts), naming the members left.
   */
  Deleting: "Deleting",
  /** True while another control plane claims this Cluster or its Machines: Quorum then acts less or not at all. */
  OwnershipConflict: "OwnershipConflict",
} as const;
export type ConditionType = (typeof CONDITION)[keyof typeof CONDITION];

/**
 * MachinesReady's reason while the workload kubeconfig Secret holds a field Quorum refuses (exec, auth-provider, a
 * file reference, a proxy, insecure-skip-tls-verify): only a user can fix that Secret, so it gets its own reason
 * (alerting can match it) instead of the generic NotReady.
 */
export const REASON_WORKLOAD_KUBECONFIG_REJECTED = "WorkloadKubeconfigRejected";

/** Secret names the CAPI contract expects for a cluster. */
export const secretName = {
  ca: (cluster: string) => `${cluster}-ca`,
  etcd: (cluster: string) => `${cluster}-etcd`,
  sa: (cluster: string) => `${cluster}-sa`,
  proxy: (cluster: string) => `${cluster}-proxy`,
  kubeconfig: (cluster: string) => `${cluster}-kubeconfig`,
} as const;
export const CLUSTER_SECRET_TYPE = "cluster.x-k8s.io/secret";

export const DEFAULTS = {
  etcdClientPort: 2379,
  ghostMemberGracePeriodSeconds: 300,
  learnerPromotionTimeoutSeconds: 600,
  learnerStallSeconds: 300,
  memberJoinGracePeriodSeconds: 600,
  remediationMaxRetry: 3,
  remediationRetryPeriodSeconds: 300,
  remediationMinHealthyPeriodSeconds: 3600,
  remediationMachineLostAfterSeconds: 300,
  deletionEtcdMemberRemovalTimeoutSeconds: 600,
  maxSurge: 1 as 0 | 1,
} as const;

export type MemberRemoval = "BeforeDelete" | "AfterDrain";

/**
 * memberRemoval when the spec leaves it unset, for Machines whose bootstrap needs nothing else (kubeadm ≥ 1.31 gets
 * AfterDrain: defaultMemberRemoval in src/api/flavour.ts). The CRD sets no default: it depends on the flavour.
 */
export const GENERIC_MEMBER_REMOVAL: MemberRemoval = "BeforeDelete";

/**
 * How Quorum reaches a workload cluster's etcd members. Direct: it dials each member's client URL. APIServerProxy: it
 * carries each connection over a port-forward through the workload API server to the member's static pod
 * `kube-system/etcd-<node>` (kubeadm's mirror pod name, as KCP does), for clouds where the management cluster cannot
 * reach port 2379. The CRD sets no default: it depends on the flavour (defaultEtcdAccess in src/api/flavour.ts).
 */
export type EtcdAccess = "Direct" | "APIServerProxy";
export const ETCD_ACCESS_MODES: readonly EtcdAccess[] = ["Direct", "APIServerProxy"];

/** A ClusterRole with this label adds its rules to the role Quorum's controller is bound to (config/rbac). */
export const AGGREGATION_LABEL = "controlplane.cluster.x-k8s.io/aggregate-to-quorum-manager";
