// The controller's WorkloadAccess port, assembled from the certificate, etcd and workload-API adapters.
// Holds the per-cluster caches: etcd and workload API client certificates, workload API clients, and one etcd client
// per cluster kept between reconciles (pool.ts; what etcd() returns is a lease the caller closes after each reconcile).
// Private keys are dropped with their cluster (forget) and all of them by closeAll() (shutdown, lost leadership).
import { createHash } from "node:crypto";
import { CONTROL_PLANE_NODE_LABEL, type Cluster, type Node } from "../../api/capi.ts";
import { etcdAccessOf } from "../../api/flavour.ts";
import type { QuorumControlPlane } from "../../api/types.ts";
import type {
  ApiServerReadiness,
  CertificatesExpiries,
  NodeQuery,
  ServingMachine,
  TemplateReader,
  WorkloadAccess,
  WorkloadSteps,
} from "../../ports/index.ts";
import {
  CLUSTER_CERTIFICATE_PURPOSES,
  ensureClusterCertificates,
  runningControlPlaneEvidence,
  type ControlPlaneOwner,
  type EnsureCertificatesResult,
} from "../certs/cluster-secrets.ts";
import { secretName } from "../../api/constants.ts";
import { checkCASecret, forgetCheckedCA } from "../certs/ca-secret.ts";
import { ensureKubeconfig, type EnsureKubeconfigResult } from "../certs/kubeconfig.ts";
import { encryptionAlgorithmOf } from "../certs/key-algorithm.ts";
import { secretMetadata, type SecretStore } from "../certs/secret-store.ts";
import { createEtcdClusterClient } from "../etcd/client.ts";
import { EtcdClientCertificates, type EtcdCredentialsOptions } from "../etcd/credentials.ts";
import { EtcdClientPool } from "../etcd/pool.ts";
import { ApiServerTunnel } from "../etcd/apiserver-tunnel.ts";
import type {
  EtcdClientOptions,
  EtcdClusterClient,
  EtcdClusterClientFactory,
  EtcdTunnelFactory,
} from "../etcd/types.ts";
import type { Logger } from "../kube/log.ts";
import { apiServersReadiness } from "./api-server-readiness.ts";
import { WorkloadClients, type WorkloadCaller } from "./client.ts";
import { WorkloadFlavours } from "./flavours.ts";
import { apiServerPortOf, ServingCertificateExpiries } from "./serving-certificate.ts";

export interface WorkloadAccessOptions {
  secrets: SecretStore;
  /** Deadline of each etcd call to one member; a status round takes about this long when a member is frozen. */
  etcdCallDeadlineMs?: number;
  etcdCredentials?: EtcdCredentialsOptions;
  /** Deadline of each workload API call. */
  workloadTimeoutMs?: number;
  /** Lifetime of the kubeconfig Secret's client certificate. */
  kubeconfigLifetimeMs?: number;
  /** Replaced by tests and the simulator; defaults to the etcd3-backed client. */
  etcdClientFactory?: EtcdClusterClientFactory;
  /** A cluster's kept etcd client is closed after this long without a reconcile (default 2 minutes). */
  etcdIdleCloseMs?: number;
  /**
   * A kept connection to one of the cluster's etcd members closed or failed (the member died or restarted), with the
   * control plane's namespace/name: the controller looks at the cluster now instead of at its next poll.
   */
  onEtcdConnectionLost?: (controlPlaneKey: string, endpoint: string) => void;
  /** Where problems nobody else would see are reported (an etcd client that failed to close); default stderr. */
  log?: Logger;
  clock?: () => Date;
}

export const DEFAULT_ETCD_CALL_DEADLINE_MS = 5_000;
/** How long a passed certificate check holds when nothing it read changed (expiry is seen within this much). */
const CERTIFICATES_RECHECK_MS = 60_000;

export interface CertificatesOutcome {
  secrets: EnsureCertificatesResult;
  /** Absent when Cluster.spec.controlPlaneEndpoint is not set yet (nothing to point a kubeconfig at). */
  kubeconfig?: EnsureKubeconfigResult;
}

export class ClusterWorkloadAccess implements WorkloadAccess {
  private readonly etcdCertificates: EtcdClientCertificates;
  private readonly workloadClients: WorkloadClients;
  private readonly clock: () => Date;
  private readonly etcdCallDeadlineMs: number;
  private readonly etcdClientFactory: EtcdClusterClientFactory;
  private readonly etcdClients: EtcdClientPool;
  /** Per cluster: each control-plane Machine's addresses to its Node (the last etcd() call's). */
  private readonly machineNodes = new Map<string, ReadonlyMap<string, string>>();
  /** Per namespace/cluster: when its certificate Secrets last passed the check, and their versions then. */
  private readonly checkedCertificates = new Map<string, { at: number; fingerprint: string }>();
  private readonly flavours: WorkloadFlavours;
  private readonly servingCertificates: ServingCertificateExpiries;

