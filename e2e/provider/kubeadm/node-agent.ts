// What the kubelet does in the API with the node's credentials: register the Node (once), keep it alive (status
// conditions every 10 s and the kube-node-lease Lease, renewed every 10 s for 40 s, as the kubelet's defaults) so the
// node lifecycle controller never marks it NotReady, mirror each static pod as a Pod, and finish the deletion of any
// other pod bound to the node (it runs no containers for them; a drain's evictions wait on it). Every call is allowed to
// a node by the Node authorizer and the NodeRestriction admission plugin that kubeadm enables.
import { arch, cpus, hostname, release, totalmem } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import { kubeRequest, statusMessage, type KubeRequestOptions } from "../../../test/env/kube.ts";
import type { RunningPod } from "./pod-supervisor.ts";
import {
  CONFIG_MIRROR_ANNOTATION,
  mirrorPod,
  mirrorPodName,
  mirrorPodStatus,
  type NodeIdentity,
} from "./static-pods.ts";

export interface NodeAgentOptions {
  nodeName: string;
  providerID: string;
  nodeIP: string;
  /** e.g. "v1.37.2": the version of the kube-apiserver the node runs. */
  kubeletVersion: string;
  /** The kubelet's port, reported in status.daemonEndpoints: kube-apiserver's pods/portforward proxies to it. */
  kubeletPort?: number;
  log: (line: string) => void;
}

/** Go's metav1.MicroTime wants exactly six fractional digits. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function goArch(): string {
  return (
    ({ x64: "amd64", arm64: "arm64", arm: "arm", ppc64: "ppc64le", s390x: "s390x" } as Record<string, string>)[
      arch()
    ] ?? arch()
  );
}

/** The Node the kubelet registers (kubelet_node_status.go initialNode), before kubeadm's mark-control-plane. */
export function nodeObject(options: NodeAgentOptions): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: options.nodeName,
      labels: {
        "kubernetes.io/hostname": options.nodeName,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": goArch(),
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": goArch(),
      },
      annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
    },
    spec: { providerID: options.providerID },
  };
}

/** The status the kubelet reports: Ready, no pressure, the node's addresses, capacity and versions. */
export function nodeStatus(options: NodeAgentOptions, now: Date, since: Date): Record<string, unknown> {
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    lastTransitionTime: since.toISOString().replace(/\.\d{3}Z$/, "Z"),
  });
  const capacity = {
    cpu: String(cpus().length),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    pods: "110",
    "ephemeral-storage": "20Gi",
  };
  return {
    conditions: [
      condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
      condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
      condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
      condition("Ready", "True", "KubeletReady", "process kubelet is posting ready status"),
    ],
    addresses: [
      { type: "InternalIP", address: options.nodeIP },
      { type: "Hostname", address: options.nodeName },
    ],
    capacity,
    allocatable: capacity,
    daemonEndpoints: { kubeletEndpoint: { Port: options.kubeletPort ?? 10250 } },
    nodeInfo: {
      machineID: "",
      systemUUID: "",
      bootID: "",
      kernelVersion: release(),
      osImage: `process kubelet on ${hostname()}`,
      containerRuntimeVersion: "process://1.0.0",
      kubeletVersion: options.kubeletVersion,
      operatingSystem: "linux",
      architecture: goArch(),
    },
  };
}

export class NodeAgent {
  private node: NodeIdentity | undefined;
  private readonly since = new Date();
  /** Mirror pods created by this kubelet, by name, with the status last sent (to patch only on change). */
  private readonly sentStatus = new Map<string, string>();
  private lastProblem = "";

  constructor(
    private readonly client: () => KubeConfig,
    private options: NodeAgentOptions,
  ) {}

  /** Reports another version from the next heartbeat on; true when it changed. */
  setKubeletVersion(version: string): boolean {
    if (version === this.options.kubeletVersion) return false;
    this.options.log(`nodeInfo.kubeletVersion ${this.options.kubeletVersion} -> ${version}`);
    this.options = { ...this.options, kubeletVersion: version };
    return true;
  }

  private request<T>(path: string, options: KubeRequestOptions = {}) {
    return kubeRequest<T>(this.client(), path, { timeoutMs: 10_000, ...options });
  }

  /** Logs a failure once until it changes: a kubelet retrying every second must not flood its log. */
  private problem(message: string): void {
    if (message !== this.lastProblem) this.options.log(`ERROR ${message}`);
    this.lastProblem = message;
  }

  /** Creates the Node, or adopts the existing one (its labels and taints stay: kubeadm's mark-control-plane owns them). */
  async register(): Promise<boolean> {
    const { nodeName } = this.options;
    const path = `/api/v1/nodes/${nodeName}`;
    let response = await this.request<{ metadata: { uid: string } }>(path);
    if (response.status === 404) {
      response = await this.request("/api/v1/nodes", { body: nodeObject(this.options) });
      if (response.status === 409) response = await this.request(path);
    }
    if (response.status !== 200 && response.status !== 201) {
      this.problem(`register Node ${nodeName}: HTTP ${response.status}: ${statusMessage(response)}`);
      return false;
    }
    this.node = { name: nodeName, uid: response.body.metadata.uid };
    this.options.log(
      `${response.status === 201 ? "registered" : "found"} Node ${nodeName} (uid ${this.node.uid}, ` +
        `providerID ${this.options.providerID}, InternalIP ${this.options.nodeIP})`,
    );
    await this.heartbeat();
    return true;
  }

