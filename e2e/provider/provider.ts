// The process provider's controllers, following the CAPI v1beta2 infrastructure and bootstrap contracts that the
// CAPI core manager reads (docs/book/src/developer/providers/contracts/ in sigs.k8s.io/cluster-api):
//  - ProcessCluster: owned by a Cluster → a loopback /24 and a TCP load balancer on <subnet>.254:6443, surfaced
//    as spec.controlPlaneEndpoint, then status.initialization.provisioned.
//  - ProcessBootstrapConfig: owned by a Machine → a bootstrap data Secret, status.dataSecretName and
//    status.initialization.dataSecretCreated.
//  - ProcessMachine: owned by a Machine whose Cluster's infrastructure is provisioned and whose bootstrap data
//    exists → a loopback address, spec.providerID, status.addresses, status.initialization.provisioned, then the
//    Machine's processes (machine.ts). Deleting it (CAPI does, once every pre-terminate hook is gone) stops them.
// It polls the management API (a handful of lists every few hundred ms) instead of watching: simpler, and the
// latency it adds is the same for every scenario.
// One ProcessProvider serves one management cluster; several (one per --kubeconfig) share one ProcessCloud, the
// Machines and load balancers that run (cloud.ts). Like the providers CAPI's contract describes, it does nothing for
// a paused Cluster (Cluster.spec.paused, or the cluster.x-k8s.io/paused annotation on the object): `clusterctl move`
// pauses the Cluster, copies every object to the target, then deletes the source objects (after removing their
// finalizers), and that deletion must not stop the Machines. In the target the objects arrive paused, carrying the
// providerID; once unpaused, the provider serving the target adopts the running Machine with that providerID and
// reports its status again (a move never copies status).
import { createPublicKey } from "node:crypto";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { secretName, LABEL_CLUSTER_NAME, CAPI_API_VERSION, PAUSED_ANNOTATION } from "../../src/api/constants.ts";
import { issueCertificate, loadCA, oneDay, validFor, type CertificateAuthority } from "../../src/adapters/certs/pki.ts";
import { kubeRequest, kubeRequestOk, statusMessage } from "../../test/env/kube.ts";
import { isPortFree, reserveLoopbackSubnet } from "../../test/env/net.ts";
import { reserveBridgeSubnet } from "../lib/netns.ts";
import { ClusterRuntime, type MachineNetwork, type ProcessCloud } from "./cloud.ts";
import { KubeadmMachineRuntime } from "./kubeadm/machine.ts";
import { BOOTSTRAP_API_VERSION, INFRA_API_VERSION, RESOURCE } from "./crds.ts";
import { LoadBalancer } from "./loadbalancer.ts";
import {
  API_SERVER_PORT,
  ETCD_CLIENT_PORT,
  ETCD_PEER_PORT,
  type ClusterContext,
  type MachineEvent,
  type MachineRuntime,
} from "./machine-base.ts";
import { ProcessMachineRuntime } from "./machine.ts";

export const MACHINE_FINALIZER = "infrastructure.cluster.x-k8s.io/process-machine";
export const CLUSTER_FINALIZER = "infrastructure.cluster.x-k8s.io/process-cluster";
/** clusterctl move sets it on each source object right before deleting it (cmd/clusterctl/api/v1alpha3). */
export const DELETE_FOR_MOVE_ANNOTATION = "clusterctl.cluster.x-k8s.io/delete-for-move";
const LOAD_BALANCER_HOST = 254;

interface Meta {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
}

interface Obj<Spec = Record<string, unknown>, Status = Record<string, unknown>> {
  apiVersion: string;
  kind: string;
  metadata: Meta;
  spec?: Spec;
  status?: Status;
}

type ProcessCluster = Obj<{ controlPlaneEndpoint?: { host?: string; port?: number }; machineNetwork?: MachineNetwork }>;
type ProcessMachine = Obj<{ providerID?: string; apiServerExtraArgs?: string[]; powerState?: "On" | "Off" }>;
type ProcessBootstrapConfig = Obj<{ note?: string }>;
type Machine = Obj<{ version?: string; bootstrap?: { dataSecretName?: string } }>;
type Cluster = Obj<{ paused?: boolean }, { initialization?: { infrastructureProvisioned?: boolean } }>;

