// Access to a workload cluster's Kubernetes API. Where Quorum holds the cluster CA's key (`<cluster>-ca`) and the Cluster
// has a control-plane endpoint, it presents its own short-lived client certificate from that CA, issued in memory, as
// it does for etcd: nothing a tenant writes into a Secret is used then. Otherwise it falls back to the
// `<cluster>-kubeconfig` Secret, read as data, not code: only its server, CA and client certificate/key or token are
// used (kubeConfigOf, src/adapters/certs/kubeconfig-data.ts). One client per cluster, rebuilt when its credentials
// change (renewal, rotation, new endpoint); every call has a deadline because an unreachable control-plane endpoint
// must not stall a reconcile.
import { createHash } from "node:crypto";
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  Observable,
  RbacAuthorizationV1Api,
  type V1Node,
} from "@kubernetes/client-node";
import type { Node } from "../../api/capi.ts";
import type { NodeQuery } from "../../ports/index.ts";
import { secretName } from "../../api/constants.ts";
import { TLS_KEY } from "../certs/ca-secret.ts";
import { ClientCertificates } from "../certs/client-certificates.ts";
import { ADMIN_GROUP, kubeconfigFromSecret, serverURL, type KubeconfigContents } from "../certs/kubeconfig.ts";
import { dataText, type SecretStore } from "../certs/secret-store.ts";
import { SecretMissingError, secretKey, statusMessageOf, WorkloadApiError } from "../errors.ts";
import { reuseConnections } from "../kube/keep-alive.ts";
import { withRetryAfter } from "../kube/retry-after.ts";
import { errorMessage } from "../kube/log.ts";

export const DEFAULT_WORKLOAD_TIMEOUT_MS = 10_000;
/** The user Quorum's own workload API client certificate names (in the workload API server's audit log). */
export const WORKLOAD_CLIENT_COMMON_NAME = "quorum-controller";
/** Short-lived: it only ever lives in this process's memory, and a new one costs milliseconds. */
export const WORKLOAD_CLIENT_CERT_LIFETIME_MS = 60 * 60 * 1000;

interface CachedClient {
  fingerprint: string;
  server: string;
  /** Where its credentials came from, for error messages. */
  credentialsFrom: string;
  config: KubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  rbac: RbacAuthorizationV1Api;
}

/** The workload API groups a bootstrap flavour reads and writes (src/adapters/workload/kubeadm/). */
export interface WorkloadApis {
  core: CoreV1Api;
  apps: AppsV1Api;
  rbac: RbacAuthorizationV1Api;
}

/** Per-call options that put this client's deadline on one call (pass as the last argument of any API method). */
export type CallOptions = ReturnType<typeof withSignal>;

export type WorkloadRequest<T> = (apis: WorkloadApis, options: CallOptions) => Promise<T>;

/** One deadline-bound workload API call (WorkloadClients.caller); `absentOk` turns a 404 into undefined. */
export interface WorkloadCaller {
  <T>(what: string, request: WorkloadRequest<T>): Promise<T>;
  <T>(what: string, request: WorkloadRequest<T>, absentOk: true): Promise<T | undefined>;
}

/** Server, CA and credentials for one cluster, before a client is built from them. */
interface Access {
  contents: KubeconfigContents;
  credentialsFrom: string;
  fingerprint: string;
}

export interface WorkloadClientsOptions {
  timeoutMs?: number;
  /** Lifetime of Quorum's own workload API client certificate. */
  clientCertLifetimeMs?: number;
}

export class WorkloadClients {
  private readonly cache = new Map<string, CachedClient>();
  private readonly timeoutMs: number;
  private readonly ownCertificates: ClientCertificates;

  constructor(
    private readonly store: SecretStore,
    options: WorkloadClientsOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_WORKLOAD_TIMEOUT_MS;
    // system:masters, the identity of the admin kubeconfig Quorum already writes for this cluster (so no new power): a
    // workload cluster whose control plane is still forming has no role Quorum could be bound to beforehand, and a
    // role inside it would be one its tenant can edit. Quorum lists Nodes and, for kubeadm control planes, reads and
    // writes kubeadm-config, kube-proxy and two ClusterRoleBindings with it (kubeadm/flavour.ts).
    this.ownCertificates = new ClientCertificates(store, {
      caSecret: secretName.ca,
      commonName: WORKLOAD_CLIENT_COMMON_NAME,
      organization: ADMIN_GROUP,
      purpose: "to issue Quorum's client certificate for the workload cluster's API",
      lifetimeMs: options.clientCertLifetimeMs ?? WORKLOAD_CLIENT_CERT_LIFETIME_MS,
    });
  }

