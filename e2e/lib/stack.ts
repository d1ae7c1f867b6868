// A fresh end-to-end stack for one scenario: a management kube-apiserver (with its own etcd), Quorum's, CAPI's and
// the process provider's CRDs, the real CAPI core manager, the process provider and Quorum, each its own process.
// Everything runs on loopback in temp dirs and is stopped by stop(), or by the harness however this process ends.
import { readFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { API_VERSION, CAPI_API_VERSION, KIND, LABEL_CLUSTER_NAME } from "../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import type { Machine } from "../../src/api/capi.ts";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  freePort,
  installCRDs,
  isProcessAlive,
  kubeRequest,
  kubeRequestOk,
  makeTempDir,
  repoRoot,
  startApiServer,
  startCapiManager,
  startKubeadmBootstrapManager,
  startProcess,
  waitUntilReady,
  httpGet,
  type ApiServer,
  type CapiManager,
  type ManagedProcess,
} from "../../test/env/index.ts";
import { sampleKubeadmConfigTemplate } from "../../test/env/kubeadm-sample.ts";
import { BOOTSTRAP_API_VERSION, INFRA_API_VERSION, RESOURCE, processProviderCRDs } from "../provider/crds.ts";

/** CAPI's kubeadm bootstrap provider's API (the sample's KubeadmConfigTemplate). */
export const KUBEADM_BOOTSTRAP_API_VERSION = "bootstrap.cluster.x-k8s.io/v1beta2";

export interface QuorumProcess {
  process: ManagedProcess;
  /** Our label for it ("quorum-1"); its leader-election identity is read from its log. */
  label: string;
  logFile: string;
  crashAfter?: string;
}

export interface StackOptions {
  /** How long a crashed etcd or kube-apiserver of a process Machine stays down (default 10 s). */
  restartDelay?: string;
  /** Quorum's --etcd-poll-interval and --etcd-idle-poll-interval (default 1s). */
  etcdPollInterval?: string;
  /** Extra CAPI core manager flags, e.g. ["--feature-gates=ClusterTopology=true"] for a ClusterClass (default none). */
  capiExtraArgs?: string[];
  /**
   * Kubeconfigs of further management clusters the process provider serves besides this stack's (a `clusterctl move`
   * target): one provider, one set of running Machines, adopted wherever their objects are moved.
   */
  providerAlsoServes?: string[];
  /** Install Quorum's CRDs from this tree (default true); false when a scenario installs a release's with clusterctl. */
  quorumCRDs?: boolean;
  /** Run CAPI's kubeadm bootstrap provider (CABPK) too, for kubeadm Machines (default false). */
  kubeadmBootstrap?: boolean;
}

/** A management cluster besides the stack's own (its API server, CAPI manager...), stopped with the stack. */
export interface ExtraManagement {
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  /** PIDs of its processes, for the leak check after stop(). */
  pids(): number[];
  stop(): Promise<void>;
}

export interface ClusterSpec {
  namespace: string;
  name: string;
  replicas: number;
  version: string;
  maxSurge?: 0 | 1;
  ghostMemberGracePeriod?: string;
  /** spec.remediation.machineLostAfter; unset, the default (5m). */
  machineLostAfter?: string;
  /**
   * kubeadm Machines: the bootstrap template is the KubeadmConfigTemplate of config/samples/cluster-kubeadm.yaml (CABPK
   * writes `kubeadm init`/`join` cloud-init), and the ProcessCluster runs each Machine in namespaces of its own.
   */
  kubeadm?: boolean;
  /** spec.etcd.access; unset, the bootstrap flavour's default (kubeadm: APIServerProxy, the process bootstrap: Direct). */
  etcdAccess?: "Direct" | "APIServerProxy";
}

export interface ProviderEvent {
  at: number;
  namespace: string;
  cluster: string;
  machine?: string;
  kind: string;
  [key: string]: unknown;
}

/**
 * The control plane's templates, `<name>-control-plane`: a ProcessMachineTemplate and a ProcessBootstrapConfigTemplate,
 * or with `kubeadm` the sample's KubeadmConfigTemplate (config/samples/cluster-kubeadm.yaml) instead of the latter.
 */
