// kube-system/kubeadm-config's ClusterConfiguration as kubeadm init uploads it (kubeadm.k8s.io/v1beta4, its defaults
// filled in), as kubeadm 1.36 wrote it after CABPK's init from the sample KubeadmConfigTemplate
// (config/samples/cluster-kubeadm.yaml): what a joining node renders its static pods from (issue 17). No imports, so
// the simulator uses it too.

export interface UploadedClusterConfiguration {
  clusterName: string;
  kubernetesVersion: string;
  controlPlaneEndpoint: string;
  /** The template's apiServer.certSANs (the sample's: localhost, 127.0.0.1). */
  certSANs?: readonly string[];
}

export function uploadedClusterConfiguration(config: UploadedClusterConfiguration): string {
  const certSANs = config.certSANs ?? ["localhost", "127.0.0.1"];
  return `apiServer:
  certSANs:
${certSANs.map((san) => `  - ${san}`).join("\n")}
apiVersion: kubeadm.k8s.io/v1beta4
caCertificateValidityPeriod: 87600h0m0s
certificateValidityPeriod: 8760h0m0s
certificatesDir: /etc/kubernetes/pki
clusterName: ${config.clusterName}
controlPlaneEndpoint: ${config.controlPlaneEndpoint}
controllerManager: {}
dns: {}
encryptionAlgorithm: RSA-2048
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: ${config.kubernetesVersion}
networking:
  dnsDomain: cluster.local
  serviceSubnet: 10.96.0.0/12
proxy: {}
scheduler: {}
`;
}
