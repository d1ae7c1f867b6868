// RBAC that newer kubeadm expects in a cluster an older kubeadm initialised, created before a Machine of the target
// version joins, as KCP's EnsureKubeadmPermissions does (CAPI v1.14 controlplane/kubeadm/pkg/workload_cluster_rbac.go):
// kubeadm upgrade would create them, but a rollout never runs kubeadm upgrade. Pure: which bindings a version needs.
import type { V1ClusterRoleBinding } from "@kubernetes/client-node";
import { minorOf } from "../../../api/version.ts";

/**
 * The ClusterRoleBindings a control plane at `version` needs. kubeadm init creates them itself from the minor that
 * introduced them (1.29 and 1.37), and KCP stops ensuring them from 1.38, assuming a 1.37 step in between; but a
 * spec moved 1.36 → 1.37 → 1.38 before the first rollout finished takes Machines from 1.36 straight to 1.38 (found by
 * the simulator), so Quorum ensures them for every version from 1.29.
 */
export function kubeadmBindings(version: string): V1ClusterRoleBinding[] {
  const minor = minorOf(version);
  if (minor === undefined || minor < 29) return [];
  return [
    // kubeadm 1.29 split its admin credential from system:masters: admin.conf is in group kubeadm:cluster-admins.
    binding("kubeadm:cluster-admins", "cluster-admin", { kind: "Group", name: "kubeadm:cluster-admins" }),
    // kubeadm 1.37 narrowed the API server's kubelet client credential to this role: without it exec, logs and
    // port-forward fail once a 1.37 API server runs.
    binding("kubeadm:apiserver-kubelet-client", "system:kubelet-api-admin", {
      kind: "User",
      name: "kube-apiserver-kubelet-client",
    }),
  ];
}

function binding(name: string, role: string, subject: { kind: string; name: string }): V1ClusterRoleBinding {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", ...subject }],
  };
}