export async function createControlPlaneTemplates(
  kc: KubeConfig,
  namespace: string,
  name: string,
  options: { kubeadm?: boolean } = {},
): Promise<void> {
  const create = (path: string, body: unknown) => kubeRequestOk(kc, path, { body });
  if (options.kubeadm) {
    const sample = sampleKubeadmConfigTemplate();
    await create(`/apis/${sample.apiVersion}/namespaces/${namespace}/kubeadmconfigtemplates`, {
      ...sample,
      metadata: { name: `${name}-control-plane`, namespace },
    });
  }
  await create(`/apis/${INFRA_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessMachineTemplate}`, {
    apiVersion: INFRA_API_VERSION,
    kind: "ProcessMachineTemplate",
    metadata: { name: `${name}-control-plane`, namespace },
    spec: { template: { spec: {} } },
  });
  if (options.kubeadm) return;
  await create(`/apis/${BOOTSTRAP_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessBootstrapConfigTemplate}`, {
    apiVersion: BOOTSTRAP_API_VERSION,
    kind: "ProcessBootstrapConfigTemplate",
    metadata: { name: `${name}-control-plane`, namespace },
    spec: { template: { spec: {} } },
  });
}

export class E2EStack {
  readonly quorums: QuorumProcess[] = [];
  private quorumCount = 0;
  private readonly extraManagement: ExtraManagement[] = [];
  /** The management cluster the scenario reads and writes; the stack's own until useManagement(). */
  private active: { kubeConfig: KubeConfig; kubeconfigPath: string } | undefined;

  private constructor(
    readonly dir: string,
    readonly apiServer: ApiServer,
    readonly capi: CapiManager,
    readonly provider: ManagedProcess,
    readonly eventsFile: string,
    readonly options: StackOptions,
    readonly kubeadmBootstrap: CapiManager | undefined,
  ) {}

  /** Starts everything but Quorum (scenarios start it, with the flags and crash settings they need). */
  static async start(name: string, options: StackOptions = {}): Promise<E2EStack> {
    const dir = makeTempDir(`e2e-${name}`);
    const apiServer = await startApiServer();
    try {
      await installCRDs(apiServer.kubeConfig, { quorum: options.quorumCRDs ?? true, extra: processProviderCRDs() });
      const eventsFile = join(dir, "provider-events.jsonl");
      writeFileSync(eventsFile, "");
      const provider = startProcess({
        name: "process provider",
        command: process.execPath,
        args: [
          "--import",
          "tsx",
          join(repoRoot, "e2e/provider/main.ts"),
          "--kubeconfig",
          apiServer.kubeconfigPath,
          "--state-dir",
          join(dir, "machines"),
          "--events-file",
          eventsFile,
          "--restart-delay",
          options.restartDelay ?? "10s",
          ...(options.providerAlsoServes ?? []).flatMap((kubeconfig) => ["--kubeconfig", kubeconfig]),
        ],
        cwd: repoRoot,
        logFile: join(dir, "provider.log"),
      });
      const capi = await startCapiManager(apiServer, { extraArgs: options.capiExtraArgs ?? [] });
      const kubeadmBootstrap = options.kubeadmBootstrap ? await startKubeadmBootstrapManager(apiServer) : undefined;
      return new E2EStack(dir, apiServer, capi, provider, eventsFile, options, kubeadmBootstrap);
    } catch (error) {
      await apiServer.stop();
      throw error;
    }
  }

  get kubeConfig(): KubeConfig {
    return this.active?.kubeConfig ?? this.apiServer.kubeConfig;
  }

  get kubeconfigPath(): string {
    return this.active?.kubeconfigPath ?? this.apiServer.kubeconfigPath;
  }

  /** Stops `management` with the stack (after Quorum and the provider) and counts its processes in leakedPids(). */
  addManagement(management: ExtraManagement): void {
    this.extraManagement.push(management);
  }

  /** From now on the scenario's reads and writes (cluster, Machines, convergence) go to `management`. */
  useManagement(management: { kubeConfig: KubeConfig; kubeconfigPath: string }): void {
    this.active = management;
  }

