// spec.etcd.access: APIServerProxy. Each etcd member is reached over port-forwards through the workload API server to
// its static pod `kube-system/etcd-<node>` (as KCP does), for clouds where the management cluster cannot reach port
// 2379. Per member client URL `https://<host>:<port>` there is one loopback listener (127.0.0.1:0); every TCP
// connection the etcd client makes to it gets its own port-forward (port-forward.ts), so a dead forward is replaced by
// the client's ordinary reconnect. The client still verifies the member's serving certificate for <host> (client.ts
// sets grpc.ssl_target_name_override). The member's Node is the one whose addresses hold its host, from a cached list
// of the control-plane Nodes (kubeadm's label), else the nodeRef of the Machine with that address (machineNode: no
// list is needed, as KCP finds members; and a Node may report another NIC's address than the one etcd advertises).
// Neither known, the list is re-read, at most every relistIntervalMs; only when the address is not among the
// control-plane Nodes (a Node that lost the label, a flavour that does not set it) are all Nodes listed, and of those
// only the ones with a member's address are kept: a workload cluster's thousands of workers are not held. Why a forward
// failed (no Node, pod not found, 403, kubelet unreachable) is kept per member and becomes that member's error.
import { createServer, type Server, type Socket } from "node:net";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Node } from "../../api/capi.ts";
import { errorMessage } from "../kube/log.ts";
import { etcdPodOf, nodeWithAddress, podKey, targetOf, type PodRef, type TunnelTarget } from "./etcd-pods.ts";
import { forwardConnection, refusedStatus } from "./port-forward.ts";
import type { EtcdDialTarget, EtcdTunnel } from "./types.ts";

/** A Node list is at most this fresh when an address is not in it: a new Machine's Node is seen within this. */
export const DEFAULT_NODE_RELIST_INTERVAL_MS = 5_000;

export interface ApiServerTunnelOptions {
  /** The workload API server, for messages. */
  server: string;
  /** The workload cluster's KubeConfig, asked for each port-forward (its client certificate is renewed under it). */
  kubeConfig: () => Promise<KubeConfig>;
  /** "control-plane": the Nodes with kubeadm's control-plane label; "all": every Node, asked only on a miss. */
  listNodes: (scope: NodeScope) => Promise<Node[]>;
  /**
   * The Node (its name) of the Machine that has address `host`, by the Machine's status.nodeRef: a member is found
   * through it when no Node lists the member's address (kubeadm advertises etcd on one NIC, the kubelet reports
   * another's as the Node's InternalIP), as KCP finds members by their Machines' Nodes.
   */
  machineNode?: (host: string) => string | undefined;
  /** Whether a pod exists (undefined when that cannot be read): tells "pod not found" from other 404s. */
  podExists: (pod: PodRef) => Promise<boolean | undefined>;
  /** How long a port-forward may take to open (the etcd call deadline: a slower one is useless). */
  openTimeoutMs: number;
  relistIntervalMs?: number;
  /** Milliseconds; replaced by tests. */
  now?: () => number;
}

export type NodeScope = "control-plane" | "all";

/** A member's Node, and how it was found: one of its addresses is the member's host, or its Machine's is. */
interface FoundNode {
  name: string;
  via: "address" | "machine";
}

interface Failure {
  at: number;
  why: string;
}

export class ApiServerTunnel implements EtcdTunnel {
  readonly fix =
    "check that the workload API server is reachable, that each member's Node is registered and runs the static pod " +
    "kube-system/etcd-<node>, and that the API server can reach that Node's kubelet";
  private readonly listeners = new Map<string, Promise<{ server: Server; port: number }>>();
  /** Every member host dialled: an all-Nodes list keeps the Node with each one's address. */
  private readonly hosts = new Set<string>();
  private readonly sockets = new Set<Socket>();
  /** Per member host:port: why its last port-forward failed, and the pod it went to. */
  private readonly failures = new Map<string, Failure>();
  private readonly pods = new Map<string, PodRef>();
  /** The control-plane Nodes, and of every Node those with a member's address that are not among them. */
  private nodes: Node[] = [];
  private strays: Node[] = [];
  /** How many Nodes the last lists returned, for messages. */
  private listedCount = 0;
  private listedAt = Number.NEGATIVE_INFINITY;
  private listing: Promise<Node[]> | undefined;
  private listError: string | undefined;
  /** A port-forward to the cached Node's pod got a 404: re-list before trusting the cache again. */
  private stale = false;
  private closed = false;
  private readonly now: () => number;
  private readonly relistIntervalMs: number;

