// The scale benchmark's driver: it plays what the controller does not do. It creates the clusters (Namespace,
// templates, Cluster, QuorumControlPlane), plays the infrastructure provider and CAPI (a Machine gets an address, its
// infrastructure and bootstrap become ready, its nodeRef is set; the Cluster mirrors the control plane's
// initialization), and records when each cluster converged. For the rollout phase it changes spec.version, plays
// CAPI's Machine deletion (the Machine's finalizer is held until Quorum releases its pre-terminate hook) and keeps,
// per cluster, the time of each of its own writes that can let the controller's next step go.
import { setTimeout as sleep } from "node:timers/promises";
import {
  API_VERSION,
  CAPI_API_VERSION,
  CAPI_GROUP,
  CAPI_VERSION,
  GROUP,
  KIND,
  LABEL_CLUSTER_NAME,
  LABEL_CONTROL_PLANE_NAME,
  PLURAL,
  VERSION,
} from "../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import type { Machine } from "../../src/api/capi.ts";
import { Informer, kubeListerWatcher } from "../../src/adapters/kube/informer.ts";
import { KubeRest, type KubeObject } from "../../src/adapters/kube/rest.ts";
import type { ApiServer } from "../../test/env/index.ts";
import { BOOTSTRAP_GROUP, INFRA_GROUP, TEST_VERSION } from "../../test/integration/controller/test-kinds.ts";
import { progress } from "../lib/results.ts";
import { simulatedNodeName } from "./simulation.ts";

const NAME = "scale";
/** The version every cluster is created at (the rollout phase moves some to another). */
export const INITIAL_VERSION = "v1.33.1";
/** CAPI's Machine controller puts this finalizer on every Machine and removes it last, once the Machine may go. */
const MACHINE_FINALIZER = "machine.cluster.x-k8s.io";
/** CAPI deletes a Machine's infrastructure only when no annotation with this prefix is left (pre-terminate hooks). */
const PRE_TERMINATE_HOOK_PREFIX = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/";

/** A write of the driver that can let a cluster's next step go: what the rollout phase's step latency counts from. */
export interface DriverWrite {
  what: "spec-changed" | "machine-provisioned" | "machine-gone";
  /** Machine or QuorumControlPlane name. */
  subject: string;
  /** The request was sent. */
  sentAt: number;
  /** The API server answered: the change is observable from here on (a watcher may see it a moment earlier). */
  at: number;
}

/** A cluster whose spec.version the driver changed, and when its status first showed the rollout done. */
export interface Rollout {
  version: string;
  doneAt?: number;
}

export interface DriverOptions {
  /** Driver writes in flight at once (creates, Machine and Cluster patches). */
  parallelism: number;
  /** Clusters per namespace. */
  perNamespace: number;
  /** spec.replicas of every QuorumControlPlane. */
  replicas: number;
  /**
   * kubeadm's clusterConfiguration.encryptionAlgorithm in every bootstrap config template (the key type of each new
   * cluster's CAs and service-account key); unset, Quorum's defaults (RSA-2048 service-account key).
   */
  encryptionAlgorithm?: string;
}

export class Driver {
  readonly rest: KubeRest;
  readonly createdAt = new Map<string, number>();
  readonly convergedAt = new Map<string, number>();
  /** The last QuorumControlPlane seen per cluster: says what an unconverged one waits for. */
  readonly lastSeen = new Map<string, QuorumControlPlane>();
  /** Per cluster (namespace/name): the driver's writes that can let its next step go, in order of answer. */
  readonly writes = new Map<string, DriverWrite[]>();
  /** Per cluster whose spec.version was changed: the target version and when the status showed it reached. */
  readonly rollouts = new Map<string, Rollout>();
  private readonly provisioned = new Set<string>();
  private readonly released = new Set<string>();
  private readonly mirrored = new Set<string>();
  private readonly work: (() => Promise<void>)[] = [];
  private workers = 0;
  private nextAddress = 1;
  private readonly informers: Informer<KubeObject>[] = [];
  readonly errors: string[] = [];

  constructor(
    readonly apiServer: ApiServer,
    readonly options: DriverOptions,
  ) {
    this.rest = new KubeRest(apiServer.kubeConfig);
  }