  /** Starts one Quorum controller process (its own process, admin credentials, JSON logs). */
  async startQuorum(
    options: {
      leaderElect?: boolean;
      crashAfter?: string;
      label?: string;
      logFormat?: "json" | "text";
      /** The management cluster it runs against (default: the one the scenario uses now). */
      kubeconfigPath?: string;
      /** A source tree of another Quorum version to run (its src/main.ts, from that directory); default this one. */
      source?: string;
    } = {},
  ): Promise<QuorumProcess> {
    this.quorumCount++;
    const label = options.label ?? `quorum-${this.quorumCount}`;
    const metricsPort = await freePort();
    const healthPort = await freePort();
    const logFile = join(this.dir, `${label}.log`);
    const args = [
      "--import",
      "tsx",
      join(options.source ?? repoRoot, "src/main.ts"),
      "--kubeconfig",
      options.kubeconfigPath ?? this.kubeconfigPath,
      "--etcd-poll-interval",
      this.options.etcdPollInterval ?? "1s",
      // Settled clusters too (the default would be 60s): the scenarios time etcd-only changes against one poll.
      // An older Quorum (clusterctl-upgrade's source) has no such flag and polls every cluster at the one interval.
      ...(options.source ? [] : ["--etcd-idle-poll-interval", this.options.etcdPollInterval ?? "1s"]),
      "--metrics-bind-address",
      `127.0.0.1:${metricsPort}`,
      "--metrics-secure=false",
      "--health-probe-bind-address",
      `127.0.0.1:${healthPort}`,
      "--log-format",
      // The scenarios read actions and leader-election events from the JSON lines.
      options.logFormat ?? "json",
      "--log-level",
      "debug",
      ...(options.leaderElect ? ["--leader-elect", "--leader-election-namespace", "default"] : []),
    ];
    const env = { ...process.env, ...(options.crashAfter ? { QUORUM_CRASH_AFTER: options.crashAfter } : {}) };
    if (!options.crashAfter) delete env.QUORUM_CRASH_AFTER;
    const proc = startProcess({
      name: `Quorum ${label}`,
      command: process.execPath,
      args,
      cwd: options.source ?? repoRoot,
      env,
      logFile,
    });
    try {
      await waitUntilReady({
        process: proc,
        what: `GET http://127.0.0.1:${healthPort}/healthz`,
        timeoutMs: 60_000,
        intervalMs: 250,
        probe: async () => (await httpGet(`http://127.0.0.1:${healthPort}/healthz`)).status === 200,
      });
    } catch (error) {
      // Armed with a crash point, it may act and exit with 137 before the first probe answers (a quiet machine, a
      // first reconcile that acts at once): that is the crash it was started for, which the scenario counts.
      if (!(options.crashAfter && proc.exitStatus()?.code === 137)) throw error;
    }
    const quorum: QuorumProcess = {
      process: proc,
      label,
      logFile,
      ...(options.crashAfter ? { crashAfter: options.crashAfter } : {}),
    };
    this.quorums.push(quorum);
    return quorum;
  }

  runningQuorums(): QuorumProcess[] {
    return this.quorums.filter((quorum) => quorum.process.isRunning());
  }

