// The CA Secrets the CAPI contract expects a control-plane provider to provide for its cluster:
// `<cluster>-ca` (cluster CA), `<cluster>-etcd` (etcd CA), `<cluster>-proxy` (front-proxy CA) and
// `<cluster>-sa` (service-account signing key pair), in the layout CAPI and kubeadm's bootstrap provider read.
// They are created only for a new cluster, only when absent, and never touched afterwards: users bring their own
// CAs, and replacing a CA under a running cluster would lock every component out of it. A Secret missing on a
// running cluster (deleted by someone) is an error asking for a restore, never a new CA.
import { generateKeyPair } from "node:crypto";
import { promisify } from "node:util";
import { API_VERSION, CLUSTER_SECRET_TYPE, KIND, LABEL_CLUSTER_NAME, secretName } from "../../api/constants.ts";
import type { Cluster } from "../../api/capi.ts";
import type { OwnerReference, QuorumControlPlane } from "../../api/types.ts";
import { RunningClusterSecretMissingError } from "../errors.ts";
import { createCA, validFor, type CertificateAuthority } from "./pki.ts";
import { ecdsaCurve, rsaBits, type KeyAlgorithm } from "./key-algorithm.ts";
import {
  encodeData,
  secretMetadata,
  secretMetadataBeforeCreate,
  type SecretObject,
  type SecretStore,
} from "./secret-store.ts";
import { rememberCreatedCA, TLS_CRT, TLS_KEY } from "./ca-secret.ts";

const generateAsymmetricKeyPair = promisify(generateKeyPair);

export type ClusterCertificatePurpose = "ca" | "etcd" | "proxy" | "sa";
export const CLUSTER_CERTIFICATE_PURPOSES: readonly ClusterCertificatePurpose[] = ["ca", "etcd", "proxy", "sa"];
/** The CAs Quorum itself signs with: the cluster CA (kubeconfig, workload API client) and etcd's (etcd client). */
const SIGNING_PURPOSES: readonly ClusterCertificatePurpose[] = ["ca", "etcd"];

// Same subjects as kubeadm, so tools that inspect a cluster's PKI find what they expect.
const CA_COMMON_NAME: Record<Exclude<ClusterCertificatePurpose, "sa">, string> = {
  ca: "kubernetes",
  etcd: "etcd-ca",
  proxy: "front-proxy-ca",
};

/** CAPI and kubeadm give CAs ten years. */
export const CA_LIFETIME_MS = 10 * 365 * 24 * 60 * 60 * 1000;

/** The QuorumControlPlane that owns the Secrets it creates (garbage-collected with it). */
export interface ControlPlaneOwner {
  namespace: string;
  name: string;
  uid: string;
}

export function ownerReference(owner: ControlPlaneOwner): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Whether a QuorumControlPlane (any) is the controller owner of `secret`: only then may Quorum rewrite it. */
export function ownedByControlPlane(secret: SecretObject, owner?: ControlPlaneOwner): boolean {
  return (secret.metadata.ownerReferences ?? []).some(
    (reference) =>
      reference.kind === KIND &&
      reference.apiVersion.startsWith(`${API_VERSION.split("/")[0]}/`) &&
      (owner === undefined || reference.uid === owner.uid),
  );
}

/** A CAPI cluster Secret: type cluster.x-k8s.io/secret, the cluster-name label, owned by the control plane. */
export function clusterSecret(
  cluster: string,
  name: string,
  owner: ControlPlaneOwner,
  data: Record<string, string>,
): SecretObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      namespace: owner.namespace,
      labels: { [LABEL_CLUSTER_NAME]: cluster },
      ownerReferences: [ownerReference(owner)],
    },
    type: CLUSTER_SECRET_TYPE,
    data: encodeData(data),
  };
}

/**
 * Fresh key material for one purpose: a CA pair, or the service-account key pair, of the key type `algorithm` names
 * (kubeadm's encryptionAlgorithm); unset, ECDSA P-256 CAs and an RSA-2048 service-account key.
 */
export async function generateSecretData(
  purpose: ClusterCertificatePurpose,
  now: Date,
  algorithm?: KeyAlgorithm,
): Promise<Record<string, string>> {
  return (await generateSecretMaterial(purpose, now, algorithm)).data;
}

/** generateSecretData, with the CA it made (none for "sa"). */
async function generateSecretMaterial(
  purpose: ClusterCertificatePurpose,
  now: Date,
  algorithm: KeyAlgorithm | undefined,
): Promise<{ data: Record<string, string>; ca?: CertificateAuthority }> {
  if (purpose === "sa") {
    // kube-apiserver/kube-controller-manager read tls.key as the signing key and tls.crt as the public key
    // (CAPI's layout). RSA-2048 by default, because that is what kubeadm and CAPI generate and every verifier accepts;
    // ECDSA ("EC PRIVATE KEY", as CAPI writes it) when asked, which costs a hundredth of the CPU.
    // Asynchronous: a 2048-bit RSA key takes tens of ms of CPU, on libuv's thread pool rather than the event
    // loop, so creating many clusters at once does not stall every other reconcile and the watches.
    const curve = algorithm ? ecdsaCurve(algorithm) : undefined;
    const { publicKey, privateKey } = curve
      ? await generateAsymmetricKeyPair("ec", {
          namedCurve: curve,
          publicKeyEncoding: { type: "spki", format: "pem" },
          privateKeyEncoding: { type: "sec1", format: "pem" },
        })
      : await generateAsymmetricKeyPair("rsa", {
          modulusLength: (algorithm && rsaBits(algorithm)) ?? 2048,
          publicKeyEncoding: { type: "spki", format: "pem" },
          privateKeyEncoding: { type: "pkcs1", format: "pem" },
        });
    return { data: { [TLS_CRT]: publicKey, [TLS_KEY]: privateKey } };
  }
  const ca = await createCA(CA_COMMON_NAME[purpose], validFor(CA_LIFETIME_MS, now), algorithm);
  return { data: { [TLS_CRT]: ca.certPem, [TLS_KEY]: ca.keyPem }, ca };
}