  async start(): Promise<void> {
    const machines = new Informer<KubeObject>(
      kubeListerWatcher(this.rest, {
        resource: { group: CAPI_GROUP, version: CAPI_VERSION, plural: "machines", namespaced: true },
        labelSelector: LABEL_CONTROL_PLANE_NAME,
      }),
    );
    machines.addHandlers({
      add: (machine) => this.onMachine(machine as unknown as Machine),
      update: (machine) => this.onMachine(machine as unknown as Machine),
    });
    const controlPlanes = new Informer<KubeObject>(
      kubeListerWatcher(this.rest, { resource: { group: GROUP, version: VERSION, plural: PLURAL, namespaced: true } }),
    );
    controlPlanes.addHandlers({
      add: (qcp) => this.onControlPlane(qcp as unknown as QuorumControlPlane),
      update: (qcp) => this.onControlPlane(qcp as unknown as QuorumControlPlane),
    });
    for (const informer of [machines, controlPlanes]) {
      informer.start();
      await informer.waitForSync();
      this.informers.push(informer);
    }
  }

  async stop(): Promise<void> {
    for (const informer of this.informers) await informer.stop();
  }

  /**
   * Plays the infrastructure provider and CAPI's Machine controller: a new Machine gets CAPI's finalizer and runs at a
   * fresh address; a deleted one goes once no pre-terminate hook is left (releaseMachine).
   */
  private onMachine(machine: Machine): void {
    const key = `${machine.metadata.namespace}/${machine.metadata.name}`;
    if (machine.metadata.deletionTimestamp) {
      this.releaseMachine(machine);
      return;
    }
    if ((machine.status?.addresses ?? []).length > 0 || this.provisioned.has(key)) return;
    this.provisioned.add(key);
    const address = this.allocateAddress();
    const path = `/apis/${CAPI_API_VERSION}/namespaces/${machine.metadata.namespace}/machines/${machine.metadata.name}`;
    this.enqueue(async () => {
      const finalizers = machine.metadata.finalizers ?? [];
      if (!finalizers.includes(MACHINE_FINALIZER)) {
        await this.rest.request("PATCH", path, {
          contentType: "application/merge-patch+json",
          body: { metadata: { finalizers: [...finalizers, MACHINE_FINALIZER] } },
        });
      }
      const sentAt = Date.now();
      await this.rest.request("PATCH", `${path}/status`, {
        contentType: "application/merge-patch+json",
        body: {
          status: {
            addresses: [{ type: "InternalIP", address }],
            nodeRef: { name: simulatedNodeName(address) },
            initialization: { infrastructureProvisioned: true, bootstrapDataSecretCreated: true },
            // CAPI's Machine controller: Ready (bootstrap, infrastructure, Node) and, with minReadySeconds 0, Available.
            conditions: [
              // metav1.Condition: message is required (it may be empty).
              {
                type: "Ready",
                status: "True",
                reason: "Ready",
                message: "",
                lastTransitionTime: new Date().toISOString(),
              },
              {
                type: "Available",
                status: "True",
                reason: "Available",
                message: "",
                lastTransitionTime: new Date().toISOString(),
              },
            ],
          },
        },
      });
      this.recordWrite(machine, {
        what: "machine-provisioned",
        subject: machine.metadata.name,
        sentAt,
        at: Date.now(),
      });
    }, `provision Machine ${key}`);
  }

  /**
   * CAPI's Machine deletion: it waits while any pre-terminate hook is on the Machine (Quorum removes the etcd member
   * first, then releases its hook), deletes the infrastructure and bootstrap objects, then removes its finalizer and
   * the Machine is gone. Nothing drains here: the simulated Nodes run no Pods.
   */
  private releaseMachine(machine: Machine): void {
    const key = `${machine.metadata.namespace}/${machine.metadata.name}`;
    const hooked = Object.keys(machine.metadata.annotations ?? {}).some((name) =>
      name.startsWith(PRE_TERMINATE_HOOK_PREFIX),
    );
    const finalizers = machine.metadata.finalizers ?? [];
    if (hooked || !finalizers.includes(MACHINE_FINALIZER) || this.released.has(key)) return;
    this.released.add(key);
    const namespace = machine.metadata.namespace ?? "default";
    this.enqueue(async () => {
      const sentAt = Date.now();
      for (const [ref, plural] of [
        [machine.spec.infrastructureRef, "testmachines"],
        [machine.spec.bootstrap.configRef, "testbootstrapconfigs"],
      ] as const) {
        if (!ref) continue;
        await this.deleteIfPresent(
          `/apis/${ref.apiGroup}/${TEST_VERSION}/namespaces/${namespace}/${plural}/${ref.name}`,
        );
      }
      await this.rest.request(
        "PATCH",
        `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/machines/${machine.metadata.name}`,
        {
          contentType: "application/merge-patch+json",
          body: { metadata: { finalizers: finalizers.filter((finalizer) => finalizer !== MACHINE_FINALIZER) } },
        },
      );
      this.recordWrite(machine, { what: "machine-gone", subject: machine.metadata.name, sentAt, at: Date.now() });
    }, `release deleted Machine ${key}`);
  }

