// What one reconcile needs from the outside world, as interfaces: the real adapters implement them, and so can
// a test double. Keeps src/controller free of transport details.
import type { Cluster, Machine, Node } from "../api/capi.ts";
import type { ObjectRef, QuorumControlPlane, QuorumControlPlaneStatus } from "../api/types.ts";
import type { EtcdClusterClient } from "../adapters/etcd/types.ts";
import type { Unstructured } from "./machine-factory.ts";

export interface ManagementApi {
  getControlPlane(namespace: string, name: string): Promise<QuorumControlPlane | undefined>;
  getCluster(namespace: string, name: string): Promise<Cluster | undefined>;
  /**
   * Machines labelled with this control plane's name and, given a Cluster, every control-plane Machine of that
   * Cluster (concernsControlPlane in src/api/ownership.ts): the caller tells its own from the others (claimMachines).
   */
  listControlPlaneMachines(namespace: string, controlPlaneName: string, clusterName?: string): Promise<Machine[]>;
  getReferenced(ref: ObjectRef, namespace: string, referencedBy: string): Promise<Unstructured>;
  createIfAbsent(object: { apiVersion?: string; kind?: string; metadata: { name: string; namespace?: string } }): Promise<"created" | "exists">;
  deleteMachine(namespace: string, name: string): Promise<void>;
  /** Returns the resourceVersion the patch produced, when the answer tells it. */
  patchAnnotations(apiVersion: string, kind: string, namespace: string, name: string, annotations: Record<string, string | null>, resourceVersion?: string): Promise<string | undefined>;
  /** Sets metadata.finalizers with the resourceVersion precondition of the object passed in. */
  setFinalizers(controlPlane: QuorumControlPlane, finalizers: string[]): Promise<string | undefined>;
  patchStatus(controlPlane: QuorumControlPlane, status: Record<string, unknown>): Promise<QuorumControlPlane>;
  event(controlPlane: QuorumControlPlane, type: "Normal" | "Warning", reason: string, message: string, now: Date): Promise<void>;
}

/** The workload cluster of one QuorumControlPlane: its certificates, its etcd and its Nodes. */
export interface WorkloadAccess {
  /** Creates the cluster's CA/etcd/sa/proxy Secrets when absent and keeps the kubeconfig Secret fresh. */
  ensureCertificates(controlPlane: QuorumControlPlane, cluster: Cluster): Promise<void>;
  /** An etcd client for the cluster, reaching members through the given endpoints (https URLs); close() releases it. */
  etcd(controlPlane: QuorumControlPlane, cluster: Cluster, endpoints: string[]): Promise<EtcdClusterClient>;
  /** The workload cluster's Nodes, or an error when its API is not reachable (yet). */
  nodes(controlPlane: QuorumControlPlane, cluster: Cluster): Promise<Node[]>;
  /** Drops cached clients of a QuorumControlPlane that is gone. */
  forget(namespace: string, clusterName: string): Promise<void>;
}
