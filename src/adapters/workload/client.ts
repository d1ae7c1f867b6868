// Access to a workload cluster's Kubernetes API through its `<cluster>-kubeconfig` Secret (the one Quorum
// maintains, or a user's). One client per cluster, rebuilt when the Secret changes (rotation, new endpoint);
// every call has a deadline because an unreachable control-plane endpoint must not stall a reconcile. The Secret is
// data, not code: only its server, CA and client certificate/key or token are used (kubeConfigOf).
import { createHash } from "node:crypto";
import { ApiException, CoreV1Api, KubeConfig, Observable, type V1Node } from "@kubernetes/client-node";
import type { Node } from "../../api/capi.ts";
import { secretName } from "../../api/constants.ts";
import { kubeconfigFromSecret, type KubeconfigContents } from "../certs/kubeconfig.ts";
import type { SecretStore } from "../certs/secret-store.ts";
import { SecretMissingError, statusMessageOf, WorkloadApiError, type SecretRef } from "../errors.ts";
import { reuseConnections } from "../kube/keep-alive.ts";
import { errorMessage } from "../kube/log.ts";

export const DEFAULT_WORKLOAD_TIMEOUT_MS = 10_000;

interface CachedClient {
  fingerprint: string;
  server: string;
  core: CoreV1Api;
}

export class WorkloadClients {
  private readonly cache = new Map<string, CachedClient>();
  private readonly timeoutMs: number;

  constructor(
    private readonly store: SecretStore,
    options: { timeoutMs?: number } = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_WORKLOAD_TIMEOUT_MS;
  }

  /**
   * The workload cluster's Nodes. Throws SecretMissingError / SecretGarbageError / KubeconfigRefusedError for the kubeconfig Secret,
   * WorkloadApiError when the API server does not answer in time or refuses.
   */
  async listNodes(namespace: string, cluster: string): Promise<Node[]> {
    const ref = { namespace, name: secretName.kubeconfig(cluster) };
    const client = await this.clientFor(ref);
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const list = await client.core.listNode({}, withSignal(signal));
      return list.items.map(toNode);
    } catch (error) {
      throw new WorkloadApiError(client.server, ref, describe(error, signal, this.timeoutMs), { cause: error });
    }
  }

  forget(namespace: string, cluster: string): void {
    this.cache.delete(`${namespace}/${cluster}`);
  }

  private async clientFor(ref: SecretRef): Promise<CachedClient> {
    const secret = await this.store.get(ref);
    if (!secret) {
      throw new SecretMissingError(
        ref,
        "to reach the workload cluster's API (list Nodes)",
        "Quorum writes it once Cluster.spec.controlPlaneEndpoint is set and the <cluster>-ca Secret is valid; check the " +
          "QuorumControlPlane's CertificatesAvailable condition",
      );
    }
    const key = `${ref.namespace}/${ref.name}`;
    const fingerprint = fingerprintOf(secret.metadata.resourceVersion, secret.data);
    const cached = this.cache.get(key);
    if (cached?.fingerprint === fingerprint) return cached;
    const { contents } = kubeconfigFromSecret(ref, secret);
    const config = kubeConfigOf(contents);
    // Nodes are listed on every reconcile: keep the connection instead of a TLS handshake each time.
    reuseConnections(config);
    const client = { fingerprint, server: contents.server, core: config.makeApiClient(CoreV1Api) };
    this.cache.set(key, client);
    return client;
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

function describe(error: unknown, signal: AbortSignal, timeoutMs: number): string {
  if (signal.aborted) return `did not answer within ${timeoutMs} ms`;
  if (error instanceof ApiException) {
    return `refused to list Nodes (HTTP ${error.code}: ${statusMessageOf(error.body)})`;
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
      })),
      addresses: (node.status.addresses ?? []).map((address) => ({ type: address.type, address: address.address })),
    };
  }
  return result;
}

function fingerprintOf(resourceVersion: string | undefined, data: Record<string, string> | undefined): string {
  const hash = createHash("sha256").update(resourceVersion ?? "");
  for (const key of Object.keys(data ?? {}).sort()) hash.update(`\0${key}\0${data?.[key]}`);
  return hash.digest("hex");
}
