// Which bootstrap templates Quorum cannot run a control plane from. Quorum manages stacked etcd: each Machine's
// member is added, promoted, health-checked and removed by Quorum. A kubeadm ClusterConfiguration with etcd.external
// puts etcd elsewhere, so no Machine ever gets a member and Quorum would wait for one forever (issue 15, item 6);
// KCP supports external etcd by skipping its etcd steps, Quorum has nothing to offer such a cluster.
import type { Unstructured } from "../api/objects.ts";

/** The field that makes `template` unusable and why, or undefined when Quorum can create Machines from it. */
export function unsupportedBootstrapTemplate(template: Unstructured): string | undefined {
  const inner = record(template.spec?.template);
  const clusterConfiguration = record(record(inner?.spec)?.clusterConfiguration);
  const external = record(clusterConfiguration?.etcd)?.external;
  if (external === undefined || external === null) return undefined;
  const namespace = template.metadata.namespace ? `${template.metadata.namespace}/` : "";
  return (
    `${template.kind} ${namespace}${template.metadata.name} sets spec.template.spec.clusterConfiguration.etcd.external: ` +
    "Quorum runs stacked etcd (one member on each control-plane Machine) and cannot manage an external etcd; " +
    "remove etcd.external (kubeadm then runs etcd on each Machine) or use a control-plane provider for external etcd"
  );
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
