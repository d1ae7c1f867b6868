// The `<cluster>-kubeconfig` Secret CAPI expects of a control-plane provider (data key `value`): an admin
// kubeconfig for the workload cluster's control-plane endpoint, with a client certificate signed by the
// cluster CA (O=system:masters), rotated at half its lifetime like KCP does. CAPI itself (its cluster cache)
// and users (clusterctl get kubeconfig) read it, so it must always be valid.
import { createHash, X509Certificate } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { parseAsGo, stringifyForGo } from "../go-yaml.ts";
import { secretName } from "../../api/constants.ts";
import { KubeconfigRefusedError, SecretGarbageError, type SecretRef } from "../errors.ts";
import { checkCASecret, readCASecret } from "./ca-secret.ts";
import { clusterSecret, ownedByControlPlane, type ControlPlaneOwner } from "./cluster-secrets.ts";
import { parseKubeconfig, RefusedKubeconfigFieldError, type KubeconfigContents } from "./kubeconfig-data.ts";
import { decodeCertificatePem, issueCertificate, validFor } from "./pki.ts";
import { dataText, secretBeforeCreate, type SecretObject, type SecretStore } from "./secret-store.ts";
import { errorMessage } from "../kube/log.ts";

export { parseKubeconfig, type KubeconfigContents } from "./kubeconfig-data.ts";

export const KUBECONFIG_KEY = "value";
/** KCP's default: a year, renewed when half of it is gone. */
export const KUBECONFIG_CERT_LIFETIME_MS = 365 * 24 * 60 * 60 * 1000;
export const ADMIN_COMMON_NAME = "kubernetes-admin";
export const ADMIN_GROUP = "system:masters";

/** Kubeconfig YAML with the names CAPI uses (`<cluster>-admin@<cluster>`). */
export function buildKubeconfig(contents: KubeconfigContents): string {
  const user = `${contents.cluster}-admin`;
  const context = `${user}@${contents.cluster}`;
  const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
  return stringifyForGo({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: contents.cluster,
        cluster: { server: contents.server, "certificate-authority-data": b64(contents.caPem) },
      },
    ],
    contexts: [{ name: context, context: { cluster: contents.cluster, user } }],
    "current-context": context,
    users: [
      {
        name: user,
        user: { "client-certificate-data": b64(contents.certPem), "client-key-data": b64(contents.keyPem) },
      },
    ],
    preferences: {},
  });
}

export type KubeconfigDecision = { rotate: false } | { rotate: true; reason: string };

/**
 * Whether a kubeconfig (current text, or undefined when absent) must be (re)written to point at `server`
 * with a client certificate from the CA `caPem`. Pure: the clock comes in as `now`.
 */
export function kubeconfigDecision(
  current: string | undefined,
  wanted: { server: string; caPem: string },
  now: Date,
): KubeconfigDecision {
  if (current === undefined) return { rotate: true, reason: "absent" };
  // Parsing and verifying the client certificate is most of the cost, and the answer only depends on the time
  // through its half life: keep the rest per (kubeconfig, server, CA).
  const fingerprint = createHash("sha256")
    .update(current)
    .update("\0")
    .update(wanted.server)
    .update("\0")
    .update(wanted.caPem)
    .digest("hex");
  let checked = checkedKubeconfigs.get(fingerprint);
  if (!checked) {
    checked = checkKubeconfig(current, wanted);
    if (checkedKubeconfigs.size >= CHECKED_KUBECONFIGS_MAX)
      checkedKubeconfigs.delete(checkedKubeconfigs.keys().next().value as string);
    checkedKubeconfigs.set(fingerprint, checked);
  }
  if ("rotate" in checked) return checked;
  if (now.getTime() >= checked.halfLife) {
    return {
      rotate: true,
      reason: `client certificate is past half its lifetime (expires ${new Date(checked.notAfter).toISOString()})`,
    };
  }
  return { rotate: false };
}

const checkedKubeconfigs = new Map<string, { rotate: true; reason: string } | { halfLife: number; notAfter: number }>();
const CHECKED_KUBECONFIGS_MAX = 10_000;

function checkKubeconfig(
  current: string,
  wanted: { server: string; caPem: string },
): { rotate: true; reason: string } | { halfLife: number; notAfter: number } {
  let contents: KubeconfigContents;
  try {
    contents = parseKubeconfig(current);
  } catch (error) {
    return { rotate: true, reason: `unreadable: ${errorMessage(error)}` };
  }
  // An owned Secret holds exactly what Quorum writes: anything added (an exec stanza in another user, a second
  // context) is rewritten, so the Secret never carries what someone else slipped in. Compared as client-go reads it:
  // a Cluster named `yes` written plain (as before YAML 1.1 quoting) is a boolean there, and rewritten.
  if (!isDeepStrictEqual(parseAsGo(current), parseAsGo(buildKubeconfig(contents))))
    return { rotate: true, reason: "it holds fields Quorum does not write, or values client-go reads as another type" };
  if (contents.server !== wanted.server)
    return { rotate: true, reason: `server ${contents.server} is not the control-plane endpoint ${wanted.server}` };
  if (normalizePem(contents.caPem) !== normalizePem(wanted.caPem))
    return { rotate: true, reason: "its CA is not the cluster CA" };
  let client: X509Certificate;
  let ca: X509Certificate;
  try {
    client = new X509Certificate(decodeCertificatePem(contents.certPem).toString("pem"));
    ca = new X509Certificate(decodeCertificatePem(wanted.caPem).toString("pem"));
  } catch (error) {
    return { rotate: true, reason: `client certificate unreadable: ${errorMessage(error)}` };
  }
  if (!client.checkIssued(ca) || !client.verify(ca.publicKey))
    return { rotate: true, reason: "client certificate is not signed by the cluster CA" };
  const notBefore = new Date(client.validFrom).getTime();
  const notAfter = new Date(client.validTo).getTime();
  return { halfLife: notBefore + (notAfter - notBefore) / 2, notAfter };
}