export interface EnsureCertificatesResult {
  created: string[];
  /** Already present (user-provided or created earlier): left byte-for-byte as they were. */
  existing: string[];
}

/**
 * Why the cluster's control plane counts as running, so that its certificate Secrets are in use, or undefined
 * for a new cluster. Read from the objects alone (no Machine list): the Cluster's or our own initialised flag,
 * or a status that already counts Machines or etcd members. Quorum creates the CAs before its first Machine, so
 * a cluster with none of these has no Machine that could hold a certificate from them.
 */
export function runningControlPlaneEvidence(controlPlane: QuorumControlPlane, cluster: Cluster): string | undefined {
  const clusterKey = `Cluster ${cluster.metadata.namespace ?? controlPlane.metadata.namespace}/${cluster.metadata.name}`;
  const controlPlaneKey = `QuorumControlPlane ${controlPlane.metadata.namespace}/${controlPlane.metadata.name}`;
  const clusterInitialized =
    cluster.status?.initialization?.controlPlaneInitialized === true ||
    (cluster.status?.conditions ?? []).some(
      (condition) => condition.type === "ControlPlaneInitialized" && condition.status === "True",
    );
  if (clusterInitialized) return `${clusterKey} reports its control plane initialized`;
  const status = controlPlane.status;
  if (status?.initialization?.controlPlaneInitialized === true || status?.initialized === true)
    return `${controlPlaneKey} reports it initialized`;
  const machines = status?.replicas ?? 0;
  if (machines > 0) return `${controlPlaneKey} counts ${machines} Machine${machines === 1 ? "" : "s"}`;
  const members = status?.etcd?.members?.length ?? 0;
  if (members > 0) return `${controlPlaneKey} lists ${members} etcd member${members === 1 ? "" : "s"}`;
  return undefined;
}

/**
 * Creates each of `<cluster>-ca`, `-etcd`, `-proxy`, `-sa` that does not exist yet, if the cluster is new. With
 * `runningEvidence` (from runningControlPlaneEvidence) nothing is created: a missing Secret is a
 * RunningClusterSecretMissingError naming every missing one. A Secret that exists is not read, validated or
 * changed here (the adapters that use a CA validate it when they need it); one created concurrently by someone
 * else (AlreadyExists) counts as existing. For a new cluster a cached store's "absent" is taken as is (no GET per
 * Secret, four per new cluster): if the cache lags or cannot see the Secret (a user's CA without the cluster-name
 * label), the create says AlreadyExists and the Secret counts as existing, at the cost of the key just generated.
 * On a running cluster, where "absent" is an error, every absence is confirmed with the API server.
 */
export async function ensureClusterCertificates(
  store: SecretStore,
  cluster: string,
  owner: ControlPlaneOwner,
  now: Date,
  runningEvidence?: string,
  /** The key type to generate with, read only when a Secret is missing (the bootstrap template's encryptionAlgorithm). */
  keyAlgorithm?: () => Promise<KeyAlgorithm | undefined>,
): Promise<EnsureCertificatesResult> {
  const result: EnsureCertificatesResult = { created: [], existing: [] };
  const missing: ClusterCertificatePurpose[] = [];
  const lookUp = runningEvidence === undefined ? secretMetadataBeforeCreate : secretMetadata;
  for (const purpose of CLUSTER_CERTIFICATE_PURPOSES) {
    const name = secretName[purpose](cluster);
    if (await lookUp(store, { namespace: owner.namespace, name })) result.existing.push(name);
    else missing.push(purpose);
  }
  if (missing.length > 0 && runningEvidence !== undefined) {
    const refs = missing.map((purpose) => ({ namespace: owner.namespace, name: secretName[purpose](cluster) }));
    throw new RunningClusterSecretMissingError(refs, runningEvidence);
  }
  const algorithm = missing.length > 0 ? await keyAlgorithm?.() : undefined;
  for (const purpose of missing) {
    const name = secretName[purpose](cluster);
    const material = await generateSecretMaterial(purpose, now, algorithm);
    const secret = clusterSecret(cluster, name, owner, material.data);
    const outcome = await store.create(secret);
    (outcome === "created" ? result.created : result.existing).push(name);
    // The CAs Quorum signs with are read (and would be parsed back) as soon as they exist.
    if (outcome === "created" && material.ca && SIGNING_PURPOSES.includes(purpose))
      rememberCreatedCA(secret, material.ca);
  }
  return result;
}
