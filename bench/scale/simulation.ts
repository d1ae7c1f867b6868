// SIMULATION — an in-process stand-in for the workload side of many clusters: their etcd and their Nodes.
// The scale benchmark runs the real controller (Manager, informers, queue, reconcile, planner, executors, the
// real certificate Secrets) against a real kube-apiserver; only what lives inside each workload cluster is
// simulated here, because 1,000 clusters × 3 real etcd members do not fit on the benchmark machine.
//
// The model follows what the real pieces do, as seen through the EtcdClusterClient and WorkloadAccess ports:
//  - etcd is reached through the Machines' addresses. The first address seen for an unknown cluster starts it
//    (kubeadm init: one voter, the leader). A later Machine whose address shows up next to a known one joins
//    it as a learner (kubeadm join); the controller promotes it. A removed member's address never rejoins.
//  - member names are node names, derived from the address like cloud node names (ip-10-0-0-5), so that the
//    bench's infrastructure loop can set the same name as the Machine's nodeRef.
//  - the raft index moves on every status call, as it does in a live cluster (leases, events), so "no write
//    at idle" is tested against a moving etcd and not a frozen one.
//  - every call costs `latencyMs` of waiting (not CPU), for the network round trip a real call would take.
import { setTimeout as sleep } from "node:timers/promises";
import type { Cluster, Node } from "../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import type {
  AddMemberOptions,
  EtcdAlarm,
  EtcdClientOptions,
  EtcdClusterClient,
  EtcdMember,
  EtcdMemberStatus,
  PromoteResult,
} from "../../src/adapters/etcd/types.ts";
import type { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import type { TemplateReader, WorkloadAccess, WorkloadSteps } from "../../src/ports/index.ts";

/** The simulated node (and etcd member) name of the Machine at `address`, like cloud providers name nodes. */
export function simulatedNodeName(address: string): string {
  return `ip-${address.replace(/[.:]/g, "-")}`;
}

const ETCD_VERSION = "3.5.21";

interface SimulatedMember {
  id: string;
  address: string;
  /** False from member add until the Machine at that address runs (its address appears in the endpoints). */
  started: boolean;
  learner: boolean;
}

class SimulatedEtcdCluster {
  readonly members: SimulatedMember[] = [];
  readonly retiredAddresses = new Set<string>();
  leaderId = "";
  raftIndex = 1000;
  private nextId: bigint;

  constructor(seed: number) {
    // etcd member IDs are uint64; decimal strings like the real adapter returns.
    this.nextId = 0x1000_0000_0000n * BigInt(seed + 1);
  }

  add(address: string, options: { learner: boolean; started: boolean }): SimulatedMember {
    const member: SimulatedMember = {
      id: String(this.nextId++),
      address,
      started: options.started,
      learner: options.learner,
    };
    this.members.push(member);
    if (!this.leaderId && !member.learner) this.leaderId = member.id;
    return member;
  }

  toEtcdMember(member: SimulatedMember): EtcdMember {
    return {
      id: member.id,
      name: member.started ? simulatedNodeName(member.address) : "",
      peerURLs: [`https://${member.address}:2380`],
      clientURLs: member.started ? [`https://${member.address}:2379`] : [],
      learner: member.learner,
    };
  }
}

export class SimulatedWorkloads {
  private readonly clusterByAddress = new Map<string, SimulatedEtcdCluster>();
  private readonly clusterByKey = new Map<string, SimulatedEtcdCluster>();
  private clustersCreated = 0;
  /** Calls served, by kind, for the benchmark's report. */
  readonly calls = new Map<string, number>();

  constructor(readonly latencyMs: number) {}

  /** The factory to hand to ClusterWorkloadAccess's etcdClientFactory. */
  readonly etcdClientFactory = (options: EtcdClientOptions): EtcdClusterClient =>
    new SimulatedEtcdClient(this, options.endpoints);

  /** Remembers which QuorumControlPlane's cluster an etcd reached through `endpoints` is (for its Nodes). */
  bind(clusterKey: string, endpoints: string[]): void {
    const cluster = this.resolve(endpoints);
    if (cluster) this.clusterByKey.set(clusterKey, cluster);
  }

  async nodes(clusterKey: string): Promise<Node[]> {
    await this.wait("nodes");
    const cluster = this.clusterByKey.get(clusterKey);
    if (!cluster) return [];
    return cluster.members
      .filter((member) => member.started)
      .map((member) => ({
        metadata: { name: simulatedNodeName(member.address), labels: { "node-role.kubernetes.io/control-plane": "" } },
        status: {
          conditions: [{ type: "Ready", status: "True" }],
          addresses: [{ type: "InternalIP", address: member.address }],
        },
      }));
  }

  forget(clusterKey: string): void {
    const cluster = this.clusterByKey.get(clusterKey);
    this.clusterByKey.delete(clusterKey);
    if (!cluster) return;
    for (const member of cluster.members) this.clusterByAddress.delete(member.address);
  }

  async wait(kind: string): Promise<void> {
    this.calls.set(kind, (this.calls.get(kind) ?? 0) + 1);
    if (this.latencyMs > 0) await sleep(this.latencyMs);
  }

  /**
   * The etcd cluster behind these endpoints, after letting Machines that now run take part: an address nobody
   * knows next to known ones is a Machine that joined (kubeadm join adds it as a learner); a member added by
   * the controller starts once its Machine's address shows up. With no known address, the first one starts a
   * new cluster (kubeadm init).
   */
  resolve(endpoints: readonly string[]): SimulatedEtcdCluster | undefined {
    const addresses = endpoints.map(addressOf).filter((address): address is string => address !== undefined);
    let cluster = addresses.map((address) => this.clusterByAddress.get(address)).find((found) => found !== undefined);
    if (!cluster) {
      if (addresses.length === 0) return undefined;
      cluster = new SimulatedEtcdCluster(this.clustersCreated++);
      cluster.add(addresses[0], { learner: false, started: true });
      this.clusterByAddress.set(addresses[0], cluster);
    }
    for (const address of addresses) {
      if (cluster.retiredAddresses.has(address)) continue;
      const member = cluster.members.find((candidate) => candidate.address === address);
      if (member) {
        member.started = true;
        continue;
      }
      if (this.clusterByAddress.has(address)) continue;
      cluster.add(address, { learner: true, started: true });
      this.clusterByAddress.set(address, cluster);
    }
    return cluster;
  }

  register(address: string, cluster: SimulatedEtcdCluster): void {
    this.clusterByAddress.set(address, cluster);
  }
}

class SimulatedEtcdClient implements EtcdClusterClient {
  constructor(
    private readonly world: SimulatedWorkloads,
    private readonly endpoints: string[],
  ) {}

  private cluster(what: string): SimulatedEtcdCluster {
    const cluster = this.world.resolve(this.endpoints);
    if (!cluster)
      throw new Error(`simulated etcd: no member at ${this.endpoints.join(", ") || "(no endpoints)"} answered ${what}`);
    return cluster;
  }

  async listMembers(): Promise<EtcdMember[]> {
    await this.world.wait("member list");
    const cluster = this.cluster("member list");
    return cluster.members.map((member) => cluster.toEtcdMember(member));
  }

  async memberStatuses(members?: EtcdMember[]): Promise<EtcdMemberStatus[]> {
    const listed = members ?? (await this.listMembers());
    await this.world.wait("status");
    const cluster = this.cluster("status");
    // A live cluster's raft index moves between two looks (leases, events, the apiserver's own writes).
    cluster.raftIndex += 7;
    return listed.map((entry): EtcdMemberStatus => {
      const member = cluster.members.find((candidate) => candidate.id === entry.id);
      if (!member || !member.started) {
        return {
          memberId: entry.id,
          reachable: false,
          leader: false,
          errors: [member ? "member has not started yet (no client URLs)" : "member not found"],
        };
      }
      return {
        memberId: member.id,
        endpoint: `https://${member.address}:2379`,
        reachable: true,
        leader: member.id === cluster.leaderId,
        leaderId: cluster.leaderId,
        raftTerm: 2,
        raftIndex: cluster.raftIndex,
        raftAppliedIndex: cluster.raftIndex,
        dbSize: 4_194_304,
        dbSizeInUse: 2_097_152,
        version: ETCD_VERSION,
        learner: member.learner,
        errors: [],
      };
    });
  }

  async alarms(): Promise<EtcdAlarm[]> {
    await this.world.wait("alarm list");
    return [];
  }

  async addMember(peerURLs: string[], options: AddMemberOptions): Promise<EtcdMember> {
    await this.world.wait("member add");
    const cluster = this.cluster("member add");
    const address = addressOf(peerURLs[0] ?? "");
    if (!address) throw new Error(`simulated etcd: member add needs a peer URL (got ${peerURLs.join(", ")})`);
    const existing = cluster.members.find((member) => member.address === address);
    if (existing) return cluster.toEtcdMember(existing);
    const member = cluster.add(address, { learner: options.learner, started: false });
    cluster.retiredAddresses.delete(address);
    this.world.register(address, cluster);
    return cluster.toEtcdMember(member);
  }

  async promoteLearner(memberId: string): Promise<PromoteResult> {
    await this.world.wait("member promote");
    const cluster = this.cluster("member promote");
    const member = cluster.members.find((candidate) => candidate.id === memberId);
    if (!member) throw new Error(`simulated etcd: member ${memberId} not found (etcdserver: member not found)`);
    member.learner = false;
    return { promoted: true };
  }

  async removeMember(memberId: string): Promise<{ removed: boolean }> {
    await this.world.wait("member remove");
    const cluster = this.cluster("member remove");
    const index = cluster.members.findIndex((candidate) => candidate.id === memberId);
    if (index < 0) return { removed: false };
    const [member] = cluster.members.splice(index, 1);
    cluster.retiredAddresses.add(member.address);
    if (cluster.leaderId === member.id)
      cluster.leaderId = cluster.members.find((candidate) => !candidate.learner && candidate.started)?.id ?? "";
    return { removed: true };
  }

  async moveLeader(toMemberId: string): Promise<void> {
    await this.world.wait("move leader");
    const cluster = this.cluster("move leader");
    if (!cluster.members.some((member) => member.id === toMemberId && !member.learner))
      throw new Error(`simulated etcd: move leader to ${toMemberId}: not a voter`);
    cluster.leaderId = toMemberId;
  }

  async close(): Promise<void> {}
}

function addressOf(url: string): string | undefined {
  try {
    const host = new URL(url.includes("://") ? url : `https://${url}`).hostname;
    return host.replace(/^\[|\]$/g, "") || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The WorkloadAccess the scale benchmark's controller uses: certificates are the real adapter's (real Secrets on
 * the real kube-apiserver, real key generation and signing), etcd goes through the real adapter's credential
 * cache into the simulated etcd, and Nodes come from the simulation.
 */
export class SimulatedWorkloadAccess implements WorkloadAccess {
  constructor(
    private readonly real: ClusterWorkloadAccess,
    private readonly world: SimulatedWorkloads,
  ) {}

  ensureCertificates(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    bootstrapTemplate?: TemplateReader,
  ): Promise<void> {
    return this.real.ensureCertificates(controlPlane, cluster, bootstrapTemplate);
  }

  async etcd(controlPlane: QuorumControlPlane, cluster: Cluster, endpoints: string[]): Promise<EtcdClusterClient> {
    const client = await this.real.etcd(controlPlane, cluster, endpoints);
    this.world.bind(`${controlPlane.metadata.namespace}/${cluster.metadata.name}`, endpoints);
    return client;
  }

  nodes(controlPlane: QuorumControlPlane, cluster: Cluster): Promise<Node[]> {
    return this.world.nodes(`${controlPlane.metadata.namespace}/${cluster.metadata.name}`);
  }

  /** The benchmark's control planes use the generic bootstrap flavour: no workload steps (the real adapter agrees). */
  workloadSteps(controlPlane: QuorumControlPlane, cluster: Cluster, template: TemplateReader): Promise<WorkloadSteps> {
    return this.real.workloadSteps(controlPlane, cluster, template);
  }

  prepareWorkload(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    step: string,
    template: TemplateReader,
  ): Promise<string> {
    return this.real.prepareWorkload(controlPlane, cluster, step, template);
  }

  async forget(namespace: string, clusterName: string): Promise<void> {
    await this.real.forget(namespace, clusterName);
    this.world.forget(`${namespace}/${clusterName}`);
  }
}