  constructor(private readonly options: WorkloadAccessOptions) {
    this.etcdCertificates = new EtcdClientCertificates(options.secrets, options.etcdCredentials);
    this.workloadClients = new WorkloadClients(options.secrets, { timeoutMs: options.workloadTimeoutMs });
    this.clock = options.clock ?? (() => new Date());
    this.flavours = new WorkloadFlavours(() => this.clock().getTime());
    this.servingCertificates = new ServingCertificateExpiries(() => this.clock().getTime());
    this.etcdCallDeadlineMs = options.etcdCallDeadlineMs ?? DEFAULT_ETCD_CALL_DEADLINE_MS;
    this.etcdClientFactory = options.etcdClientFactory ?? createEtcdClusterClient;
    this.etcdClients = new EtcdClientPool({
      factory: this.etcdClientFactory,
      log: options.log ?? stderrLogger,
      ...(options.etcdIdleCloseMs !== undefined ? { idleCloseMs: options.etcdIdleCloseMs } : {}),
    });
  }

  /**
   * reconcileCertificates, skipped while none of the cluster's certificate Secrets (nor its endpoint) changed since
   * the last successful check and that check is less than a minute old: parsing and matching CA keys on every
   * reconcile was most of an idle reconcile's cost. Any change to a Secret is seen at the next reconcile.
   */
  async ensureCertificates(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    bootstrapTemplate?: TemplateReader,
  ): Promise<void> {
    const key = `${namespaceOf(controlPlane)}/${cluster.metadata.name}`;
    const now = this.clock().getTime();
    const last = this.checkedCertificates.get(key);
    if (
      last &&
      now - last.at < CERTIFICATES_RECHECK_MS &&
      last.fingerprint === (await this.certificatesFingerprint(controlPlane, cluster))
    )
      return;
    this.checkedCertificates.delete(key);
    await this.reconcileCertificates(controlPlane, cluster, bootstrapTemplate);
    this.checkedCertificates.set(key, {
      at: now,
      fingerprint: await this.certificatesFingerprint(controlPlane, cluster),
    });
  }

  /** Identifies the current version of every Secret and input the certificate check depends on. */
  private async certificatesFingerprint(controlPlane: QuorumControlPlane, cluster: Cluster): Promise<string> {
    const namespace = namespaceOf(controlPlane);
    const name = cluster.metadata.name;
    const endpoint = cluster.spec?.controlPlaneEndpoint;
    const parts = [controlPlane.metadata.uid ?? "", `${endpoint?.host ?? ""}:${endpoint?.port ?? ""}`];
    for (const secret of [
      secretName.ca(name),
      secretName.etcd(name),
      secretName.sa(name),
      secretName.proxy(name),
      secretName.kubeconfig(name),
    ]) {
      // Its version only, or a hash of its data where the store keeps no versions (so a cache may hold no data).
      const object = await secretMetadata(this.options.secrets, { namespace, name: secret });
      parts.push(
        !object
          ? "-"
          : (object.metadata.resourceVersion ??
              createHash("sha256")
                .update(JSON.stringify(object.data ?? {}))
                .digest("hex")),
      );
    }
    return parts.join("|");
  }

  /** ensureCertificates, telling what it did (for an Event when a Secret was created or rotated). */
  async reconcileCertificates(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    bootstrapTemplate?: TemplateReader,
  ): Promise<CertificatesOutcome> {
    const owner = ownerOf(controlPlane);
    const now = this.clock();
    // Only a new cluster gets generated CAs: on a running one a missing CA is restored from backup, not replaced.
    const running = runningControlPlaneEvidence(controlPlane, cluster);
    const ref = controlPlane.spec.machineTemplate.spec.bootstrapConfigTemplateRef;
    const keyAlgorithm = bootstrapTemplate
      ? async () => encryptionAlgorithmOf(await bootstrapTemplate(), `${ref.kind} ${owner.namespace}/${ref.name}`)
      : undefined;
    const secrets = await ensureClusterCertificates(
      this.options.secrets,
      cluster.metadata.name,
      owner,
      now,
      running,
      keyAlgorithm,
    );
    // Check the CAs Quorum signs with now, not when a Machine first needs them: a garbage or expired Secret then
    // stops the reconcile before any Machine is created, with a condition naming the Secret.
    const caRef = { namespace: owner.namespace, name: secretName.ca(cluster.metadata.name) };
    await checkCASecret(caRef, await this.options.secrets.get(caRef), now, "cluster CA");
    await this.etcdCertificates.get(owner.namespace, cluster.metadata.name, now);
    const endpoint = cluster.spec?.controlPlaneEndpoint;
    if (!endpoint?.host || !endpoint.port) return { secrets };
    const kubeconfig = await ensureKubeconfig(this.options.secrets, {
      cluster: cluster.metadata.name,
      owner,
      endpoint: { host: endpoint.host, port: endpoint.port },
      now,
      ...(this.options.kubeconfigLifetimeMs ? { lifetimeMs: this.options.kubeconfigLifetimeMs } : {}),
    });
    return { secrets, kubeconfig };
  }

