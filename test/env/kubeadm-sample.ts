// The KubeadmConfigTemplate of config/samples/cluster-kubeadm.yaml: what users copy, so the integration test and the
// kubeadm e2e scenario bootstrap their Machines from exactly it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "./tools.ts";

export interface KubeadmConfigTemplateObject {
  apiVersion: string;
  kind: string;
  spec: Record<string, unknown>;
}

export function sampleKubeadmConfigTemplate(): KubeadmConfigTemplateObject {
  const path = join(repoRoot, "config/samples/cluster-kubeadm.yaml");
  const template = parseAllDocuments(readFileSync(path, "utf8"))
    .map((doc) => doc.toJS() as KubeadmConfigTemplateObject)
    .find((object) => object.kind === "KubeadmConfigTemplate");
  if (!template) throw new Error(`${path} has no KubeadmConfigTemplate`);
  return { apiVersion: template.apiVersion, kind: template.kind, spec: template.spec };
}

/**
 * kube-system/kubeadm-config's ClusterConfiguration as kubeadm v1.36.3 uploads it after CABPK's init from the sample
 * template, defaults included (what a joining node renders its static pods from; issue 17).
 */
export function uploadedClusterConfiguration(clusterName = "demo"): string {
  return `apiServer:
  certSANs:
  - localhost
  - 127.0.0.1
apiVersion: kubeadm.k8s.io/v1beta4
caCertificateValidityPeriod: 87600h0m0s
certificateValidityPeriod: 8760h0m0s
certificatesDir: /etc/kubernetes/pki
clusterName: ${clusterName}
controlPlaneEndpoint: 10.200.1.254:6443
controllerManager: {}
dns: {}
encryptionAlgorithm: RSA-2048
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
networking:
  dnsDomain: cluster.local
  serviceSubnet: 10.96.0.0/12
proxy: {}
scheduler: {}
`;
}