  /**
   * The workload cluster's Nodes, through `endpoint` (Cluster.spec.controlPlaneEndpoint) with Quorum's own client
   * certificate when `<cluster>-ca` holds a key, else through the kubeconfig Secret. Throws SecretMissingError /
   * SecretGarbageError / KubeconfigRefusedError for the kubeconfig Secret, the CA errors of readCASecret for
   * `<cluster>-ca`, WorkloadApiError when the API server does not answer in time or refuses.
   */
  async listNodes(
    namespace: string,
    cluster: string,
    endpoint?: { host?: string; port?: number },
    now: Date = new Date(),
    query: NodeQuery = { names: [] },
  ): Promise<Node[]> {
    const call = this.caller(namespace, cluster, endpoint, now);
    const { labelSelector } = query;
    const list = await call(labelSelector ? `list Nodes labelled ${labelSelector}` : "list Nodes", (apis, options) =>
      apis.core.listNode(labelSelector ? { labelSelector } : {}, options),
    );
    const listed = new Set(list.items.map((node) => node.metadata?.name));
    const missing = [...new Set(query.names)].filter((name) => !listed.has(name));
    const read = await Promise.all(
      missing.map((name) => call(`read Node ${name}`, (apis, options) => apis.core.readNode({ name }, options), true)),
    );
    return [...list.items, ...read.filter((node) => node !== undefined)].map(toNode);
  }

  /**
   * Calls to one cluster's workload API (reached as listNodes reaches it), each with this client's deadline. `what`
   * names the call in errors ("read ConfigMap kube-system/kubeadm-config"). A 404 comes back as `undefined` when
   * `absentOk`; every other failure is a WorkloadApiError.
   */
  caller(
    namespace: string,
    cluster: string,
    endpoint: { host?: string; port?: number } | undefined,
    now: Date,
  ): WorkloadCaller {
    const call = async <T>(what: string, request: WorkloadRequest<T>, absentOk = false): Promise<T | undefined> => {
      const client = await this.clientFor(namespace, cluster, endpoint, now);
      const signal = AbortSignal.timeout(this.timeoutMs);
      try {
        return await request(client, withSignal(signal));
      } catch (error) {
        if (absentOk && error instanceof ApiException && error.code === 404) return undefined;
        throw new WorkloadApiError(
          client.server,
          client.credentialsFrom,
          describe(error, signal, this.timeoutMs, what),
          { cause: error },
        );
      }
    };
    return call as WorkloadCaller;
  }

  /**
   * The KubeConfig of the client calls to this cluster go through (same server, same credentials), for what
   * client-node builds from a KubeConfig itself: the etcd port-forwards of spec.etcd.access APIServerProxy.
   */
  async kubeConfig(
    namespace: string,
    cluster: string,
    endpoint: { host?: string; port?: number } | undefined,
    now: Date,
  ): Promise<KubeConfig> {
    return (await this.clientFor(namespace, cluster, endpoint, now)).config;
  }

  /** Drops the cluster's client and Quorum's client certificate and private key for it; every cluster's without arguments. */
  forget(namespace?: string, cluster?: string): void {
    if (namespace === undefined || cluster === undefined) this.cache.clear();
    else this.cache.delete(`${namespace}/${cluster}`);
    this.ownCertificates.forget(namespace, cluster);
  }

  /** namespace/cluster of every cluster with a kept client or a held private key (for tests of forget). */
  heldClusters(): string[] {
    return [...new Set([...this.cache.keys(), ...this.ownCertificates.heldClusters()])];
  }

  private async clientFor(
    namespace: string,
    cluster: string,
    endpoint: { host?: string; port?: number } | undefined,
    now: Date,
  ): Promise<CachedClient> {
    const access =
      (await this.ownAccess(namespace, cluster, endpoint, now)) ?? (await this.kubeconfigAccess(namespace, cluster));
    const key = `${namespace}/${cluster}`;
    const cached = this.cache.get(key);
    if (cached?.fingerprint === access.fingerprint) return cached;
    const config = kubeConfigOf(access.contents);
    // Nodes are listed on every reconcile: keep the connection instead of a TLS handshake each time.
    reuseConnections(config);
    // A workload API server that has just started answers 429 until its caches are ready: sent again, as client-go does.
    withRetryAfter(config, this.timeoutMs);
    const client = {
      fingerprint: access.fingerprint,
      server: access.contents.server,
      credentialsFrom: access.credentialsFrom,
      config,
      core: config.makeApiClient(CoreV1Api),
      apps: config.makeApiClient(AppsV1Api),
      rbac: config.makeApiClient(RbacAuthorizationV1Api),
    };
    this.cache.set(key, client);
    return client;
  }

