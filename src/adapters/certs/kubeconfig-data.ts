// A workload kubeconfig read as data, never as code. client-node's KubeConfig.loadFromString honours users[].exec
// (spawns a command), auth-provider cmd-path (runs a shell command), file references (reads any file of the
// controller's filesystem), proxy-url and insecure-skip-tls-verify. Whoever can write a `<cluster>-kubeconfig` Secret
// (a tenant with Secret write access in one namespace) would run code in a pod that can read every Secret of the
// management cluster. So Quorum takes only the current context's server, CA data and client certificate/key or token,
// refuses every field that would run, read or weaken anything, and builds the client from those values alone.
import { parse } from "yaml";
import { errorMessage } from "../kube/log.ts";

export interface KubeconfigContents {
  /** The name of the current context's cluster entry. */
  cluster: string;
  server: string;
  /** PEM, empty when the kubeconfig has no certificate-authority-data (the system trust store is used then). */
  caPem: string;
  /** PEM, empty when the user authenticates with a token. */
  certPem: string;
  keyPem: string;
  /** Bearer token, when the user has one instead of a client certificate. */
  token?: string;
}

/** A field Quorum refuses to honour; `field` is its path, e.g. `users[0] "c-admin".user.exec`. */
export class RefusedKubeconfigFieldError extends Error {
  constructor(
    readonly field: string,
    readonly why: string,
  ) {
    super(`field ${field} is refused: ${why}`);
    this.name = "RefusedKubeconfigFieldError";
  }
}

const RUNS_CODE = "Quorum never runs a command named by a workload kubeconfig";
const READS_FILES =
  "Quorum never reads a file named by a workload kubeconfig; put the PEM, base64-encoded, in the matching *-data field";

/** Fields of clusters[].cluster that are refused when present (insecure-skip-tls-verify only when not false). */
const REFUSED_CLUSTER_FIELDS: Record<string, string> = {
  "insecure-skip-tls-verify":
    "Quorum always verifies the workload API server's certificate; set certificate-authority-data to its CA",
  "proxy-url": "Quorum connects to the workload API server directly, never through a proxy named by the Secret",
  "certificate-authority": READS_FILES,
};

const REFUSED_USER_FIELDS: Record<string, string> = {
  exec: RUNS_CODE,
  "auth-provider": `${RUNS_CODE} (auth-provider cmd-path) or uses a cloud login plugin`,
  tokenFile: READS_FILES,
  "client-certificate": READS_FILES,
  "client-key": READS_FILES,
};

interface NamedEntry {
  name?: unknown;
  [key: string]: unknown;
}

/**
 * The current context's server, CA and client credentials. Throws RefusedKubeconfigFieldError for a field that would
 * run a command, read a file, use a proxy or skip TLS verification, and a plain Error saying what is wrong otherwise.
 */
export function parseKubeconfig(text: string): KubeconfigContents {
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new Error(`is not YAML (${errorMessage(error)})`, { cause: error });
  }
  if (!isMapping(document)) throw new Error("is not a kubeconfig (no YAML mapping)");
  const contextName = document["current-context"];
  const contextEntry = find(document.contexts, contextName);
  const context = contextEntry && isMapping(contextEntry.entry.context) ? contextEntry.entry.context : undefined;
  if (!context) throw new Error(`has no context named by current-context ${JSON.stringify(contextName ?? null)}`);

  const clusterEntry = find(document.clusters, context.cluster);
  const cluster = clusterEntry && isMapping(clusterEntry.entry.cluster) ? clusterEntry.entry.cluster : undefined;
  if (!clusterEntry || !cluster)
    throw new Error(
      `has no cluster ${JSON.stringify(context.cluster ?? null)} named by context ${JSON.stringify(contextName)}`,
    );
  const clusterPath = `clusters[${clusterEntry.index}] ${JSON.stringify(context.cluster)}.cluster`;
  for (const [field, why] of Object.entries(REFUSED_CLUSTER_FIELDS)) {
    const value = cluster[field];
    if (value === undefined || value === null || (field === "insecure-skip-tls-verify" && value === false)) continue;
    throw new RefusedKubeconfigFieldError(`${clusterPath}.${field}`, why);
  }
  const server = stringField(cluster, "server", clusterPath);
  if (!server) throw new Error(`has no server in ${clusterPath}`);
  if (!/^https:\/\//i.test(server)) {
    throw new RefusedKubeconfigFieldError(
      `${clusterPath}.server`,
      `${JSON.stringify(server)} is not an https:// URL; Quorum sends credentials only over TLS`,
    );
  }

  const userEntry = find(document.users, context.user);
  const user = userEntry && isMapping(userEntry.entry.user) ? userEntry.entry.user : undefined;
  if (!userEntry || !user)
    throw new Error(
      `has no user ${JSON.stringify(context.user ?? null)} named by context ${JSON.stringify(contextName)}`,
    );
  const userPath = `users[${userEntry.index}] ${JSON.stringify(context.user)}.user`;
  for (const [field, why] of Object.entries(REFUSED_USER_FIELDS)) {
    if (user[field] !== undefined && user[field] !== null)
      throw new RefusedKubeconfigFieldError(`${userPath}.${field}`, why);
  }
  const certPem = base64Field(user, "client-certificate-data", userPath);
  const keyPem = base64Field(user, "client-key-data", userPath);
  const token = stringField(user, "token", userPath);
  if ((certPem === "") !== (keyPem === ""))
    throw new Error(`${userPath} has only one of client-certificate-data and client-key-data`);
  if (certPem === "" && !token)
    throw new Error(`${userPath} has no credentials (client-certificate-data and client-key-data, or token)`);
  return {
    cluster: String(context.cluster),
    server,
    caPem: base64Field(cluster, "certificate-authority-data", clusterPath),
    certPem,
    keyPem,
    ...(token ? { token } : {}),
  };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function find(list: unknown, name: unknown): { index: number; entry: NamedEntry } | undefined {
  if (!Array.isArray(list) || typeof name !== "string") return undefined;
  const index = list.findIndex((entry) => isMapping(entry) && entry.name === name);
  return index < 0 ? undefined : { index, entry: list[index] as NamedEntry };
}

function stringField(object: Record<string, unknown>, field: string, path: string): string {
  const value = object[field];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw new Error(`${path}.${field} is not a string`);
  return value;
}

function base64Field(object: Record<string, unknown>, field: string, path: string): string {
  const value = stringField(object, field, path).replace(/\s+/g, "");
  if (value === "") return "";
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) throw new Error(`${path}.${field} is not base64`);
  return Buffer.from(value, "base64").toString("utf8");
}