  async etcd(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    endpoints: string[],
    machineNodes?: ReadonlyMap<string, string>,
  ): Promise<EtcdClusterClient> {
    const namespace = namespaceOf(controlPlane);
    // The latest reconcile's, read by the kept client's tunnel at each new connection.
    if (machineNodes) this.machineNodes.set(clusterKey(namespace, cluster.metadata.name), machineNodes);
    const credentials = await this.etcdCertificates.get(namespace, cluster.metadata.name, this.clock());
    const options: EtcdClientOptions = {
      endpoints,
      credentials,
      callDeadlineMs: this.etcdCallDeadlineMs,
      context: `etcd of cluster ${namespace}/${cluster.metadata.name}`,
      ...(etcdAccessOf(controlPlane) === "APIServerProxy"
        ? { tunnel: this.tunnelThroughApiServer(namespace, cluster) }
        : {}),
    };
    // No endpoints is a reconcile that found nothing to reach: a throwaway client (its calls fail, naming the
    // cluster) instead of replacing the kept one, which the next reconcile with addresses still wants.
    if (endpoints.length === 0) return this.etcdClientFactory(options);
    const onLost = this.options.onEtcdConnectionLost;
    const controlPlaneKey = `${namespace}/${controlPlane.metadata.name}`;
    return this.etcdClients.acquire(clusterKey(namespace, cluster.metadata.name), {
      ...options,
      ...(onLost ? { onConnectionLost: (endpoint: string) => onLost(controlPlaneKey, endpoint) } : {}),
    });
  }

  /**
   * spec.etcd.access APIServerProxy: the etcd client's connections go over port-forwards through the workload API
   * server, reached as nodes() reaches it (same client, same credentials, renewed under the tunnel). A new control-plane
   * endpoint is a new identity, so the pool replaces the kept client.
   */
  private tunnelThroughApiServer(namespace: string, cluster: Cluster): EtcdTunnelFactory {
    const name = cluster.metadata.name;
    const endpoint = cluster.spec?.controlPlaneEndpoint;
    const server = endpoint?.host ? `${endpoint.host}:${endpoint.port ?? ""}` : "from the kubeconfig Secret";
    return {
      identity: `APIServerProxy via ${server}`,
      open: () =>
        new ApiServerTunnel({
          server: endpoint?.host ? `https://${server}` : `of cluster ${namespace}/${name}`,
          kubeConfig: () => this.workloadClients.kubeConfig(namespace, name, endpoint, this.clock()),
          machineNode: (host) => this.machineNodes.get(clusterKey(namespace, name))?.get(host.toLowerCase()),
          listNodes: (scope) =>
            this.workloadClients.listNodes(namespace, name, endpoint, this.clock(), {
              ...(scope === "control-plane" ? { labelSelector: CONTROL_PLANE_NODE_LABEL } : {}),
              names: [],
            }),
          podExists: async (pod) => {
            const call = this.workloadClients.caller(namespace, name, endpoint, this.clock());
            const found = await call(
              `read Pod ${pod.namespace}/${pod.name}`,
              (apis, options) => apis.core.readNamespacedPod({ namespace: pod.namespace, name: pod.name }, options),
              true,
            );
            return found !== undefined;
          },
          openTimeoutMs: this.etcdCallDeadlineMs,
        }),
    };
  }

  async nodes(controlPlane: QuorumControlPlane, cluster: Cluster, query?: NodeQuery): Promise<Node[]> {
    return this.workloadClients.listNodes(
      namespaceOf(controlPlane),
      cluster.metadata.name,
      cluster.spec?.controlPlaneEndpoint,
      this.clock(),
      query,
    );
  }

  async workloadSteps(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    template: TemplateReader,
  ): Promise<WorkloadSteps> {
    return this.flavours.workloadSteps(controlPlane, cluster, () => this.caller(controlPlane, cluster), template);
  }