export interface EnsureKubeconfigOptions {
  cluster: string;
  owner: ControlPlaneOwner;
  /** Cluster.spec.controlPlaneEndpoint. */
  endpoint: { host: string; port: number };
  now: Date;
  /** Client certificate lifetime; defaults to a year (capped by the CA's own expiry). */
  lifetimeMs?: number;
}

export type EnsureKubeconfigResult =
  | { action: "created" | "rotated"; reason: string }
  | { action: "unchanged" }
  /** The Secret exists but no QuorumControlPlane owns it: someone else manages it. */
  | { action: "not-owned" };

/**
 * Creates or rotates `<cluster>-kubeconfig`. Throws the typed errors of readCASecret when `<cluster>-ca`
 * is missing or unusable. A Secret not owned by a QuorumControlPlane is left alone (user-managed, as KCP does).
 */
export async function ensureKubeconfig(
  store: SecretStore,
  options: EnsureKubeconfigOptions,
): Promise<EnsureKubeconfigResult> {
  const { cluster, owner, now } = options;
  const namespace = owner.namespace;
  const caRef = { namespace, name: secretName.ca(cluster) };
  const purpose = "to sign the client certificate of the cluster's kubeconfig";
  const caSecret = await store.get(caRef);
  // Checked on every pass; loaded to sign (parsed certificate and key) only when the kubeconfig is rotated.
  const checked = await checkCASecret(caRef, caSecret, now, purpose);
  const server = serverURL(options.endpoint);
  const ref = { namespace, name: secretName.kubeconfig(cluster) };
  // A new cluster's kubeconfig is created on the cache's "absent": a lagging cache meets AlreadyExists below.
  const existing = await secretBeforeCreate(store, ref);
  if (existing && !ownedByControlPlane(existing)) return { action: "not-owned" };
  const decision = kubeconfigDecision(
    existing && dataText(existing, KUBECONFIG_KEY),
    { server, caPem: checked.certPem },
    now,
  );
  if (!decision.rotate) return { action: "unchanged" };
  const ca = await readCASecret(caRef, caSecret, now, purpose);

  const lifetimeMs = Math.min(options.lifetimeMs ?? KUBECONFIG_CERT_LIFETIME_MS, ca.notAfter.getTime() - now.getTime());
  const client = await issueCertificate(ca, {
    commonName: ADMIN_COMMON_NAME,
    organization: ADMIN_GROUP,
    usages: "client",
    validity: validFor(lifetimeMs, now),
  });
  const value = buildKubeconfig({ cluster, server, caPem: ca.certPem, certPem: client.certPem, keyPem: client.keyPem });
  const desired = clusterSecret(cluster, ref.name, owner, { [KUBECONFIG_KEY]: value });
  if (!existing) {
    const outcome = await store.create(desired);
    // Someone else created it between our read and create: the next reconcile looks at theirs.
    return outcome === "created" ? { action: "created", reason: decision.reason } : { action: "unchanged" };
  }
  await store.replace({
    ...existing,
    metadata: {
      ...existing.metadata,
      labels: { ...existing.metadata.labels, ...desired.metadata.labels },
    },
    type: existing.type ?? desired.type,
    data: { ...existing.data, ...desired.data },
  });
  return { action: "rotated", reason: decision.reason };
}

/** Reads the kubeconfig of a Secret, or a SecretGarbageError naming it. */
export function kubeconfigFromSecret(
  ref: SecretRef,
  secret: SecretObject,
): { text: string; contents: KubeconfigContents } {
  const text = dataText(secret, KUBECONFIG_KEY);
  const fix = `delete the Secret to let Quorum regenerate it, or put a kubeconfig for the cluster in data key "${KUBECONFIG_KEY}"`;
  if (text === undefined) throw new SecretGarbageError(ref, KUBECONFIG_KEY, "is missing or empty", fix);
  try {
    return { text, contents: parseKubeconfig(text) };
  } catch (error) {
    if (error instanceof RefusedKubeconfigFieldError)
      throw new KubeconfigRefusedError(ref, KUBECONFIG_KEY, error.field, error.why, { cause: error });
    throw new SecretGarbageError(ref, KUBECONFIG_KEY, errorMessage(error), fix, { cause: error });
  }
}

export function serverURL(endpoint: { host: string; port: number }): string {
  const host = endpoint.host.includes(":") && !endpoint.host.startsWith("[") ? `[${endpoint.host}]` : endpoint.host;
  return `https://${host}:${endpoint.port}`;
}

function normalizePem(pem: string): string {
  return pem.replace(/\r/g, "").trim();
}
