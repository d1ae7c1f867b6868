// What the process provider's Machines run on, shared by every management cluster the provider serves: the running
// Machines (keyed by providerID, as a cloud keys its VMs by instance ID) and each cluster's loopback /24 with its load
// balancer (keyed by "<namespace>/<cluster>", as a cloud provider names a load balancer after its cluster). A real
// infrastructure provider installed in two management clusters talks to one cloud; after `clusterctl move` the one
// in the target finds the existing VMs by the providerID the moved objects carry. This is that cloud.
import { appendFileSync, mkdirSync } from "node:fs";
import type { LoopbackSubnet } from "../../test/env/net.ts";
import type { BridgeSubnet } from "../lib/netns.ts";
import type { LoadBalancer } from "./loadbalancer.ts";
import type { ClusterContext, MachineEvent, MachineRuntime } from "./machine-base.ts";

export type MachineNetwork = "Loopback" | "Namespaces";

/** Hosts of a cluster's /24 handed to Machines; .254 is the load balancer. */
const MAX_MACHINE_HOSTS = 250;

export class ClusterRuntime {
  /** This cluster's running Machines, by providerID. */
  readonly machines = new Map<string, MachineRuntime>();
  private nextHost = 1;
  bootstrappedBy: string | undefined;
  context: ClusterContext | undefined;

  constructor(
    readonly namespace: string,
    readonly name: string,
    /** The uid of the ProcessCluster that created it: it names the etcd cluster (its token), so it never changes. */
    readonly uid: string,
    readonly subnet: LoopbackSubnet | BridgeSubnet,
    readonly loadBalancer: LoadBalancer,
    /** ProcessCluster.spec.machineNetwork: Namespaces Machines live on the e2e run's bridge (kubeadm Machines). */
    readonly machineNetwork: MachineNetwork = "Loopback",
  ) {}

  get key(): string {
    return `${this.namespace}/${this.name}`;
  }

  /** Addresses are never reused within a run: a stopped member's port may linger in TIME_WAIT. */
  allocateAddress(): string {
    if (this.nextHost > MAX_MACHINE_HOSTS)
      throw new Error(`process cluster ${this.key} ran out of addresses in ${this.subnet.prefix}.0/24`);
    return this.subnet.address(this.nextHost++);
  }
}

export interface CloudOptions {
  /** Data dirs, certificates and logs of every Machine. */
  stateDir: string;
  /** JSON lines, one per thing that happened (process started, member became voter, Machine stopped...). */
  eventsFile?: string;
  /** How long a crashed etcd or kube-apiserver stays down before it is restarted. */
  restartDelayMs: number;
  log: (message: string) => void;
}

export class ProcessCloud {
  readonly clusters = new Map<string, ClusterRuntime>();
  /** Every running Machine, by providerID. */
  readonly machines = new Map<string, MachineRuntime>();
  /**
   * Which management cluster's controller reconciles each Machine now (by providerID): a Machine another one
   * started is adopted when its object appears there, unpaused, with the same providerID.
   */
  readonly managedBy = new Map<string, string>();
  private readonly listeners = new Set<() => void>();

  constructor(readonly options: CloudOptions) {
    mkdirSync(options.stateDir, { recursive: true });
  }

  /** Wakes every controller (a Machine changed phase, a load balancer backend changed). */
  changed = (): void => {
    for (const listener of this.listeners) listener();
  };

  onChange(listener: () => void): void {
    this.listeners.add(listener);
  }

  event(namespace: string, cluster: string, machine: string | undefined, event: MachineEvent): void {
    const line = {
      at: Date.now(),
      namespace,
      cluster,
      ...(machine ? { machine } : {}),
      kind: event.kind,
      ...(event.detail ?? {}),
    };
    this.options.log(
      `${namespace}/${machine ?? cluster}: ${event.kind}${event.detail ? ` ${JSON.stringify(event.detail)}` : ""}`,
    );
    if (this.options.eventsFile) appendFileSync(this.options.eventsFile, `${JSON.stringify(line)}\n`);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.machines.values()].map((machine) => machine.stop()));
    for (const cluster of this.clusters.values()) {
      await cluster.loadBalancer.stop();
      cluster.subnet.release();
    }
  }
}