  async prepareWorkload(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    step: string,
    template: TemplateReader,
  ): Promise<string> {
    return this.flavours.prepare(controlPlane, cluster, step, () => this.caller(controlPlane, cluster), template);
  }

  /**
   * Only Machines that run their own API server (kubeadm's) carry certificates that expire under them (one year); the
   * port comes from the bootstrap template (kubeadm's localAPIEndpoint.bindPort), read only when a Machine is to be
   * dialled.
   */
  async certificatesExpiry(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    machines: ServingMachine[],
    template: TemplateReader,
  ): Promise<CertificatesExpiries> {
    if (!this.flavours.of(controlPlane).machinesServeApi || machines.length === 0) return { expiries: {}, errors: [] };
    let port: number;
    try {
      port = apiServerPortOf(await template());
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return {
        expiries: {},
        errors: [`the API server port could not be read from the bootstrap template: ${message}`],
      };
    }
    return this.servingCertificates.expiries(
      clusterKey(namespaceOf(controlPlane), cluster.metadata.name),
      machines,
      port,
    );
  }

  /** Machines that run their own kube-apiserver (kubeadm's), at the bootstrap template's port (as certificatesExpiry). */
  async apiServers(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    machines: ServingMachine[],
    template: TemplateReader,
  ): Promise<Record<string, ApiServerReadiness>> {
    if (!this.flavours.of(controlPlane).machinesServeApi || machines.length === 0) return {};
    let port: number;
    try {
      port = apiServerPortOf(await template());
    } catch {
      // The template could not be read: the workload steps, which read it too, say so; nothing is dialled.
      return {};
    }
    return apiServersReadiness(machines, port);
  }

  /** Deadline-bound calls to this cluster's workload API, through the same client and credentials as nodes(). */
  private caller(controlPlane: QuorumControlPlane, cluster: Cluster): WorkloadCaller {
    return this.workloadClients.caller(
      namespaceOf(controlPlane),
      cluster.metadata.name,
      cluster.spec?.controlPlaneEndpoint,
      this.clock(),
    );
  }

  /**
   * Drops everything kept for a cluster that is gone: its etcd client, Quorum's etcd and workload API client
   * certificates and their private keys, the workload API client, and the parsed CAs (keys included) of its CA Secrets.
   */
  async forget(namespace: string, clusterName: string): Promise<void> {
    this.etcdCertificates.forget(namespace, clusterName);
    this.checkedCertificates.delete(`${namespace}/${clusterName}`);
    this.workloadClients.forget(namespace, clusterName);
    this.flavours.forget(namespace, clusterName);
    this.servingCertificates.forget(clusterKey(namespace, clusterName));
    this.machineNodes.delete(clusterKey(namespace, clusterName));
    for (const purpose of CLUSTER_CERTIFICATE_PURPOSES)
      forgetCheckedCA({ namespace, name: secretName[purpose](clusterName) });
    await this.etcdClients.forget(clusterKey(namespace, clusterName));
  }

  /**
   * Closes every kept etcd client and drops every private key this object holds (process shutdown, and losing
   * leadership: a standby needs none). Leases still held stop working; a later etcd() opens a new client.
   */
  async closeAll(): Promise<void> {
    this.etcdCertificates.forget();
    this.workloadClients.forget();
    this.checkedCertificates.clear();
    this.servingCertificates.clear();
    this.machineNodes.clear();
    forgetCheckedCA();
    await this.etcdClients.closeAll();
  }

  /** namespace/cluster of every cluster for which a private key Quorum issued is held (for tests of forget). */
  heldPrivateKeys(): string[] {
    return [...new Set([...this.etcdCertificates.heldClusters(), ...this.workloadClients.heldClusters()])].sort();
  }
}

function clusterKey(namespace: string, clusterName: string): string {
  return `${namespace}/${clusterName}`;
}

const stderrLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (message) => process.stderr.write(`quorum: warning: ${message}\n`),
  error: (message) => process.stderr.write(`quorum: error: ${message}\n`),
};

function namespaceOf(controlPlane: QuorumControlPlane): string {
  return controlPlane.metadata.namespace ?? "default";
}

function ownerOf(controlPlane: QuorumControlPlane): ControlPlaneOwner {
  const uid = controlPlane.metadata.uid;
  if (!uid) {
    throw new Error(
      `QuorumControlPlane ${namespaceOf(controlPlane)}/${controlPlane.metadata.name} has no metadata.uid: ` +
        "pass the object as read from the API server, so the Secrets it owns get a valid ownerReference",
    );
  }
  return { namespace: namespaceOf(controlPlane), name: controlPlane.metadata.name, uid };
}