  private recordWrite(machine: Machine, write: DriverWrite): void {
    const cluster = `${machine.metadata.namespace}/${machine.metadata.labels?.[LABEL_CLUSTER_NAME] ?? ""}`;
    const writes = this.writes.get(cluster) ?? [];
    writes.push(write);
    this.writes.set(cluster, writes);
  }

  /** Changes spec.version of one cluster's QuorumControlPlane, as a user starting an upgrade would. */
  changeVersion(key: string, version: string): void {
    const [namespace, name] = key.split("/");
    this.rollouts.set(key, { version });
    this.enqueue(async () => {
      const sentAt = Date.now();
      await this.rest.request("PATCH", `/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes/${name}`, {
        contentType: "application/merge-patch+json",
        body: { spec: { version } },
      });
      const writes = this.writes.get(key) ?? [];
      writes.push({ what: "spec-changed", subject: name, sentAt, at: Date.now() });
      this.writes.set(key, writes);
    }, `change spec.version of ${key} to ${version}`);
  }

  /** Plays CAPI's Cluster controller (initialization mirrored from the control plane) and watches convergence. */
  private onControlPlane(qcp: QuorumControlPlane): void {
    const key = `${qcp.metadata.namespace}/${qcp.metadata.name}`;
    const status = qcp.status;
    if (status?.initialization?.controlPlaneInitialized && !this.mirrored.has(key)) {
      this.mirrored.add(key);
      this.enqueue(async () => {
        await this.rest.request(
          "PATCH",
          `/apis/${CAPI_API_VERSION}/namespaces/${qcp.metadata.namespace}/clusters/${qcp.metadata.name}/status`,
          {
            contentType: "application/merge-patch+json",
            body: { status: { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } } },
          },
        );
      }, `mirror initialization of Cluster ${key}`);
    }
    this.lastSeen.set(key, qcp);
    if (!this.convergedAt.has(key) && isConverged(qcp, this.options.replicas)) this.convergedAt.set(key, Date.now());
    const rollout = this.rollouts.get(key);
    if (
      rollout &&
      rollout.doneAt === undefined &&
      qcp.spec.version === rollout.version &&
      qcp.status?.version === rollout.version &&
      isConverged(qcp, this.options.replicas)
    )
      rollout.doneAt = Date.now();
  }

  /** A fresh address per Machine, never repeated (the simulation knows a cluster by its members' addresses). */
  private allocateAddress(): string {
    let n = this.nextAddress++;
    // .0 and .255 are not host addresses; skipping them (rather than mapping them to another) keeps each unique.
    while ((n & 255) === 0 || (n & 255) === 255) n = this.nextAddress++;
    return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
  }

  enqueue(job: () => Promise<void>, what: string): void {
    this.work.push(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await job();
        } catch (error) {
          if (attempt >= 5) {
            // Said at once: a refused patch leaves its cluster unconverged, and the level would wait out its limit.
            if (this.errors.length === 0)
              progress(NAME, `driver error (the first; all are in the notes): ${what}: ${String(error)}`);
            this.errors.push(`${what}: ${String(error)}`);
            return;
          }
          await sleep(200 * attempt);
        }
      }
    });
    this.pump();
  }

  private pump(): void {
    while (this.workers < this.options.parallelism && this.work.length > 0) {
      const job = this.work.shift() as () => Promise<void>;
      this.workers++;
      void job().finally(() => {
        this.workers--;
        this.pump();
      });
    }
  }

  async idle(): Promise<void> {
    while (this.workers > 0 || this.work.length > 0) await sleep(50);
  }

  /** Creates clusters [from, to) with their namespaces and templates, `options.parallelism` at a time. */
  async createClusters(from: number, to: number): Promise<void> {
    const namespaces = new Set<string>();
    for (let index = from; index < to; index++) namespaces.add(this.namespaceOf(index));
    for (const namespace of namespaces) {
      this.enqueue(() => this.createNamespace(namespace), `create namespace ${namespace}`);
    }
    await this.idle();
    for (let index = from; index < to; index++)
      this.enqueue(() => this.createCluster(index), `create cluster ${index}`);
    await this.idle();
  }

  private async createNamespace(namespace: string): Promise<void> {
    await this.createIfAbsent("/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: namespace },
    });
    await this.createIfAbsent(`/apis/${INFRA_GROUP}/${TEST_VERSION}/namespaces/${namespace}/testmachinetemplates`, {
      apiVersion: `${INFRA_GROUP}/${TEST_VERSION}`,
      kind: "TestMachineTemplate",
      metadata: { name: "infra", namespace },
      spec: { template: { spec: { size: "small" } } },
    });
    await this.createIfAbsent(
      `/apis/${BOOTSTRAP_GROUP}/${TEST_VERSION}/namespaces/${namespace}/testbootstrapconfigtemplates`,
      {
        apiVersion: `${BOOTSTRAP_GROUP}/${TEST_VERSION}`,
        kind: "TestBootstrapConfigTemplate",
        metadata: { name: "boot", namespace },
        spec: {
          template: {
            spec: {
              join: "learner",
              ...(this.options.encryptionAlgorithm
                ? { clusterConfiguration: { encryptionAlgorithm: this.options.encryptionAlgorithm } }
                : {}),
            },
          },
        },
      },
    );
  }

  private async createCluster(index: number): Promise<void> {
    const namespace = this.namespaceOf(index);
    const name = `c${String(index).padStart(4, "0")}`;
    const cluster = await this.rest.request<{ metadata: { uid: string } }>(
      "POST",
      `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters`,
      {
        body: {
          apiVersion: CAPI_API_VERSION,
          kind: "Cluster",
          metadata: { name, namespace },
          spec: {
            controlPlaneRef: { apiGroup: GROUP, kind: KIND, name },
            controlPlaneEndpoint: { host: `10.255.${(index >> 8) & 255}.${index & 255}`, port: 6443 },
          },
        },
      },
    );
    await this.rest.request("PATCH", `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters/${name}/status`, {
      contentType: "application/merge-patch+json",
      body: { status: { initialization: { infrastructureProvisioned: true } } },
    });
    this.createdAt.set(`${namespace}/${name}`, Date.now());
    await this.rest.request("POST", `/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes`, {
      body: {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: {
          name,
          namespace,
          labels: { [LABEL_CLUSTER_NAME]: name },
          ownerReferences: [{ apiVersion: CAPI_API_VERSION, kind: "Cluster", name, uid: cluster.metadata.uid }],
        },
        spec: {
          replicas: this.options.replicas,
          version: INITIAL_VERSION,
          machineTemplate: {
            spec: {
              infrastructureRef: { apiGroup: INFRA_GROUP, kind: "TestMachineTemplate", name: "infra" },
              bootstrapConfigTemplateRef: {
                apiGroup: BOOTSTRAP_GROUP,
                kind: "TestBootstrapConfigTemplate",
                name: "boot",
              },
            },
          },
        },
      },
    });
  }

  private async deleteIfPresent(path: string): Promise<void> {
    try {
      await this.rest.request("DELETE", path);
    } catch (error) {
      if ((error as { code?: number }).code !== 404) throw error;
    }
  }

  private async createIfAbsent(path: string, body: unknown): Promise<void> {
    try {
      await this.rest.request("POST", path, { body });
    } catch (error) {
      if ((error as { code?: number }).code !== 409) throw error;
    }
  }

  namespaceOf(index: number): string {
    return `scale-${String(Math.floor(index / this.options.perNamespace)).padStart(3, "0")}`;
  }
}

/** Status shows `replicas` healthy, up-to-date voters, each of a Machine, for the current generation. */
export function isConverged(qcp: QuorumControlPlane, replicas: number): boolean {
  const status = qcp.status;
  const members = status?.etcd?.members ?? [];
  return (
    status?.observedGeneration === qcp.metadata.generation &&
    status?.replicas === replicas &&
    status?.readyReplicas === replicas &&
    status?.upToDateReplicas === replicas &&
    members.length === replicas &&
    members.every((member) => member.healthy && !member.learner && member.machine !== undefined)
  );
}
