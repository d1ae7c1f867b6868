// Which bootstrap flavour a control plane's Machines use, from the kind of its bootstrap config template. A flavour
// is what the bootstrap provider needs in the workload cluster (src/adapters/workload/kubeadm/flavour.ts); the
// generic one (Quorum's own process bootstrap, or any provider it does not know) needs nothing there.
import type { QuorumControlPlane } from "../../api/types.ts";

export const KUBEADM_BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io";

export type Flavour = "kubeadm" | "generic";

export function flavourOf(controlPlane: QuorumControlPlane): Flavour {
  const ref = controlPlane.spec.machineTemplate.spec.bootstrapConfigTemplateRef;
  const group = ref.apiGroup ?? ref.apiVersion?.split("/")[0];
  return group === KUBEADM_BOOTSTRAP_GROUP && ref.kind === "KubeadmConfigTemplate" ? "kubeadm" : "generic";
}
