// The workload-cluster port: certificates, etcd and Nodes of one QuorumControlPlane's cluster.
import type { Cluster, Node } from "../api/capi.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import type { EtcdClusterClient } from "./etcd.ts";

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