  /** Quorum's own certificate, when the endpoint is known and the cluster CA's key is in `<cluster>-ca`. */
  private async ownAccess(
    namespace: string,
    cluster: string,
    endpoint: { host?: string; port?: number } | undefined,
    now: Date,
  ): Promise<Access | undefined> {
    if (!endpoint?.host || !endpoint.port) return undefined;
    const caRef = this.ownCertificates.caRef(namespace, cluster);
    const caSecret = await this.store.get(caRef);
    // A CA whose key lives elsewhere (a user's external PKI) cannot sign for Quorum: the kubeconfig Secret it is.
    if (!caSecret || dataText(caSecret, TLS_KEY) === undefined) return undefined;
    const credentials = await this.ownCertificates.get(namespace, cluster, now);
    const server = serverURL({ host: endpoint.host, port: endpoint.port });
    return {
      contents: { cluster, server, ...credentials },
      credentialsFrom: `with Quorum's own client certificate from the CA in Secret ${secretKey(caRef)}`,
      fingerprint: fingerprintOf("own", { server, ca: credentials.caPem, cert: credentials.certPem }),
    };
  }

  private async kubeconfigAccess(namespace: string, cluster: string): Promise<Access> {
    const ref = { namespace, name: secretName.kubeconfig(cluster) };
    const secret = await this.store.get(ref);
    if (!secret) {
      throw new SecretMissingError(
        ref,
        "to reach the workload cluster's API (list Nodes)",
        "Quorum uses its own client certificate once Cluster.spec.controlPlaneEndpoint is set and the <cluster>-ca " +
          "Secret holds the CA key, and writes this Secret then; until then, or with a CA whose key it does not hold, " +
          "create it with a kubeconfig for the cluster (client-certificate-data/client-key-data or token)",
      );
    }
    const { contents } = kubeconfigFromSecret(ref, secret);
    return {
      contents,
      credentialsFrom: `from Secret ${secretKey(ref)}`,
      fingerprint: fingerprintOf(secret.metadata.resourceVersion ?? "", secret.data),
    };
  }
}

/**
 * A KubeConfig built from the parsed values alone (never loadFromString, which would honour exec, auth-provider,
 * file references and proxies: src/adapters/certs/kubeconfig-data.ts says why).
 */
export function kubeConfigOf(contents: KubeconfigContents): KubeConfig {
  const b64 = (pem: string) => (pem === "" ? undefined : Buffer.from(pem, "utf8").toString("base64"));
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: "workload", server: contents.server, caData: b64(contents.caPem), skipTLSVerify: false }],
    users: [{ name: "quorum", certData: b64(contents.certPem), keyData: b64(contents.keyPem), token: contents.token }],
    contexts: [{ name: "workload", cluster: "workload", user: "quorum" }],
    currentContext: "workload",
  });
  return config;
}

// client-node 1.x has no per-call timeout; its request context takes an AbortSignal, set from a middleware.
function withSignal(signal: AbortSignal) {
  return {
    middleware: [
      {
        pre: (context: { setSignal(signal: AbortSignal): void }) => {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: <T>(response: T) => new Observable(Promise.resolve(response)),
      },
    ],
    middlewareMergeStrategy: "append" as const,
  } as unknown as Parameters<CoreV1Api["listNode"]>[1];
}

function describe(error: unknown, signal: AbortSignal, timeoutMs: number, what: string): string {
  if (signal.aborted) return `did not answer within ${timeoutMs} ms (${what})`;
  if (error instanceof ApiException) {
    return `refused to ${what} (HTTP ${error.code}: ${statusMessageOf(error.body)})`;
  }
  return `could not be reached (${errorMessage(error)})`;
}

function toNode(node: V1Node): Node {
  const metadata = node.metadata ?? {};
  const result: Node = { metadata: { name: metadata.name ?? "" } };
  if (metadata.uid) result.metadata.uid = metadata.uid;
  if (metadata.labels) result.metadata.labels = { ...metadata.labels };
  if (metadata.annotations) result.metadata.annotations = { ...metadata.annotations };
  if (metadata.creationTimestamp)
    result.metadata.creationTimestamp = new Date(metadata.creationTimestamp).toISOString();
  if (metadata.deletionTimestamp)
    result.metadata.deletionTimestamp = new Date(metadata.deletionTimestamp).toISOString();
  if (node.spec?.providerID) result.spec = { providerID: node.spec.providerID };
  if (node.status) {
    result.status = {
      conditions: (node.status.conditions ?? []).map((condition) => ({
        type: condition.type,
        status: condition.status,
        ...(condition.lastTransitionTime
          ? { lastTransitionTime: new Date(condition.lastTransitionTime).toISOString() }
          : {}),
      })),
      addresses: (node.status.addresses ?? []).map((address) => ({ type: address.type, address: address.address })),
    };
  }
  return result;
}

function fingerprintOf(prefix: string, data: Record<string, string> | undefined): string {
  const hash = createHash("sha256").update(prefix);
  for (const key of Object.keys(data ?? {}).sort()) hash.update(`\0${key}\0${data?.[key]}`);
  return hash.digest("hex");
}
