// What every process-provider Machine shares, however it is bootstrapped (our own bootstrap in machine.ts, kubeadm in
// kubeadm/machine.ts): the ports and phases it reports, what it needs from its cluster, and the runtime's life cycle —
// bootstrap in the background, a stop() that wins over a bootstrap still running, and the member list read through
// the cluster's running members with the provider's etcd credentials.
import type { CertificateAuthority } from "../../src/adapters/certs/pki.ts";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import type { EtcdMember } from "../../src/adapters/etcd/types.ts";
import type { ManagedProcess } from "../../test/env/processes.ts";

export const ETCD_CLIENT_PORT = 2379;
export const ETCD_PEER_PORT = 2380;
export const API_SERVER_PORT = 6443;

export type MachinePhase =
  | "Provisioned"
  | "Booting"
  | "RunningCloudInit"
  | "JoiningEtcd"
  | "Learner"
  | "StartingAPIServer"
  | "RegisteringNode"
  | "Running"
  | "PoweredOff"
  | "Stopping"
  | "Stopped"
  | "Failed";

/** What a Machine needs from its cluster: certificates, peers, the load balancer. */
export interface ClusterContext {
  /** "<namespace>/<cluster>" */
  key: string;
  /** Names the etcd cluster; the same for every member. */
  token: string;
  etcdCA: CertificateAuthority;
  clusterCA: CertificateAuthority;
  serviceAccount: { publicKeyPem: string; privateKeyPem: string };
  /** Client credentials signed by the cluster CA with O=system:masters. */
  admin: { certPem: string; keyPem: string };
  /** Credentials for etcd calls the provider makes (member add, membership checks). */
  etcdClient: { caPem: string; certPem: string; keyPem: string };
  loadBalancerHost: string;
  /** Client URLs of the cluster's other members whose etcd runs now. */
  peerClientURLs(except: string): string[];
  /** True once some Machine has started the cluster's first member. */
  etcdBootstrapped(): boolean;
  claimBootstrap(machine: string): boolean;
  addBackend(machine: string, address: string): void;
  removeBackend(machine: string): void;
  markBackendDown(machine: string): void;
}

export interface MachineEvent {
  kind: string;
  detail?: Record<string, unknown>;
}

/** What the provider and the cloud need of a running Machine, however it is bootstrapped. */
export interface MachineRuntime {
  readonly name: string;
  readonly address: string;
  readonly clientURL: string;
  phase: MachinePhase;
  error: string | undefined;
  /** The processes the provider reports in ProcessMachine status (none for kubeadm Machines: their kubelet runs them). */
  readonly etcd: ManagedProcess | undefined;
  readonly apiServer: ManagedProcess | undefined;
  readonly etcdRunning: boolean;
  start(): void;
  stop(): Promise<{ memberPresent: boolean | undefined }>;
}

/** The fields the shared life cycle reads from a runtime's options. */
export interface MachineBaseOptions {
  name: string;
  address: string;
  cluster: ClusterContext;
  emit: (event: MachineEvent) => void;
  onChange: () => void;
}

export abstract class MachineRuntimeBase implements MachineRuntime {
  phase: MachinePhase = "Provisioned";
  error: string | undefined;
  abstract readonly etcd: ManagedProcess | undefined;
  abstract readonly apiServer: ManagedProcess | undefined;
  abstract readonly etcdRunning: boolean;
  protected stopping = false;
  protected bootstrapping: Promise<void> | undefined;

  /** `kind` names the Machine in errors and etcd call contexts, e.g. "process machine". */
  constructor(
    private readonly base: MachineBaseOptions,
    private readonly kind: string,
  ) {}

  get name(): string {
    return this.base.name;
  }
  get address(): string {
    return this.base.address;
  }
  get clientURL(): string {
    return `https://${this.base.address}:${ETCD_CLIENT_PORT}`;
  }
  get peerURL(): string {
    return `https://${this.base.address}:${ETCD_PEER_PORT}`;
  }

  protected abstract bootstrap(): Promise<void>;
  abstract stop(): Promise<{ memberPresent: boolean | undefined }>;

  /** Runs the bootstrap in the background; failures are reported in phase/error and retried by the caller. */
  start(): void {
    if (this.bootstrapping) return;
    this.bootstrapping = this.bootstrap().catch((error: unknown) => {
      if (this.stopping) return;
      this.error = error instanceof Error ? error.message : String(error);
      this.setPhase("Failed");
      this.base.emit({ kind: "bootstrap-failed", detail: { error: this.error } });
    });
  }

  protected setPhase(phase: MachinePhase): void {
    if (this.phase === phase) return;
    this.phase = phase;
    this.base.onChange();
  }

  /** A stop() that came in while the bootstrap awaited something must not be followed by a process start. */
  protected checkStopping(): void {
    if (this.stopping) throw new Error(`${this.kind} ${this.base.name} is stopping`);
  }

  /** Whether this Machine's member (by peer URL) is in the membership; undefined when no member answers. */
  protected async memberPresent(): Promise<boolean | undefined> {
    const members = await this.memberList();
    return members === undefined ? undefined : members.some((member) => member.peerURLs.includes(this.peerURL));
  }

  /** The member list from any other running member (a learner serves no member list); undefined if none answers. */
  async memberList(): Promise<EtcdMember[] | undefined> {
    const endpoints = [
      ...this.base.cluster.peerClientURLs(this.base.name),
      ...(this.phase === "Learner" ? [] : [this.clientURL]),
    ];
    if (endpoints.length === 0) return undefined;
    const client = createEtcdClusterClient({
      endpoints,
      credentials: this.base.cluster.etcdClient,
      callDeadlineMs: 2_000,
      context: `${this.kind} ${this.base.name}`,
    });
    try {
      return await client.listMembers();
    } catch {
      return undefined;
    } finally {
      await client.close();
    }
  }
}
