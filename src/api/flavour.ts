// Which bootstrap flavour a control plane's Machines use, from the kind of its bootstrap config template. A flavour
// is what the bootstrap provider needs in the workload cluster (src/adapters/workload/kubeadm/flavour.ts) and how its
// Machines are best removed; the generic one (Quorum's own process bootstrap, or any provider it does not know) needs
// nothing there.
import { GENERIC_MEMBER_REMOVAL, type EtcdAccess, type MemberRemoval } from "./constants.ts";
import type { QuorumControlPlane } from "./types.ts";
import { minorOf } from "./version.ts";

export const KUBEADM_BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io";

export type Flavour = "kubeadm" | "generic";

export function flavourOf(controlPlane: QuorumControlPlane): Flavour {
  const ref = controlPlane.spec.machineTemplate.spec.bootstrapConfigTemplateRef;
  const group = ref.apiGroup ?? ref.apiVersion?.split("/")[0];
  return group === KUBEADM_BOOTSTRAP_GROUP && ref.kind === "KubeadmConfigTemplate" ? "kubeadm" : "generic";
}

/**
 * spec.rollout.strategy.rollingUpdate.memberRemoval when the spec leaves it unset. kubeadm ≥ 1.31 points a
 * control-plane node's kubelet at its local API server (the kubelet local mode, GA in 1.36): removing the node's etcd
 * member first stops that API server, and the kubelet can then neither confirm its pods' eviction nor report, so the
 * drain waits out the node's grace period. KCP therefore removes the member in the pre-terminate hook, after the
 * drain; so does Quorum for kubeadm Machines from 1.31 on (AfterDrain). Others keep the default (BeforeDelete).
 */
export function defaultMemberRemoval(controlPlane: QuorumControlPlane): MemberRemoval {
  if (flavourOf(controlPlane) !== "kubeadm") return GENERIC_MEMBER_REMOVAL;
  const minor = minorOf(controlPlane.spec.version);
  return minor !== undefined && minor >= 31 ? "AfterDrain" : GENERIC_MEMBER_REMOVAL;
}

/**
 * spec.etcd.access when the spec leaves it unset. kubeadm runs etcd as the static pod `etcd-<node>`, so its members
 * can be reached through the workload API server, which is often the only port of a cloud cluster the management
 * cluster can reach (KCP never dials members directly). Other bootstraps may run etcd outside any pod: Direct.
 */
export function defaultEtcdAccess(controlPlane: QuorumControlPlane): EtcdAccess {
  return flavourOf(controlPlane) === "kubeadm" ? "APIServerProxy" : "Direct";
}

/** The etcd access mode in effect: the spec's, else the flavour's default. */
export function etcdAccessOf(controlPlane: QuorumControlPlane): EtcdAccess {
  return controlPlane.spec.etcd?.access ?? defaultEtcdAccess(controlPlane);
}
