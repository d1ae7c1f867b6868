// The workload cluster's kube-system/kubeadm-config, which the kubeadm-config and coredns steps both write: read, and
// its ClusterConfiguration replaced at the resourceVersion read, so that someone else's edit in between is a conflict
// and the next reconcile re-reads and re-applies.
import type { V1ConfigMap } from "@kubernetes/client-node";
import type { WorkloadCaller } from "../client.ts";
import { CLUSTER_CONFIGURATION_KEY, KUBEADM_CONFIG } from "./cluster-configuration.ts";

export const KUBEADM_CONFIG_WHERE = `ConfigMap ${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name} of the workload cluster`;

/** The ConfigMap, or undefined when kubeadm init has not uploaded it. */
export function readKubeadmConfig(call: WorkloadCaller): Promise<V1ConfigMap | undefined> {
  return call(
    `read ${KUBEADM_CONFIG_WHERE}`,
    (apis, options) => apis.core.readNamespacedConfigMap(KUBEADM_CONFIG, options),
    true,
  );
}

export async function writeClusterConfiguration(
  call: WorkloadCaller,
  configMap: V1ConfigMap,
  document: string,
): Promise<void> {
  const body: V1ConfigMap = { ...configMap, data: { ...configMap.data, [CLUSTER_CONFIGURATION_KEY]: document } };
  await call(`update ${KUBEADM_CONFIG_WHERE}`, (apis, options) =>
    apis.core.replaceNamespacedConfigMap({ ...KUBEADM_CONFIG, body }, options),
  );
}
