// The workload-cluster port: certificates, etcd, Nodes and the bootstrap flavour's steps of one QuorumControlPlane's
// cluster.
import type { Cluster, Node } from "../api/capi.ts";
import type { Unstructured } from "../api/objects.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import type { EtcdClusterClient } from "./etcd.ts";

/**
 * One thing the bootstrap flavour needs in the workload cluster (kubeadm: its RBAC, the kubeadm-config
 * ClusterConfiguration, kube-proxy's image), as observed. The planner takes the first one not done, in order:
 * `BeforeCreate` ones before it creates a Machine (a joining node reads them), `AfterRollout` ones once every
 * Machine is up to date.
 */
export interface WorkloadStep {
  /** Stable name, the PrepareWorkload action's `step` ("kubeadm-config"). */
  name: string;
  when: "BeforeCreate" | "AfterRollout";
  done: boolean;
  /** What is missing or differs, for the action's reason; empty when done. */
  detail: string;
  /** Quorum cannot do it now (kubeadm init has not uploaded its config yet, a document it must not rewrite): why, and what fixes it. */
  blocked?: string;
}

/** A control-plane component the bootstrap flavour runs on a node (kubeadm: its static pods' mirror Pods). */
export interface ControlPlaneComponent {
  /** The Node it runs on. */
  node: string;
  /** "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd". */
  component: string;
  ready: boolean;
  /** The image its pod runs (kubeadm tags it with the kubernetesVersion of kubeadm-config at the node's join). */
  image?: string;
  /** Where it was seen and, when not ready, why ("pod kube-system/kube-apiserver-ip-10-0-0-1: CrashLoopBackOff: ..."). */
  detail: string;
}

/** The flavour's steps for the current spec, or why they could not be observed. */
export interface WorkloadSteps {
  /** "kubeadm"; absent for a bootstrap provider that needs nothing in the workload cluster. */
  flavour?: string;
  steps: WorkloadStep[];
  /**
   * The control-plane components the flavour knows how to see, for every node that runs one; absent when the flavour
   * cannot see them. A Machine staying in a rollout must have every one of its components ready.
   */
  components?: ControlPlaneComponent[];
  /** The component names every control-plane node runs under this flavour (kubeadm: four static pods). */
  componentNames?: string[];
  /** The flavour's own word that the control plane is initialised (kubeadm: init uploaded kubeadm-config). */
  initialized?: boolean;
  error?: string;
}

/** The bootstrap config template the control plane references, read only when a step needs its contents. */
export type TemplateReader = () => Promise<Unstructured>;

/** A Machine whose API server serving certificate is to be read: it is dialled at `address`. */
export interface ServingMachine {
  name: string;
  /** Cached by name and UID: a Machine recreated under the same name is read again. */
  uid: string;
  /** The Machine's first InternalIP (as etcd endpoints are chosen). */
  address: string;
}

/** When each Machine's certificates expire (epoch ms, by Machine name), and why some could not be read. */
export interface CertificatesExpiries {
  expiries: Record<string, number>;
  /**
   * One line per Machine whose read failed in this call (not repeated while the failure is cached): it keeps an
   * unknown expiry, which rolls nothing out.
   */
  errors: string[];
}

/** A Machine's own API server as dialled at its address (src/adapters/workload/api-server-readiness.ts). */
export interface ApiServerReadiness {
  ready: boolean;
  /** What was dialled and what answered ("https://10.0.0.5:6443/readyz: connect ECONNREFUSED"). */
  detail: string;
}

/** The workload cluster of one QuorumControlPlane: its certificates, its etcd and its Nodes. */
export interface WorkloadAccess {
  /**
   * Creates the cluster's CA/etcd/sa/proxy Secrets when absent and keeps the kubeconfig Secret fresh. New keys are of
   * the type the bootstrap config template's clusterConfiguration.encryptionAlgorithm names; the template is read only
   * when a Secret has to be generated.
   */
  ensureCertificates(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    bootstrapTemplate?: TemplateReader,
  ): Promise<void>;
  /**
   * An etcd client for the cluster, reaching members through the given endpoints (https URLs); close() releases it.
   * `machineNodes`: each control-plane Machine's addresses to its Node's name (status.nodeRef), for reaching a member
   * through the API server when no Node lists the member's address (a kubelet that reports another NIC's address).
   */
  etcd(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    endpoints: string[],
    machineNodes?: ReadonlyMap<string, string>,
  ): Promise<EtcdClusterClient>;
  /**
   * The workload cluster's Nodes the query asks for (all without a label selector), or an error when its API is not
   * reachable (yet).
   */
  nodes(controlPlane: QuorumControlPlane, cluster: Cluster, query?: NodeQuery): Promise<Node[]>;
  /**
   * The bootstrap flavour's workload steps for the control plane's spec (version, template). Never throws: an
   * unreadable workload API is `error`.
   */
  workloadSteps(controlPlane: QuorumControlPlane, cluster: Cluster, template: TemplateReader): Promise<WorkloadSteps>;
  /** Carries out one step, idempotently (a step already done changes nothing); returns what it changed. */
  prepareWorkload(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    step: string,
    template: TemplateReader,
  ): Promise<string>;
  /**
   * When the API server serving certificate of each Machine expires, for a bootstrap flavour whose Machines carry
   * expiring certificates (kubeadm; others answer nothing): a TLS handshake with the Machine's address at the API
   * server port, under a short deadline, cached per Machine. Never throws. Optional: a world without certificates
   * (the simulator's) leaves it out.
   */
  certificatesExpiry?(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    machines: ServingMachine[],
    template: TemplateReader,
  ): Promise<CertificatesExpiries>;
  /**
   * Whether each Machine's own API server serves, for a bootstrap flavour whose Machines run one that Quorum can dial
   * (kubeadm: GET /readyz at the Machine's address and the template's API server port; others answer nothing), by
   * Machine name. Never throws. Optional: the simulator's world has no API servers to dial.
   */
  apiServers?(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    machines: ServingMachine[],
    template: TemplateReader,
  ): Promise<Record<string, ApiServerReadiness>>;
  /** Drops cached clients of a QuorumControlPlane that is gone. */
  forget(namespace: string, clusterName: string): Promise<void>;
}

/**
 * Which Nodes a reconcile reads: those carrying the label `labelSelector` names (every Node when absent), and each
 * Node in `names` the list did not return (read by name; one that does not exist is left out).
 */
export interface NodeQuery {
  /** A label key the Nodes must carry (a Kubernetes label selector of one existence requirement). */
  labelSelector?: string;
  names: readonly string[];
}