export interface ProviderOptions {
  /** The management cluster this controller serves. */
  kubeConfig: KubeConfig;
  /** Names this management cluster in events ("adopted from ... to ..."). */
  management: string;
  /** What the Machines run on; shared with the controllers of other management clusters. */
  cloud: ProcessCloud;
  pollIntervalMs: number;
  log: (message: string) => void;
}

export class ProcessProvider {
  private readonly cloud: ProcessCloud;
  private stopped = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: ProviderOptions) {
    this.cloud = options.cloud;
    this.cloud.onChange(this.requestTick);
  }

  start(): void {
    this.loop = this.run();
  }

  /** Stops reconciling; the Machines keep running (ProcessCloud.stop stops them). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.tick();
      } catch (error) {
        this.options.log(
          `${this.options.management}: reconcile failed (retrying): ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.pollIntervalMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  private requestTick = (): void => this.wake?.();

  private event(namespace: string, cluster: string, machine: string | undefined, event: MachineEvent): void {
    this.cloud.event(namespace, cluster, machine, event);
  }

  /**
   * The contract's pause: Cluster.spec.paused or the paused annotation on the object itself. An object clusterctl
   * move is deleting from the source counts as paused too: it lives on in the target, and so do its Machines.
   */
  private paused(object: Obj, cluster: Cluster | undefined): boolean {
    const annotations = object.metadata.annotations ?? {};
    return (
      cluster?.spec?.paused === true ||
      PAUSED_ANNOTATION in annotations ||
      (object.metadata.deletionTimestamp !== undefined && DELETE_FOR_MOVE_ANNOTATION in annotations)
    );
  }

  private async list<T>(path: string): Promise<T[]> {
    return (await kubeRequestOk<{ items: T[] }>(this.options.kubeConfig, path)).items;
  }

  private async tick(): Promise<void> {
    const [clusters, processClusters, bootstrapConfigs, processMachines, machines] = await Promise.all([
      this.list<Cluster>(`/apis/${CAPI_API_VERSION}/clusters`),
      this.list<ProcessCluster>(`/apis/${INFRA_API_VERSION}/${RESOURCE.ProcessCluster}`),
      this.list<ProcessBootstrapConfig>(`/apis/${BOOTSTRAP_API_VERSION}/${RESOURCE.ProcessBootstrapConfig}`),
      this.list<ProcessMachine>(`/apis/${INFRA_API_VERSION}/${RESOURCE.ProcessMachine}`),
      this.list<Machine>(`/apis/${CAPI_API_VERSION}/machines`),
    ]);
    const byName = <T extends Obj>(items: T[]) =>
      new Map(items.map((item) => [`${item.metadata.namespace}/${item.metadata.name}`, item]));
    const clusterIndex = byName(clusters);
    const machineIndex = byName(machines);
    for (const processCluster of processClusters) await this.reconcileCluster(processCluster, clusterIndex);
    for (const config of bootstrapConfigs) await this.reconcileBootstrapConfig(config, machineIndex, clusterIndex);
    for (const processMachine of processMachines) {
      try {
        await this.reconcileMachine(processMachine, machineIndex, clusterIndex);
      } catch (error) {
        this.options.log(
          `ProcessMachine ${processMachine.metadata.namespace}/${processMachine.metadata.name}: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  }

  // --- ProcessCluster --------------------------------------------------------------------------------------------

  private async reconcileCluster(processCluster: ProcessCluster, clusters: Map<string, Cluster>): Promise<void> {
    const { namespace, name, uid } = processCluster.metadata;
    const path = `/apis/${INFRA_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessCluster}/${name}`;
    const owner = processCluster.metadata.ownerReferences?.find(
      (ref) => ref.kind === "Cluster" && ref.apiVersion.startsWith("cluster.x-k8s.io/"),
    );
    const clusterName = owner?.name ?? processCluster.metadata.labels?.[LABEL_CLUSTER_NAME];
    const key = `${namespace}/${clusterName}`;
    if (this.paused(processCluster, clusters.get(key))) return;
    if (processCluster.metadata.deletionTimestamp) {
      const runtime = clusterName === undefined ? undefined : this.cloud.clusters.get(key);
      if (runtime && runtime.machines.size > 0) return;
      if (runtime) {
        await runtime.loadBalancer.stop();
        runtime.subnet.release();
        this.cloud.clusters.delete(runtime.key);
        this.event(namespace, runtime.name, undefined, { kind: "load-balancer-stopped" });
      }
      await this.setFinalizers(
        path,
        processCluster,
        (processCluster.metadata.finalizers ?? []).filter((finalizer) => finalizer !== CLUSTER_FINALIZER),
      );
      return;
    }
    // The contract: do nothing until CAPI's Cluster controller has adopted the object.
    if (!owner || !clusters.has(key)) return;
    if (!(processCluster.metadata.finalizers ?? []).includes(CLUSTER_FINALIZER)) {
      await this.setFinalizers(path, processCluster, [
        ...(processCluster.metadata.finalizers ?? []),
        CLUSTER_FINALIZER,
      ]);
      return;
    }
    let runtime = this.cloud.clusters.get(key);
    if (!runtime) {
      const machineNetwork = processCluster.spec?.machineNetwork ?? "Loopback";
      if (machineNetwork !== "Loopback" && machineNetwork !== "Namespaces")
        throw new Error(
          `ProcessCluster ${namespace}/${name}: spec.machineNetwork ${String(machineNetwork)} is not Loopback or Namespaces`,
        );
      const subnet =
        machineNetwork === "Namespaces"
          ? reserveBridgeSubnet()
          : await reserveLoopbackSubnet({ hosts: 12, ports: [ETCD_CLIENT_PORT, ETCD_PEER_PORT, API_SERVER_PORT] });
      const host = subnet.address(LOAD_BALANCER_HOST);
      if (!(await isPortFree(host, API_SERVER_PORT))) {
        subnet.release();
        throw new Error(`load balancer address ${host}:${API_SERVER_PORT} is taken; retrying with another subnet`);
      }
      const loadBalancer = new LoadBalancer({
        host,
        port: API_SERVER_PORT,
        onChange: (backends) => {
          this.event(namespace, owner.name, undefined, {
            kind: "load-balancer-backends",
            detail: { backends: backends.map((backend) => `${backend.machine}=${backend.healthy ? "up" : "down"}`) },
          });
          this.cloud.changed();
        },
      });
      await loadBalancer.start();
      runtime = new ClusterRuntime(namespace, owner.name, uid, subnet, loadBalancer, machineNetwork);
      this.cloud.clusters.set(key, runtime);
      this.event(namespace, owner.name, undefined, {
        kind: "load-balancer-started",
        detail: { endpoint: `${host}:${API_SERVER_PORT}`, subnet: `${subnet.prefix}.0/24`, machineNetwork },
      });
    }
    const endpoint = runtime.loadBalancer.endpoint;
    const current = processCluster.spec?.controlPlaneEndpoint;
    if (current?.host !== endpoint.host || current?.port !== endpoint.port) {
      await kubeRequestOk(this.options.kubeConfig, path, {
        method: "PATCH",
        body: { spec: { controlPlaneEndpoint: endpoint } },
      });
      return;
    }
    const status = {
      initialization: { provisioned: true },
      ready: true,
      subnet: runtime.subnet.prefix,
      loadBalancer: {
        backends: runtime.loadBalancer
          .list()
          .map((backend) => ({ machine: backend.machine, address: backend.address, healthy: backend.healthy })),
      },
    };
    await this.patchStatusIfChanged(path, processCluster.status, status);
  }

  // --- ProcessBootstrapConfig ------------------------------------------------------------------------------------

  private async reconcileBootstrapConfig(
    config: ProcessBootstrapConfig,
    machines: Map<string, Machine>,
    clusters: Map<string, Cluster>,
  ): Promise<void> {
    const { namespace, name, uid } = config.metadata;
    if (config.metadata.deletionTimestamp) return;
    if (this.paused(config, clusters.get(`${namespace}/${config.metadata.labels?.[LABEL_CLUSTER_NAME]}`))) return;
    const owner = config.metadata.ownerReferences?.find(
      (ref) => ref.kind === "Machine" && ref.apiVersion.startsWith("cluster.x-k8s.io/"),
    );
    if (!owner || !machines.has(`${namespace}/${owner.name}`)) return;
    if (
      config.status?.initialization &&
      (config.status.initialization as { dataSecretCreated?: boolean }).dataSecretCreated
    )
      return;
    const clusterName = config.metadata.labels?.[LABEL_CLUSTER_NAME] ?? "";
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name,
        namespace,
        labels: { [LABEL_CLUSTER_NAME]: clusterName },
        ownerReferences: [
          { apiVersion: BOOTSTRAP_API_VERSION, kind: "ProcessBootstrapConfig", name, uid, controller: true },
        ],
      },
      type: "cluster.x-k8s.io/secret",
      stringData: {
        // The process provider reads nothing from it; it is what cloud-init would run on a real Machine.
        value: JSON.stringify({ machine: owner.name, cluster: clusterName, note: config.spec?.note ?? "" }),
        format: "process",
      },
    };
    const created = await kubeRequest(this.options.kubeConfig, `/api/v1/namespaces/${namespace}/secrets`, {
      method: "POST",
      body: secret,
    });
    if (created.status !== 201 && created.status !== 409)
      throw new Error(`bootstrap Secret ${namespace}/${name}: HTTP ${created.status} ${statusMessage(created)}`);
    const path = `/apis/${BOOTSTRAP_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessBootstrapConfig}/${name}`;
    await kubeRequestOk(this.options.kubeConfig, `${path}/status`, {
      method: "PATCH",
      body: { status: { dataSecretName: name, initialization: { dataSecretCreated: true }, ready: true } },
    });
  }

  // --- ProcessMachine --------------------------------------------------------------------------------------------

  private async reconcileMachine(
    processMachine: ProcessMachine,
    machines: Map<string, Machine>,
    clusters: Map<string, Cluster>,
  ): Promise<void> {
    const { namespace, name } = processMachine.metadata;
    const path = `/apis/${INFRA_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessMachine}/${name}`;
    const clusterName = processMachine.metadata.labels?.[LABEL_CLUSTER_NAME] ?? "";
    const cluster = clusters.get(`${namespace}/${clusterName}`);
    if (this.paused(processMachine, cluster)) return;
    // The providerID is the "VM"'s identity: the same in every management cluster the object is moved to.
    const providerID = processMachine.spec?.providerID ?? `process://${namespace}/${name}`;
    let runtime = this.cloud.machines.get(providerID);
    if (processMachine.metadata.deletionTimestamp) {
      if (runtime) {
        const { memberPresent } = await runtime.stop();
        this.cloud.machines.delete(providerID);
        this.cloud.managedBy.delete(providerID);
        this.cloud.clusters.get(`${namespace}/${clusterName}`)?.machines.delete(providerID);
        this.event(namespace, clusterName, name, { kind: "infrastructure-deleted", detail: { memberPresent } });
      }
      if ((processMachine.metadata.finalizers ?? []).includes(MACHINE_FINALIZER)) {
        await this.setFinalizers(
          path,
          processMachine,
          (processMachine.metadata.finalizers ?? []).filter((finalizer) => finalizer !== MACHINE_FINALIZER),
        );
      }
      return;
    }
    const owner = processMachine.metadata.ownerReferences?.find(
      (ref) => ref.kind === "Machine" && ref.apiVersion.startsWith("cluster.x-k8s.io/"),
    );
    const machine = owner ? machines.get(`${namespace}/${owner.name}`) : undefined;
    if (!machine) return;
    if (!(processMachine.metadata.finalizers ?? []).includes(MACHINE_FINALIZER)) {
      await this.setFinalizers(path, processMachine, [
        ...(processMachine.metadata.finalizers ?? []),
        MACHINE_FINALIZER,
      ]);
      return;
    }
    if (runtime) this.adopt(processMachine, providerID, clusterName);
    const clusterRuntime = this.cloud.clusters.get(`${namespace}/${clusterName}`);
    if (!cluster?.status?.initialization?.infrastructureProvisioned || !clusterRuntime) return;
    if (!machine.spec?.bootstrap?.dataSecretName) return;

    if (!runtime) {
      runtime = await this.provision(processMachine, machine, providerID, clusterRuntime);
      if (!runtime) return;
      // The "VM" exists: report it (CAPI copies providerID and addresses to the Machine), then boot it.
      await kubeRequestOk(this.options.kubeConfig, path, { method: "PATCH", body: { spec: { providerID } } });
      runtime.start();
    }
    if (runtime instanceof KubeadmMachineRuntime) this.applyPowerState(runtime, processMachine.spec?.powerState);
    const status = {
      initialization: { provisioned: true },
      ready: true,
      addresses: [{ type: "InternalIP", address: runtime.address }],
      phase: runtime.phase,
      etcdMemberName: runtime instanceof KubeadmMachineRuntime ? runtime.hostName : name,
      hostName: runtime instanceof KubeadmMachineRuntime ? runtime.hostName : null,
      processes: {
        etcd: runtime.etcd?.isRunning() ? { pid: runtime.etcd.pid } : null,
        apiServer: runtime.apiServer?.isRunning() ? { pid: runtime.apiServer.pid } : null,
        kubelet:
          runtime instanceof KubeadmMachineRuntime && runtime.kubelet?.isRunning()
            ? { pid: runtime.kubelet.pid }
            : null,
      },
      conditions: runtime.error
        ? [{ type: "BootstrapFailed", status: "True", reason: "Error", message: runtime.error }]
        : null,
    };
    await this.patchStatusIfChanged(path, processMachine.status, status);
  }

  /** spec.powerState of a kubeadm Machine: Off powers a Running one off (in the background), On boots it again. */
  private applyPowerState(runtime: KubeadmMachineRuntime, powerState: "On" | "Off" | undefined): void {
    if (powerState === "Off" && runtime.phase === "Running") void runtime.powerOff();
    else if (powerState !== "Off" && runtime.phase === "PoweredOff") runtime.powerOn();
  }

  /** A new Machine's runtime, registered in the cloud; undefined until the cluster's Secrets exist. */
  private async provision(
    processMachine: ProcessMachine,
    machine: Machine,
    providerID: string,
    clusterRuntime: ClusterRuntime,
  ): Promise<MachineRuntime | undefined> {
    const { namespace, name, uid } = processMachine.metadata;
    const clusterName = clusterRuntime.name;
    const context = clusterRuntime.context ?? (await this.clusterContext(clusterRuntime));
    if (!context) return undefined;
    const bootstrap = await this.bootstrapData(namespace, machine.spec?.bootstrap?.dataSecretName ?? "");
    const kubeadm = bootstrap.format === "cloud-config";
    if (kubeadm !== (clusterRuntime.machineNetwork === "Namespaces")) {
      throw new Error(
        kubeadm
          ? `Machine ${namespace}/${machine.metadata.name} has cloud-init bootstrap data (kubeadm): set spec.machineNetwork: Namespaces on its ProcessCluster`
          : `Machine ${namespace}/${machine.metadata.name} has bootstrap data of format ${bootstrap.format}; a Namespaces ProcessCluster runs only cloud-config (kubeadm) Machines`,
      );
    }
    const address = clusterRuntime.allocateAddress();
    const { stateDir, restartDelayMs } = this.cloud.options;
    const common = {
      namespace,
      name,
      version: machine.spec?.version ?? "",
      address,
      providerID,
      dir: join(stateDir, namespace, clusterName, `${name}-${uid.slice(0, 8)}`),
      cluster: context,
      emit: (event: MachineEvent) => this.event(namespace, clusterName, name, event),
      onChange: this.cloud.changed,
    };
    const runtime: MachineRuntime = kubeadm
      ? new KubeadmMachineRuntime({
          ...common,
          userData: bootstrap.value,
          // Unique in the run: addresses are never reused within a cluster, nor /24s while a cluster holds them.
          vethName: `qv${address.split(".").slice(2).join("-")}`,
        })
      : new ProcessMachineRuntime({
          ...common,
          uid,
          restartDelayMs,
          apiServerExtraArgs: processMachine.spec?.apiServerExtraArgs ?? [],
        });
    this.cloud.machines.set(providerID, runtime);
    this.cloud.managedBy.set(providerID, this.options.management);
    clusterRuntime.machines.set(providerID, runtime);
    this.event(namespace, clusterName, name, { kind: "provisioned", detail: { address, providerID } });
    return runtime;
  }

  /**
   * A running Machine whose object this management cluster now holds (clusterctl move copied it here, unpaused):
   * from now on this controller reports it. Nothing about the Machine itself changes.
   */
  private adopt(processMachine: ProcessMachine, providerID: string, clusterName: string): void {
    const from = this.cloud.managedBy.get(providerID);
    if (from === this.options.management) return;
    this.cloud.managedBy.set(providerID, this.options.management);
    this.event(processMachine.metadata.namespace, clusterName, processMachine.metadata.name, {
      kind: "adopted",
      detail: { providerID, from: from ?? "nobody", to: this.options.management },
    });
  }

  /** A Machine's bootstrap data Secret: its `value` and `format` ("cloud-config" from CABPK, "process" from ours). */
  private async bootstrapData(namespace: string, name: string): Promise<{ value: string; format: string }> {
    const secret = await kubeRequestOk<{ data?: Record<string, string> }>(
      this.options.kubeConfig,
      `/api/v1/namespaces/${namespace}/secrets/${name}`,
    );
    const decode = (key: string) => Buffer.from(secret.data?.[key] ?? "", "base64").toString("utf8");
    return { value: decode("value"), format: decode("format") || "cloud-config" };
  }

  /** Certificates and keys from the Secrets the control-plane provider created for the cluster; undefined until they exist. */
  private async clusterContext(runtime: ClusterRuntime): Promise<ClusterContext | undefined> {
    const read = async (secret: string) => {
      const response = await kubeRequest<{ data?: Record<string, string> }>(
        this.options.kubeConfig,
        `/api/v1/namespaces/${runtime.namespace}/secrets/${secret}`,
      );
      if (response.status === 404) return undefined;
      if (response.status !== 200)
        throw new Error(`Secret ${runtime.namespace}/${secret}: HTTP ${response.status} ${statusMessage(response)}`);
      const data = response.body.data ?? {};
      const decode = (key: string) => Buffer.from(data[key] ?? "", "base64").toString("utf8");
      return { crt: decode("tls.crt"), key: decode("tls.key") };
    };
    const [etcd, ca, sa] = await Promise.all([
      read(secretName.etcd(runtime.name)),
      read(secretName.ca(runtime.name)),
      read(secretName.sa(runtime.name)),
    ]);
    if (!etcd || !ca || !sa) return undefined;
    const etcdCA: CertificateAuthority = await loadCA(etcd.crt, etcd.key);
    const clusterCA: CertificateAuthority = await loadCA(ca.crt, ca.key);
    const admin = await issueCertificate(clusterCA, {
      commonName: "process-provider",
      organization: "system:masters",
      usages: "client",
      validity: validFor(oneDay),
    });
    const etcdClient = await issueCertificate(etcdCA, {
      commonName: "process-provider",
      usages: "client",
      validity: validFor(oneDay),
    });
    // CAPI's -sa Secret holds the public key as tls.crt; accept a certificate there too.
    const publicKeyPem = sa.crt.includes("CERTIFICATE")
      ? createPublicKey(sa.crt).export({ format: "pem", type: "spki" }).toString()
      : sa.crt;
    runtime.loadBalancer.setCA(clusterCA.certPem);
    const others = (except: string) =>
      [...runtime.machines.values()].filter((machine) => machine.name !== except && machine.etcdRunning);
    const context: ClusterContext = {
      key: runtime.key,
      token: `process-${runtime.uid}`,
      etcdCA,
      clusterCA,
      serviceAccount: { publicKeyPem, privateKeyPem: sa.key },
      admin: { certPem: admin.certPem, keyPem: admin.keyPem },
      etcdClient: { caPem: etcdCA.certPem, certPem: etcdClient.certPem, keyPem: etcdClient.keyPem },
      loadBalancerHost: runtime.loadBalancer.endpoint.host,
      peerClientURLs: (except) => others(except).map((machine) => machine.clientURL),
      etcdBootstrapped: () => runtime.bootstrappedBy !== undefined,
      claimBootstrap: (machine) => {
        if (runtime.bootstrappedBy !== undefined) return false;
        runtime.bootstrappedBy = machine;
        return true;
      },
      addBackend: (machine, address) => runtime.loadBalancer.add(machine, address, API_SERVER_PORT),
      removeBackend: (machine) => runtime.loadBalancer.remove(machine),
      markBackendDown: (machine) => runtime.loadBalancer.markDown(machine),
    };
    runtime.context = context;
    return context;
  }

  private async setFinalizers(path: string, object: Obj, finalizers: string[]): Promise<void> {
    await kubeRequestOk(this.options.kubeConfig, path, {
      method: "PATCH",
      body: { metadata: { finalizers, resourceVersion: object.metadata.resourceVersion } },
    });
  }

  /** Merge-patches status when it differs; null values delete fields (e.g. the PID of a process that exited). */
  private async patchStatusIfChanged(
    path: string,
    current: Record<string, unknown> | undefined,
    wanted: Record<string, unknown>,
  ): Promise<void> {
    const subset = Object.fromEntries(Object.keys(wanted).map((key) => [key, current?.[key]]));
    if (sameJSON(subset, wanted)) return;
    await kubeRequestOk(this.options.kubeConfig, `${path}/status`, { method: "PATCH", body: { status: wanted } });
  }
}

function sameJSON(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined && v !== null)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return value === undefined ? "null" : JSON.stringify(value);
}
