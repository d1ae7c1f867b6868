// The controller integration stack: a real kube-apiserver with Quorum's and CAPI's CRDs, workload clusters
// whose etcd members are real processes started by a MachinePlayer, the Quorum controller as its own process,
// and a quorum monitor that samples the real etcd every 250 ms. Optionally the real CAPI core manager (then the
// players are only infrastructure providers), CAPI's kubeadm bootstrap provider, and the real kube-controller-manager's
// namespace controller and GC.
import { writeFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Machine } from "../../../src/api/capi.ts";
import { API_VERSION, CAPI_API_VERSION, KIND, LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { createEtcdClusterClient } from "../../../src/adapters/etcd/client.ts";
import type { EtcdClientCredentials } from "../../../src/adapters/etcd/types.ts";
import { startApiServer, type ApiServer } from "../../env/apiserver.ts";
import { startCapiManager, startKubeadmBootstrapManager, type CapiManager } from "../../env/capi.ts";
import { startControllerManager, type ControllerManager } from "../../env/controller-manager.ts";
import { installCRDs } from "../../env/crds.ts";
import { kubeRequest, kubeRequestOk } from "../../env/kube.ts";
import { freePort } from "../../env/net.ts";
import { startTcpProxy, type TcpProxy } from "../../env/tcp-proxy.ts";
import { makeTempDir, startProcess, type ManagedProcess } from "../../env/processes.ts";
import { kustomize, type ManifestObject } from "../../unit/config/kustomize.ts";
import { MachinePlayer } from "./player.ts";
import { BOOTSTRAP_GROUP, INFRA_GROUP, TEST_VERSION, testKindCRDs } from "./test-kinds.ts";

const REPO = join(import.meta.dirname, "../../..");

export interface ControllerProcess {
  process: ManagedProcess;
  metricsUrl: string;
  identity: string;
  /** The API user the controller authenticates as. */
  username: string;
  /** With `viaProxy`: the TCP proxy that is this controller's only way to the API server (etcd is reached directly). */
  proxy?: TcpProxy;
}

/** The ServiceAccount config/default deploys the controller as. */
export const CONTROLLER_SERVICE_ACCOUNT = "system:serviceaccount:quorum-system:quorum-manager";
const AGGREGATION_LABEL = "controlplane.cluster.x-k8s.io/aggregate-to-quorum-manager";

export interface StackOptions {
  /** Record every write in an audit log (ControllerStack.auditLog). */
  audit?: boolean;
  /**
   * Run the real CAPI core manager: it is the Machine and Cluster controller, and the MachinePlayers are only the
   * infrastructure and bootstrap providers. Without it, the players also play CAPI's part.
   */
  capi?: boolean;
  /** Run the real kube-controller-manager's namespace and garbage-collector controllers. */
  controllerManager?: boolean;
  /** Run CAPI's real kubeadm bootstrap provider (KubeadmConfig controller) next to the core manager (needs `capi`). */
  kubeadmBootstrap?: boolean;
}

export async function startStack(options: StackOptions = {}): Promise<ControllerStack> {
  const auditDir = makeTempDir("audit");
  const extraArgs = options.audit ? auditArgs(auditDir) : [];
  const apiServer = await startApiServer({ extraArgs });
  const stack = new ControllerStack(apiServer, options.audit ? join(auditDir, "audit.log") : undefined);
  try {
    await installCRDs(apiServer.kubeConfig, { extra: testKindCRDs() });
    if (options.capi) stack.capi = await startCapiManager(apiServer);
    if (options.kubeadmBootstrap) {
      if (!options.capi)
        throw new Error("startStack: kubeadmBootstrap needs capi (CABPK waits on CAPI's Machine and Cluster)");
      stack.kubeadmBootstrap = await startKubeadmBootstrapManager(apiServer);
    }
    if (options.controllerManager) stack.controllerManager = await startControllerManager(apiServer);
    return stack;
  } catch (error) {
    await stack.stop();
    throw error;
  }
}

function auditArgs(dir: string): string[] {
  const policy = join(dir, "policy.yaml");
  // Only writes are interesting: "the controller makes no write at idle".
  const text = [
    "apiVersion: audit.k8s.io/v1",
    "kind: Policy",
    "omitStages: [RequestReceived]",
    "rules:",
    "- level: Metadata",
    "  verbs: [create, update, patch, delete, deletecollection]",
    "- level: None",
    "",
  ].join("\n");
  writeFileSync(policy, text);
  return [`--audit-policy-file=${policy}`, `--audit-log-path=${join(dir, "audit.log")}`, "--audit-log-mode=blocking"];
}

function objectCollectionPath(object: ManifestObject): string {
  const [group, version] = object.apiVersion.includes("/") ? object.apiVersion.split("/") : ["", object.apiVersion];
  const plural = `${object.kind.toLowerCase()}${object.kind.endsWith("s") ? "es" : "s"}`;
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return object.metadata.namespace ? `${base}/namespaces/${object.metadata.namespace}/${plural}` : `${base}/${plural}`;
}

export class ControllerStack {
  readonly players: MachinePlayer[] = [];
  readonly controllers: ControllerProcess[] = [];
  readonly monitors: QuorumMonitor[] = [];
  capi: CapiManager | undefined;
  kubeadmBootstrap: CapiManager | undefined;
  controllerManager: ControllerManager | undefined;

  constructor(
    readonly apiServer: ApiServer,
    readonly auditLog: string | undefined,
  ) {}

  get kubeConfig() {
    return this.apiServer.kubeConfig;
  }

  /**
   * Namespace, Cluster, templates and a QuorumControlPlane owned by the Cluster; a player for its Machines. The
   * bootstrap config template is the test kind the player serves unless `bootstrapTemplate` gives another (e.g. a
   * KubeadmConfigTemplate for the real kubeadm bootstrap provider); it is created as `<name>-boot`, and the player
   * then provisions a Machine only once its bootstrap data exists, as real infrastructure providers do.
   */
  async createCluster(
    namespace: string,
    name: string,
    spec: { replicas: number; version: string; maxSurge?: 0 | 1; memberRemoval?: "BeforeDelete" | "AfterDrain" },
    options: { bootstrapTemplate?: { apiVersion: string; kind: string; spec: Record<string, unknown> } } = {},
  ): Promise<MachinePlayer> {
    const kc = this.kubeConfig;
    await kubeRequest(kc, "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
    });
    const cluster = await kubeRequestOk<{ metadata: { uid: string } }>(
      kc,
      `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters`,
      {
        body: {
          apiVersion: CAPI_API_VERSION,
          kind: "Cluster",
          metadata: { name, namespace },
          spec: { controlPlaneRef: { apiGroup: "controlplane.cluster.x-k8s.io", kind: KIND, name } },
        },
      },
    );
    // The Cluster has no infrastructureRef: CAPI's Cluster controller then marks its infrastructure provisioned
    // itself. Without CAPI, the test does it.
    if (!this.capi)
      await kubeRequestOk(kc, `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters/${name}/status`, {
        method: "PATCH",
        body: { status: { initialization: { infrastructureProvisioned: true } } },
      });
    await kubeRequestOk(kc, `/apis/${INFRA_GROUP}/${TEST_VERSION}/namespaces/${namespace}/testmachinetemplates`, {
      body: {
        apiVersion: `${INFRA_GROUP}/${TEST_VERSION}`,
        kind: "TestMachineTemplate",
        metadata: { name: `${name}-infra`, namespace },
        spec: { template: { spec: { size: "small" } } },
      },
    });
    const bootstrapTemplate = options.bootstrapTemplate ?? {
      apiVersion: `${BOOTSTRAP_GROUP}/${TEST_VERSION}`,
      kind: "TestBootstrapConfigTemplate",
      spec: { template: { spec: { join: "learner" } } },
    };
    const bootstrapTemplateObject = { ...bootstrapTemplate, metadata: { name: `${name}-boot`, namespace } };
    await kubeRequestOk(kc, objectCollectionPath(bootstrapTemplateObject), { body: bootstrapTemplateObject });
    await kubeRequestOk(kc, `/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes`, {
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
          replicas: spec.replicas,
          version: spec.version,
          machineTemplate: {
            spec: {
              infrastructureRef: { apiGroup: INFRA_GROUP, kind: "TestMachineTemplate", name: `${name}-infra` },
              bootstrapConfigTemplateRef: {
                apiGroup: bootstrapTemplate.apiVersion.split("/")[0],
                kind: bootstrapTemplate.kind,
                name: `${name}-boot`,
              },
            },
          },
          rollout: {
            strategy: {
              type: "RollingUpdate",
              rollingUpdate: { maxSurge: spec.maxSurge ?? 1, memberRemoval: spec.memberRemoval ?? "BeforeDelete" },
            },
          },
          // The player's members are etcd processes on loopback addresses, not pods: dial them (a KubeadmConfigTemplate
          // would otherwise default to APIServerProxy).
          etcd: { ghostMemberGracePeriod: "20s", access: "Direct" },
        },
      },
    });
    const player = new MachinePlayer(kc, namespace, name, this.capi ? "infrastructure" : "machine-controller", {
      waitForBootstrapData: options.bootstrapTemplate !== undefined,
    });
    player.start();
    this.players.push(player);
    return player;
  }

  /**
   * Installs an overlay's RBAC (config/default's unless told: ServiceAccount, ClusterRoles, the leader-election Role, bindings) plus a ClusterRole for the test kinds
   * carrying the aggregation label, as a provider would ship it. The stack runs no clusterrole-aggregation controller
   * (its kube-controller-manager, when it runs one, has only the namespace controller and the garbage collector), so
   * the aggregated role is filled here the way that controller would.
   */
  async installControllerRbac(overlay = "config/default"): Promise<void> {
    const kc = this.kubeConfig;
    const rbacKinds = new Set([
      "Namespace",
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "Role",
      "RoleBinding",
    ]);
    const objects = kustomize(overlay).filter((object) => rbacKinds.has(object.kind));
    objects.push({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "quorum-test-kinds", labels: { [AGGREGATION_LABEL]: "true" } },
      rules: [
        // patch: the templates get the Cluster owner reference clusterctl move follows; the clones get
        // spec.machineTemplate.metadata in place.
        { apiGroups: [INFRA_GROUP], resources: ["testmachinetemplates"], verbs: ["get", "patch"] },
        { apiGroups: [INFRA_GROUP], resources: ["testmachines"], verbs: ["create", "patch"] },
        { apiGroups: [BOOTSTRAP_GROUP], resources: ["testbootstrapconfigtemplates"], verbs: ["get", "patch"] },
        { apiGroups: [BOOTSTRAP_GROUP], resources: ["testbootstrapconfigs"], verbs: ["create", "patch"] },
      ],
    } as ManifestObject);
    for (const object of objects) {
      const path = objectCollectionPath(object);
      const created = await kubeRequest(kc, path, { body: object });
      if (created.status !== 201 && created.status !== 409)
        throw new Error(
          `create ${object.kind} ${object.metadata.name}: HTTP ${created.status} ${created.text.slice(0, 300)}`,
        );
    }
    const roles = await kubeRequestOk<{
      items: {
        metadata: { name: string; labels?: Record<string, string> };
        rules?: unknown[];
        aggregationRule?: unknown;
      }[];
    }>(kc, "/apis/rbac.authorization.k8s.io/v1/clusterroles");
    const aggregated = roles.items.find(
      (role) => role.aggregationRule !== undefined && role.metadata.name.startsWith("quorum-"),
    );
    if (!aggregated) throw new Error(`${overlay} has no aggregated ClusterRole for the controller`);
    aggregated.rules = roles.items
      .filter((role) => role.metadata.labels?.[AGGREGATION_LABEL] === "true")
      .flatMap((role) => role.rules ?? []);
    await kubeRequestOk(kc, `/apis/rbac.authorization.k8s.io/v1/clusterroles/${aggregated.metadata.name}`, {
      method: "PUT",
      body: aggregated,
    });
  }

  /**
   * `secureMetrics` keeps the controller's default HTTPS /metrics with token authentication (its serving certificate
   * from `metricsCertDir` when given); otherwise tests scrape plain HTTP (--metrics-secure=false).
   */
  async startController(
    options: {
      env?: Record<string, string>;
      leaderElect?: boolean;
      identity?: string;
      asServiceAccount?: boolean;
      secureMetrics?: boolean;
      metricsCertDir?: string;
      /** The API user (in system:masters) to tell this replica's requests apart in the audit log. */
      username?: string;
      /** Reach the API server through a TCP proxy of its own that the test can black-hole. */
      viaProxy?: boolean;
      /** More flags, e.g. --namespace. */
      args?: string[];
    } = {},
  ): Promise<ControllerProcess> {
    const port = await freePort();
    const identity = options.identity ?? `quorum-${this.controllers.length + 1}`;
    const username = options.asServiceAccount ? CONTROLLER_SERVICE_ACCOUNT : (options.username ?? "quorum-controller");
    const user = await this.apiServer.userKubeConfig(
      username,
      options.asServiceAccount
        ? ["system:serviceaccounts", "system:serviceaccounts:quorum-system", "system:authenticated"]
        : ["system:masters"],
    );
    const proxy = options.viaProxy ? await startTcpProxy(this.apiServer.url) : undefined;
    const kubeconfigPath = proxy ? kubeconfigVia(user.kubeConfig, proxy.url) : user.kubeconfigPath;
    const args = [
      "--import",
      "tsx",
      join(REPO, "src/main.ts"),
      "--kubeconfig",
      kubeconfigPath,
      "--etcd-poll-interval",
      "1s",
      // Settled clusters too (the default is 90s): the tests time etcd-only changes against a 1 s poll.
      "--etcd-idle-poll-interval",
      "1s",
      "--etcd-call-timeout",
      "2s",
      "--metrics-bind-address",
      `127.0.0.1:${port}`,
      ...(options.secureMetrics
        ? options.metricsCertDir
          ? ["--metrics-cert-dir", options.metricsCertDir]
          : []
        : ["--metrics-secure=false"]),
      "--health-probe-bind-address",
      "0",
      "--log-level",
      "debug",
      "--log-format",
      "text",
      ...(options.leaderElect
        ? ["--leader-elect", "--leader-election-namespace", "default", "--leader-election-id", "quorum-test-leader"]
        : []),
      ...(options.args ?? []),
    ];
    const process = startProcess({
      name: `quorum controller ${identity}`,
      command: globalThis.process.execPath,
      args,
      cwd: REPO,
      env: { ...globalThis.process.env, POD_NAME: identity, HOSTNAME: identity, ...(options.env ?? {}) },
    });
    const controller = {
      process,
      metricsUrl: `${options.secureMetrics ? "https" : "http"}://127.0.0.1:${port}/metrics`,
      identity,
      username,
      ...(proxy ? { proxy } : {}),
    };
    this.controllers.push(controller);
    return controller;
  }

  async getControlPlane(namespace: string, name: string): Promise<QuorumControlPlane> {
    return kubeRequestOk<QuorumControlPlane>(
      this.kubeConfig,
      `/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes/${name}`,
    );
  }

  async patchSpec(namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
    await kubeRequestOk(this.kubeConfig, `/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes/${name}`, {
      method: "PATCH",
      body: { spec },
    });
  }

  async machines(namespace: string, clusterName: string): Promise<Machine[]> {
    const list = await kubeRequestOk<{ items: Machine[] }>(
      this.kubeConfig,
      `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/machines?labelSelector=${encodeURIComponent(`${LABEL_CLUSTER_NAME}=${clusterName}`)}`,
    );
    return list.items;
  }

  monitor(player: MachinePlayer): QuorumMonitor {
    const monitor = new QuorumMonitor(player);
    monitor.start();
    this.monitors.push(monitor);
    return monitor;
  }

  /**
   * Waits until the control plane matches its spec: `replicas` Machines, none deleting, all at the spec version,
   * as many etcd members, all healthy voters. The error shows the status and the controller's last log lines.
   */
  async waitConverged(
    namespace: string,
    name: string,
    replicas: number,
    timeoutMs = 180_000,
  ): Promise<QuorumControlPlane> {
    const deadline = Date.now() + timeoutMs;
    let last: QuorumControlPlane | undefined;
    let lastMachines: Machine[] = [];
    while (Date.now() < deadline) {
      last = await this.getControlPlane(namespace, name);
      lastMachines = await this.machines(namespace, name);
      const members = last.status?.etcd?.members ?? [];
      const converged =
        lastMachines.length === replicas &&
        lastMachines.every(
          (machine) => !machine.metadata.deletionTimestamp && machine.spec.version === last?.spec.version,
        ) &&
        members.length === replicas &&
        members.every((member) => member.healthy && !member.learner && member.machine !== undefined) &&
        last.status?.upToDateReplicas === replicas &&
        last.status?.observedGeneration === last.metadata.generation;
      if (converged) return last;
      await sleep(300);
    }
    const logs = this.controllers
      .map(
        (controller) =>
          `--- ${controller.identity} (${controller.process.isRunning() ? "running" : "exited"}) ---\n${controller.process.lastLogLines(40)}`,
      )
      .join("\n");
    throw new Error(
      `QuorumControlPlane ${namespace}/${name} did not converge to ${replicas} replicas within ${timeoutMs / 1000} s.\n` +
        `Machines: ${lastMachines.map((machine) => `${machine.metadata.name}${machine.metadata.deletionTimestamp ? " (deleting)" : ""} ${machine.spec.version}`).join(", ")}\n` +
        `status.nextAction: ${JSON.stringify(last?.status?.nextAction)}\nstatus.etcd: ${JSON.stringify(last?.status?.etcd)}\n` +
        `player errors: ${JSON.stringify(this.players.flatMap((player) => player.events.filter((event) => event.kind === "error").slice(-3)))}\n${logs}`,
    );
  }

  async stop(): Promise<void> {
    for (const controller of this.controllers) {
      await controller.process.stop(5_000);
      await controller.proxy?.close();
    }
    for (const monitor of this.monitors) await monitor.stop();
    for (const player of this.players) await player.stop();
    await this.controllerManager?.stop();
    await this.kubeadmBootstrap?.stop();
    await this.capi?.stop();
    await this.apiServer.stop();
  }
}

