// Which pod serves an etcd client URL in a kubeadm workload cluster: the member's host is an address of one Node, and
// kubeadm runs etcd there as the static pod whose mirror is `kube-system/etcd-<node name>` (KCP finds it the same way).
// Pure, so the resolution is tested without a cluster.
import type { Node } from "../../api/capi.ts";

export const ETCD_POD_NAMESPACE = "kube-system";

/** What a port-forward goes to: the member's host and port, as its client URL has them. */
export interface TunnelTarget {
  /** IP or DNS name, without IPv6 brackets. */
  host: string;
  port: number;
}

export interface PodRef {
  namespace: string;
  name: string;
}

/** Host and port of `https://<host>:<port>`; the port defaults to etcd's 2379 as etcd's own clients do. */
export function targetOf(endpoint: string): TunnelTarget {
  const url = new URL(endpoint);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return { host, port: url.port === "" ? 2379 : Number(url.port) };
}

/**
 * The Node one of whose status.addresses is `host` (any type: InternalIP, ExternalIP, Hostname), or undefined. When
 * several claim it (a stale Node beside its replacement) the one that is not being deleted wins, then the first by name.
 */
export function nodeWithAddress(nodes: readonly Node[], host: string): string | undefined {
  const wanted = host.toLowerCase();
  const claimants = nodes
    .filter((node) => (node.status?.addresses ?? []).some((address) => address.address.toLowerCase() === wanted))
    .sort(
      (a, b) =>
        Number(Boolean(a.metadata.deletionTimestamp)) - Number(Boolean(b.metadata.deletionTimestamp)) ||
        a.metadata.name.localeCompare(b.metadata.name),
    );
  return claimants[0]?.metadata.name;
}

/** kubeadm's static etcd pod on a Node, as its mirror pod is named in the API. */
export function etcdPodOf(nodeName: string): PodRef {
  return { namespace: ETCD_POD_NAMESPACE, name: `etcd-${nodeName}` };
}

export function podKey(pod: PodRef): string {
  return `${pod.namespace}/${pod.name}`;
}