  constructor(private readonly options: ApiServerTunnelOptions) {
    this.now = options.now ?? Date.now;
    this.relistIntervalMs = options.relistIntervalMs ?? DEFAULT_NODE_RELIST_INTERVAL_MS;
  }

  async dial(endpoint: string): Promise<EtcdDialTarget> {
    if (this.closed) throw new Error(`the tunnel through ${this.options.server} is closed`);
    const url = new URL(endpoint);
    const target = targetOf(endpoint);
    const key = keyOf(target);
    this.hosts.add(target.host);
    let listener = this.listeners.get(key);
    if (!listener) {
      listener = this.listen(target);
      this.listeners.set(key, listener);
      listener.catch(() => this.listeners.delete(key));
    }
    const { port } = await listener;
    return { url: `${url.protocol}//127.0.0.1:${port}`, servername: target.host };
  }

  explain(endpoint: string, sinceMs: number, cause: string): string {
    const key = keyOf(targetOf(endpoint));
    const failure = this.failures.get(key);
    if (failure && failure.at >= sinceMs)
      return `etcd member at ${endpoint} not reachable through the workload API server ${this.options.server}: ${failure.why}`;
    const pod = this.pods.get(key);
    return pod
      ? `etcd member at ${endpoint} did not answer through the port-forward to pod ${podKey(pod)} (${cause})`
      : `etcd member at ${endpoint} did not answer through the workload API server ${this.options.server} (${cause})`;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.sockets) socket.destroy();
    const listeners = [...this.listeners.values()];
    this.listeners.clear();
    await Promise.all(
      listeners.map(async (listener) => {
        const { server } = await listener.catch(() => ({ server: undefined }));
        await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      }),
    );
  }

  private async listen(target: TunnelTarget): Promise<{ server: Server; port: number }> {
    // noDelay: the tunnel writes each WebSocket message to the client's socket as it comes; with Nagle on, a small
    // write behind an unacknowledged one waited for the delayed ACK, ~40 ms in most healthy rounds (bench/README.md).
    const server = createServer({ noDelay: true }, (socket) => void this.accept(target, socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("loopback listener has no port");
    return { server, port: address.port };
  }

  /** One connection of the etcd client: one port-forward, or a recorded reason why there is none. */
  private async accept(target: TunnelTarget, socket: Socket): Promise<void> {
    const key = keyOf(target);
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    if (this.closed) return void socket.destroy();
    let pod: PodRef | undefined;
    let node: FoundNode | undefined;
    try {
      node = await this.nodeFor(target.host);
      pod = etcdPodOf(node.name);
      this.pods.set(key, pod);
      const forwardTo = `port-forward to pod ${podKey(pod)} (node ${node.name}) port ${target.port}`;
      await forwardConnection(await this.options.kubeConfig(), pod, target.port, socket, {
        openTimeoutMs: this.options.openTimeoutMs,
        onBroken: (why) => this.fail(key, `${forwardTo}: ${why}`),
      });
    } catch (error) {
      // Recorded before the socket goes, so the call that fails on it finds the reason.
      this.fail(key, await this.refusal(error, target, node, pod));
      socket.destroy();
    }
  }

  private fail(key: string, why: string): void {
    this.failures.set(key, { at: this.now(), why });
  }

  /** Why a port-forward could not be opened, naming the pod and what the API server answered. */
  private async refusal(error: unknown, target: TunnelTarget, found?: FoundNode, pod?: PodRef): Promise<string> {
    const message = errorMessage(error);
    if (!pod || !found) return message;
    const node = found.name;
    const whose =
      found.via === "address"
        ? `Node ${node} has the member's address ${target.host}`
        : `Node ${node} is the nodeRef of the Machine with the member's address ${target.host}`;
    const forwardTo = `the port-forward to pod ${podKey(pod)} (node ${node}) port ${target.port}`;
    const status = refusedStatus(message);
    if (status === 404) {
      // The Node may have been replaced under the same address: look again (rate-limited) on the next connection.
      this.stale = true;
      if ((await this.options.podExists(pod).catch(() => undefined)) === false)
        return (
          `${forwardTo} failed: pod ${podKey(pod)} not found (HTTP 404): ${whose}, and kubeadm runs etcd there as ` +
          `the static pod etcd-${node}; check that it is a kubeadm ` +
          "control-plane node whose kubelet runs etcd, or set spec.etcd.access: Direct"
        );
    }
    if (status === 403)
      return (
        `${forwardTo} was refused (HTTP 403 Forbidden): the workload cluster's credentials need "create" on ` +
        `"pods/portforward" in namespace ${pod.namespace}; grant it with an RBAC Role and RoleBinding to the ` +
        "kubeconfig's user, or let Quorum use its own certificate (the <cluster>-ca Secret with its key)"
      );
    if (status !== undefined)
      return (
        `${forwardTo} failed: the API server answered HTTP ${status}; it could not reach the kubelet of node ${node} ` +
        "or the pod is not running: check that node's kubelet and the pod's status"
      );
    return `${forwardTo} failed: ${message}`;
  }

  /** The member's Node (cachedNode); on a miss the Nodes are re-listed, at most every interval. */
  private async nodeFor(host: string): Promise<FoundNode> {
    const cached = this.cachedNode(host);
    if (cached && !this.stale) return cached;
    if (this.now() - this.listedAt >= this.relistIntervalMs) await this.relist(host);
    const found = this.cachedNode(host);
    if (found) return found;
    if (this.listError)
      throw new Error(`the workload cluster's Nodes could not be listed to find the member's pod: ${this.listError}`);
    throw new Error(
      `no Node of the workload cluster has the address ${host} (${this.listedCount} Nodes listed) and no Machine with ` +
        "that address has a Node (status.nodeRef), so the member's pod kube-system/etcd-<node> cannot be named: wait " +
        "for the Machine's Node to register, or set spec.etcd.access: Direct if the management cluster can reach the " +
        "members",
    );
  }

  /** By the Nodes' addresses first; else by the nodeRef of the Machine with that address. */
  private cachedNode(host: string): FoundNode | undefined {
    const byAddress = nodeWithAddress(this.nodes, host) ?? nodeWithAddress(this.strays, host);
    if (byAddress) return { name: byAddress, via: "address" };
    const ofMachine = this.options.machineNode?.(host);
    return ofMachine ? { name: ofMachine, via: "machine" } : undefined;
  }

  /** Lists the control-plane Nodes; every Node only when `host` is not among them. */
  private async relist(host: string): Promise<void> {
    this.listing ??= (async () => {
      try {
        this.nodes = await this.options.listNodes("control-plane");
        this.listedCount = this.nodes.length;
        if (!nodeWithAddress(this.nodes, host)) {
          const all = await this.options.listNodes("all");
          const listed = new Set(this.nodes.map((node) => node.metadata.name));
          const others = all.filter((node) => !listed.has(node.metadata.name));
          const kept = new Set([host, ...this.hosts].map((one) => nodeWithAddress(others, one)));
          this.strays = others.filter((node) => kept.has(node.metadata.name));
          this.listedCount = all.length;
        }
        this.listError = undefined;
        this.stale = false;
      } catch (error) {
        this.listError = errorMessage(error);
      } finally {
        // A failed list is rate-limited too: every connection of every round would otherwise ask again.
        this.listedAt = this.now();
        this.listing = undefined;
      }
      return this.nodes;
    })();
    await this.listing;
  }
}

function keyOf(target: TunnelTarget): string {
  return `${target.host}:${target.port}`;
}