  /** Node status conditions and the Lease, both as the kubelet renews them. */
  async heartbeat(now = new Date()): Promise<void> {
    const node = this.node;
    if (!node) return;
    const status = await this.request(`/api/v1/nodes/${node.name}/status`, {
      method: "PATCH",
      patchType: "strategic",
      body: { status: nodeStatus(this.options, now, this.since) },
    });
    if (status.status !== 200)
      this.problem(`Node ${node.name} status: HTTP ${status.status}: ${statusMessage(status)}`);
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node.name}`;
    const spec = { holderIdentity: node.name, leaseDurationSeconds: 40, renewTime: microTime(now) };
    let lease = await this.request(leasePath, { method: "PATCH", body: { spec } });
    if (lease.status === 404) {
      lease = await this.request("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
        body: {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: {
            name: node.name,
            namespace: "kube-node-lease",
            ownerReferences: [{ apiVersion: "v1", kind: "Node", name: node.name, uid: node.uid }],
          },
          spec,
        },
      });
    }
    if (lease.status !== 200 && lease.status !== 201) {
      this.problem(`Lease kube-node-lease/${node.name}: HTTP ${lease.status}: ${statusMessage(lease)}`);
    }
  }

  /**
   * Brings the mirror Pods in line with the static pods: creates missing ones, replaces one whose config.mirror hash
   * is not the manifest's, deletes those whose manifest is gone, and patches each one's status when it changed.
   */
  async syncMirrorPods(pods: RunningPod[]): Promise<void> {
    const node = this.node;
    if (!node) return;
    const wanted = new Map(
      pods.map((running) => [`${running.pod.namespace}/${mirrorPodName(running.pod, node.name)}`, running]),
    );
    type PodList = {
      items: {
        metadata: {
          name: string;
          namespace: string;
          uid: string;
          annotations?: Record<string, string>;
          deletionTimestamp?: string;
        };
      }[];
    };
    // The Node authorizer lets a node list pods only with this field selector.
    const list = await this.request<PodList>(
      `/api/v1/pods?fieldSelector=spec.nodeName%3D${encodeURIComponent(node.name)}`,
    );
    if (list.status !== 200) {
      this.problem(`list pods on ${node.name}: HTTP ${list.status}: ${statusMessage(list)}`);
      return;
    }
    const existing = new Map<string, PodList["items"][number]>();
    for (const item of list.body.items) {
      const key = `${item.metadata.namespace}/${item.metadata.name}`;
      const hash = item.metadata.annotations?.[CONFIG_MIRROR_ANNOTATION];
      if (hash === undefined) {
        // A pod the scheduler bound here (CoreDNS, say). This kubelet runs no containers for it, but it finishes a
        // deletion as a kubelet does once the containers stopped: without that, an eviction (a drain) waits forever.
        if (item.metadata.deletionTimestamp)
          await this.deletePod(item.metadata.namespace, item.metadata.name, item.metadata.uid, "terminating");
        continue;
      }
      const running = wanted.get(key);
      if (running && hash === running.pod.hash) existing.set(key, item);
      else
        await this.deletePod(
          item.metadata.namespace,
          item.metadata.name,
          item.metadata.uid,
          running ? "outdated" : "manifest gone",
        );
    }
    for (const [key, running] of wanted) {
      const name = mirrorPodName(running.pod, node.name);
      if (!existing.has(key)) {
        const created = await this.request(`/api/v1/namespaces/${running.pod.namespace}/pods`, {
          body: mirrorPod(running.pod, node),
        });
        if (created.status !== 201) {
          this.problem(`create mirror pod ${key}: HTTP ${created.status}: ${statusMessage(created)}`);
          continue;
        }
        this.sentStatus.delete(key);
        this.options.log(`created mirror pod ${key} (hash ${running.pod.hash})`);
      }
      const status = mirrorPodStatus(running.pod, running.state, this.options.nodeIP, running.startTime);
      const text = JSON.stringify(status);
      if (this.sentStatus.get(key) === text) continue;
      const patched = await this.request(`/api/v1/namespaces/${running.pod.namespace}/pods/${name}/status`, {
        method: "PATCH",
        body: { status },
      });
      if (patched.status === 200) this.sentStatus.set(key, text);
      else this.problem(`status of mirror pod ${key}: HTTP ${patched.status}: ${statusMessage(patched)}`);
    }
  }

  private async deletePod(namespace: string, name: string, uid: string, why: string): Promise<void> {
    // Grace period 0, as the kubelet deletes mirror pods and pods whose containers stopped: a bound pod's default grace would leave it terminating
    // for 30 s, waiting for a kubelet to confirm, and block its replacement. The query parameter is what the
    // API server honours here; the body carries the UID precondition (never delete a newer pod of the same name).
    const response = await this.request(`/api/v1/namespaces/${namespace}/pods/${name}?gracePeriodSeconds=0`, {
      method: "DELETE",
      body: { apiVersion: "meta.k8s.io/v1", kind: "DeleteOptions", gracePeriodSeconds: 0, preconditions: { uid } },
    });
    this.sentStatus.delete(`${namespace}/${name}`);
    if (response.status === 200 || response.status === 404)
      this.options.log(`deleted pod ${namespace}/${name} (${why})`);
    else this.problem(`delete pod ${namespace}/${name}: HTTP ${response.status}: ${statusMessage(response)}`);
  }
}