/** A kubeconfig file like `kubeConfig` (same user and CA) whose server is `server`. */
function kubeconfigVia(kubeConfig: KubeConfig, server: string): string {
  const cluster = kubeConfig.getCurrentCluster();
  const user = kubeConfig.getCurrentUser();
  if (!cluster || !user) throw new Error("kubeconfig without a current cluster or user");
  const via = new KubeConfig();
  via.loadFromOptions({
    clusters: [{ ...cluster, server }],
    users: [user],
    contexts: [{ name: "via-proxy", cluster: cluster.name, user: user.name }],
    currentContext: "via-proxy",
  });
  const path = join(makeTempDir("kubeconfig"), "kubeconfig");
  writeFileSync(path, via.exportConfig());
  return path;
}

export interface QuorumSample {
  at: number;
  voters: number;
  healthyVoters: number;
}

/** Samples the real etcd every 250 ms: voters from the member list, health from a status call to each member. */
export class QuorumMonitor {
  readonly samples: QuorumSample[] = [];
  readonly losses: QuorumSample[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly player: MachinePlayer) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      await sleep(250);
      const sample = await this.sample();
      if (!sample) continue;
      this.samples.push(sample);
      if (sample.voters < 0 || sample.healthyVoters >= Math.floor(sample.voters / 2) + 1) continue;
      // A loss is a state, not one unlucky round: look again at once, and record it only if it is still there. Two
      // harness artefacts looked like losses in one round: a member removed (and exiting) between the member list
      // and its status call, and status calls that missed their deadline on a machine loaded far past its 2 cores.
      // Quorum's own actions cannot cause a loss that heals by itself within one round (a removal stays removed).
      const again = await this.sample();
      if (again && again.voters >= 0 && again.healthyVoters < Math.floor(again.voters / 2) + 1)
        this.losses.push(sample);
    }
  }

  /** One round: voters are the non-learners listed both before and after the status calls; undefined: nothing to ask. */
  private async sample(): Promise<QuorumSample | undefined> {
    const etcd = this.player.etcd;
    const endpoints = this.player.liveEndpoints();
    if (!etcd || endpoints.length === 0) return undefined;
    const credentials: EtcdClientCredentials = {
      caPem: etcd.credentials.caPem,
      certPem: etcd.credentials.certPem,
      keyPem: etcd.credentials.keyPem,
    };
    const client = createEtcdClusterClient({
      endpoints,
      credentials,
      callDeadlineMs: 2_000,
      context: "quorum monitor",
    });
    try {
      const members = await client.listMembers();
      const statuses = await client.memberStatuses(members);
      const after = new Set(
        (await client.listMembers()).filter((member) => !member.learner).map((member) => member.id),
      );
      const voters = members.filter((member) => after.has(member.id));
      const healthyVoters = voters.filter(
        (voter) => statuses.find((status) => status.memberId === voter.id)?.reachable,
      ).length;
      return { at: Date.now(), voters: voters.length, healthyVoters };
    } catch {
      // No member answered the member list: recorded as a sample with no voters, never as a loss on its own.
      return { at: Date.now(), voters: -1, healthyVoters: -1 };
    } finally {
      await client.close();
    }
  }
}