  /** Namespace, Cluster, ProcessCluster, templates and the QuorumControlPlane (owned through Cluster.spec.controlPlaneRef). */
  async createCluster(spec: ClusterSpec): Promise<void> {
    const kc = this.kubeConfig;
    const { namespace, name } = spec;
    await kubeRequest(kc, "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
    });
    const create = (path: string, body: unknown) => kubeRequestOk(kc, path, { body });
    await create(`/apis/${INFRA_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessCluster}`, {
      apiVersion: INFRA_API_VERSION,
      kind: "ProcessCluster",
      metadata: { name, namespace },
      spec: spec.kubeadm ? { machineNetwork: "Namespaces" } : {},
    });
    await createControlPlaneTemplates(kc, namespace, name, { kubeadm: spec.kubeadm ?? false });
    await create(`/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes`, {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, namespace, labels: { [LABEL_CLUSTER_NAME]: name } },
      spec: {
        replicas: spec.replicas,
        version: spec.version,
        machineTemplate: {
          spec: {
            infrastructureRef: {
              apiGroup: INFRA_API_VERSION.split("/")[0],
              kind: "ProcessMachineTemplate",
              name: `${name}-control-plane`,
            },
            bootstrapConfigTemplateRef: {
              apiGroup: (spec.kubeadm ? KUBEADM_BOOTSTRAP_API_VERSION : BOOTSTRAP_API_VERSION).split("/")[0],
              kind: spec.kubeadm ? "KubeadmConfigTemplate" : "ProcessBootstrapConfigTemplate",
              name: `${name}-control-plane`,
            },
          },
        },
        rollout: { strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: spec.maxSurge ?? 1 } } },
        // No access unless a scenario sets one: each flavour's default is what users get (kubeadm: APIServerProxy, as
        // its Machines' firewalls admit no one from the management side to etcd; the process bootstrap: Direct).
        ...(spec.etcdAccess || spec.ghostMemberGracePeriod
          ? {
              etcd: {
                ...(spec.etcdAccess ? { access: spec.etcdAccess } : {}),
                ...(spec.ghostMemberGracePeriod ? { ghostMemberGracePeriod: spec.ghostMemberGracePeriod } : {}),
              },
            }
          : {}),
        ...(spec.machineLostAfter ? { remediation: { machineLostAfter: spec.machineLostAfter } } : {}),
      },
    });
    await create(`/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters`, {
      apiVersion: CAPI_API_VERSION,
      kind: "Cluster",
      metadata: { name, namespace },
      spec: {
        clusterNetwork: { pods: { cidrBlocks: ["10.244.0.0/16"] }, services: { cidrBlocks: ["10.96.0.0/12"] } },
        controlPlaneRef: { apiGroup: API_VERSION.split("/")[0], kind: KIND, name },
        infrastructureRef: { apiGroup: INFRA_API_VERSION.split("/")[0], kind: "ProcessCluster", name },
      },
    });
  }

  async controlPlane(namespace: string, name: string): Promise<QuorumControlPlane> {
    return kubeRequestOk<QuorumControlPlane>(
      this.kubeConfig,
      `/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes/${name}`,
    );
  }

  async patchControlPlane(namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
    await kubeRequestOk(this.kubeConfig, `/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes/${name}`, {
      method: "PATCH",
      body: { spec },
    });
  }

  async machines(namespace: string, cluster: string): Promise<Machine[]> {
    const selector = encodeURIComponent(`${LABEL_CLUSTER_NAME}=${cluster}`);
    return (
      await kubeRequestOk<{ items: Machine[] }>(
        this.kubeConfig,
        `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/machines?labelSelector=${selector}`,
      )
    ).items;
  }

  async processMachines(namespace: string): Promise<ProcessMachineObject[]> {
    return (
      await kubeRequestOk<{ items: ProcessMachineObject[] }>(
        this.kubeConfig,
        `/apis/${INFRA_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessMachine}`,
      )
    ).items;
  }

  /** Stops or starts a kubeadm Machine's "VM" (ProcessMachine spec.powerState), as a cloud's stop and start do. */
  async setPowerState(namespace: string, name: string, powerState: "On" | "Off"): Promise<void> {
    await kubeRequestOk(
      this.kubeConfig,
      `/apis/${INFRA_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessMachine}/${name}`,
      {
        method: "PATCH",
        body: { spec: { powerState } },
      },
    );
  }

  providerEvents(): ProviderEvent[] {
    if (!existsSync(this.eventsFile)) return [];
    return readFileSync(this.eventsFile, "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as ProviderEvent);
  }

  /** Every PID the provider reported starting (etcd and kube-apiserver of every Machine). */
  providerPids(): number[] {
    return this.providerEvents()
      .filter((event) => event.kind === "process-started" && typeof event.pid === "number")
      .map((event) => event.pid as number);
  }

  /** Stops Quorum, the provider (and with it every Machine's processes), CAPI and the management plane. */
  async stop(): Promise<void> {
    await Promise.all(this.quorums.map((quorum) => quorum.process.stop(5_000)));
    await this.provider.stop(10_000);
    await this.kubeadmBootstrap?.stop();
    await this.capi.stop();
    await this.apiServer.stop();
    for (const management of this.extraManagement) await management.stop();
  }

  /** PIDs started for this stack (provider children included) that are still alive. */
  leakedPids(): number[] {
    const pids = [
      ...this.providerPids(),
      this.provider.pid,
      this.capi.process.pid,
      ...(this.kubeadmBootstrap ? [this.kubeadmBootstrap.process.pid] : []),
      this.apiServer.process.pid,
      ...this.quorums.map((quorum) => quorum.process.pid),
      ...this.extraManagement.flatMap((management) => management.pids()),
    ];
    return pids.filter((pid) => isProcessAlive(pid));
  }
}

export interface ProcessMachineObject {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec?: { providerID?: string };
  status?: {
    addresses?: { type: string; address: string }[];
    phase?: string;
    processes?: { etcd?: { pid: number }; apiServer?: { pid: number }; kubelet?: { pid: number } };
    /** kubeadm Machines: the host name kubeadm named the Node and the etcd member after. */
    hostName?: string;
  };
}
