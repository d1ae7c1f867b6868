// The kubelet's API credentials, as the real kubelet gets them (k8s.io/kubernetes pkg/kubelet/certificate/bootstrap
// and client-go util/certificate):
// - kubeadm init writes kubelet.conf with the node's client certificate embedded. The kubelet copies that pair into
//   its cert dir as kubelet-client-current.pem (the certificate manager stores its "bootstrap" certificate), which is
//   what kubeadm init's kubelet-finalize phase looks for before it rewrites kubelet.conf to reference that file.
// - kubeadm join writes only bootstrap-kubelet.conf (a bootstrap token, the local API endpoint). The kubelet writes a
//   kubelet.conf that references <cert-dir>/kubelet-client-current.pem, creates a CertificateSigningRequest with the
//   token, waits for kube-controller-manager to approve and sign it, and stores cert + key in that file; kubeadm's
//   kubelet-wait-bootstrap phase waits until kubelet.conf loads with its files.
import "reflect-metadata"; // @peculiar/x509 uses tsyringe, which needs the Reflect metadata polyfill first
import * as x509 from "@peculiar/x509";
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, webcrypto } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { kubeRequest, statusMessage } from "../../../test/env/kube.ts";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

/** The file names of the kubelet's client certificate store (client-go util/certificate fileStore, "kubelet-client"). */
export const CURRENT_PAIR = "kubelet-client-current.pem";
const TMP_KEY = "kubelet-client.key.tmp";
export const KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";

/** A kubeconfig that loads and whose client certificate (if any) is readable and unexpired, or why not. */
export function loadValidKubeconfig(path: string): { kubeConfig: KubeConfig } | { problem: string } {
  if (!existsSync(path)) return { problem: `${path} does not exist` };
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromFile(path);
  } catch (error) {
    return { problem: `${path} does not load: ${(error as Error).message}` };
  }
  const user = kubeConfig.getCurrentUser();
  if (!kubeConfig.getCurrentCluster() || !user) return { problem: `${path} has no current cluster or user` };
  if (user.token) return { kubeConfig };
  try {
    const certPem = user.certFile ? readFileSync(user.certFile, "utf8") : decode(user.certData);
    const keyPem = user.keyFile ? readFileSync(user.keyFile, "utf8") : decode(user.keyData);
    if (!certPem || !keyPem) return { problem: `${path}: its user has neither a token nor a client certificate` };
    const certificate = new x509.X509Certificate(firstCertificate(certPem));
    createPrivateKey(keyPem);
    if (certificate.notAfter.getTime() < Date.now()) {
      return { problem: `${path}: the client certificate expired at ${certificate.notAfter.toISOString()}` };
    }
  } catch (error) {
    return { problem: `${path}: the client certificate does not load: ${(error as Error).message}` };
  }
  return { kubeConfig };
}

/** The embedded client certificate and key of a kubeconfig's current user (kubeadm init's kubelet.conf), if any. */
export function embeddedClientPair(kubeConfig: KubeConfig): { certPem: string; keyPem: string } | undefined {
  const user = kubeConfig.getCurrentUser();
  if (!user?.certData || !user.keyData) return undefined;
  return { certPem: decode(user.certData)!, keyPem: decode(user.keyData)! };
}

/** The current pair of the cert dir, if it is there and unexpired. */
export function currentPairIsValid(certDir: string): boolean {
  const path = join(certDir, CURRENT_PAIR);
  if (!existsSync(path)) return false;
  try {
    const text = readFileSync(path, "utf8");
    createPrivateKey(text);
    return new x509.X509Certificate(firstCertificate(text)).notAfter.getTime() > Date.now();
  } catch {
    return false;
  }
}

/**
 * Stores a client certificate and key as the kubelet's certificate store does: `kubelet-client-<timestamp>.pem`
 * (certificate PEM, then key PEM, mode 0600) and `kubelet-client-current.pem` a symlink to it, swapped atomically so
 * a reader never sees a missing file. Returns the current pair's path.
 */
export function storeClientPair(certDir: string, certPem: string, keyPem: string, now = new Date()): string {
  mkdirSync(certDir, { recursive: true, mode: 0o755 });
  const stamp = now.toISOString().slice(0, 19).replace(/[T:]/g, "-");
  const pairPath = join(certDir, `kubelet-client-${stamp}.pem`);
  writeFileSync(pairPath, `${certPem.trim()}\n${keyPem.trim()}\n`, { mode: 0o600 });
  const current = join(certDir, CURRENT_PAIR);
  const link = `${current}.tmp-${process.pid}`;
  rmSync(link, { force: true });
  symlinkSync(pairPath, link);
  renameSync(link, current);
  return current;
}

/**
 * The kubeconfig the kubelet writes after bootstrapping (bootstrap.go writeKubeconfigFromBootstrapping): the
 * bootstrap kubeconfig's server and CA, and the current pair file as both client certificate and key.
 */
export function kubeconfigFromBootstrap(bootstrap: KubeConfig, pemPath: string): string {
  const cluster = bootstrap.getCurrentCluster()!;
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "default-cluster",
        cluster: {
          server: cluster.server,
          ...(cluster.caFile
            ? { "certificate-authority": cluster.caFile }
            : cluster.caData
              ? { "certificate-authority-data": cluster.caData }
              : {}),
          ...(cluster.skipTLSVerify ? { "insecure-skip-tls-verify": true } : {}),
        },
      },
    ],
    users: [{ name: "default-auth", user: { "client-certificate": pemPath, "client-key": pemPath } }],
    contexts: [
      { name: "default-context", context: { cluster: "default-cluster", user: "default-auth", namespace: "default" } },
    ],
    "current-context": "default-context",
  });
}

/** Writes a file atomically (temp file + rename): kubeadm polls kubelet.conf and must never read half of it. */
export function writeFileAtomically(path: string, contents: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, contents, { mode });
  renameSync(temp, path);
}

/** The private key for the next CSR: the one a failed attempt left in the cert dir, or a new P-256 key (SEC1 PEM). */
export function loadOrGenerateKey(certDir: string): string {
  const path = join(certDir, TMP_KEY);
  if (existsSync(path)) {
    const pem = readFileSync(path, "utf8");
    try {
      createPrivateKey(pem);
      return pem;
    } catch {
      // Unreadable: generate a new one below, as keyutil.LoadOrGenerateKeyFile would fail and the kubelet retry.
    }
  }
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const pem = privateKey.export({ format: "pem", type: "sec1" }) as string;
  mkdirSync(certDir, { recursive: true });
  writeFileAtomically(path, pem);
  return pem;
}

export function forgetTemporaryKey(certDir: string): void {
  rmSync(join(certDir, TMP_KEY), { force: true });
}

/** The usages the kubelet asks for with an ECDSA key (RSA keys add "key encipherment"). */
export const NODE_CLIENT_USAGES = ["digital signature", "client auth"];

/**
 * The CSR's name, as the kubelet derives it (bootstrap.go digestedName): `node-csr-` + base64url(sha512/256 over the
 * base64url-encoded public key, CN, each O and each usage, each followed by "|"). Deterministic, so a kubelet that
 * restarts mid-bootstrap finds its own CSR again instead of creating another one.
 */
export function csrName(keyPem: string, nodeName: string): string {
  const publicKeyDer = createPublicKey(keyPem).export({ format: "der", type: "spki" });
  const hash = createHash("sha512-256");
  const write = (data: Buffer) => hash.update(data.toString("base64url")).update("|");
  write(publicKeyDer);
  write(Buffer.from(`system:node:${nodeName}`));
  write(Buffer.from("system:nodes"));
  for (const usage of NODE_CLIENT_USAGES) write(Buffer.from(usage));
  return `node-csr-${hash.digest().toString("base64url")}`;
}

/** A PKCS#10 request for `CN=system:node:<node>, O=system:nodes`, signed with the key (PEM). */
export async function nodeCertificateRequest(keyPem: string, nodeName: string): Promise<string> {
  const algorithm = { name: "ECDSA", namedCurve: "P-256" };
  const privateDer = createPrivateKey(keyPem).export({ format: "der", type: "pkcs8" });
  const publicDer = createPublicKey(keyPem).export({ format: "der", type: "spki" });
  const keys = {
    privateKey: await webcrypto.subtle.importKey("pkcs8", privateDer, algorithm, true, ["sign"]),
    publicKey: await webcrypto.subtle.importKey("spki", publicDer, algorithm, true, ["verify"]),
  } as CryptoKeyPair;
  const request = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [{ O: ["system:nodes"] }, { CN: [`system:node:${nodeName}`] }],
    keys,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
  });
  return request.toString("pem");
}

interface CertificateSigningRequest {
  metadata: { name: string; uid: string };
  spec: { request: string; signerName: string; usages: string[] };
  status?: { certificate?: string; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

export interface RequestCertificateOptions {
  /** Credentials the CSR is created with: the bootstrap token, or the node's current certificate (rotation). */
  client: KubeConfig;
  nodeName: string;
  keyPem: string;
  log: (line: string) => void;
  /** Stop waiting (default: never). */
  signal?: AbortSignal;
  pollMs?: number;
  /** What the certificate is for, in log lines (default "TLS bootstrap"). */
  purpose?: string;
}

/**
 * Creates the node's CSR (or finds the one an earlier attempt created: same name) and waits until it carries a
 * certificate. Retries while the API server does not answer — on a joining control-plane node it is the local one,
 * which needs its local etcd member, which kubeadm's etcd-join phase adds after writing the bootstrap kubeconfig.
 * Throws when the CSR is denied or failed: the kubelet then starts over with a new attempt.
 */
export async function requestNodeCertificate(options: RequestCertificateOptions): Promise<string> {
  const { client, nodeName, keyPem, pollMs = 1_000 } = options;
  const log = (line: string) => options.log(`${options.purpose ?? "TLS bootstrap"}: ${line}`);
  const name = csrName(keyPem, nodeName);
  const body = {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name },
    spec: {
      request: Buffer.from(await nodeCertificateRequest(keyPem, nodeName)).toString("base64"),
      signerName: KUBELET_SIGNER,
      usages: NODE_CLIENT_USAGES,
    },
  };
  const path = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
  let created = false;
  let lastProblem = "";
  const note = (problem: string) => {
    if (problem !== lastProblem) log(`CSR ${name}: ${problem}; retrying`);
    lastProblem = problem;
  };
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      if (!created) {
        const response = await kubeRequest(client, path, { method: "POST", body, timeoutMs: 10_000 });
        if (response.status === 201 || response.status === 409) {
          created = true;
          log(`CSR ${name} ${response.status === 201 ? "created" : "exists already"} for system:node:${nodeName}`);
        } else {
          note(`create answered HTTP ${response.status}: ${statusMessage(response)}`);
        }
      }
      if (created) {
        const response = await kubeRequest<CertificateSigningRequest>(client, `${path}/${name}`, { timeoutMs: 10_000 });
        if (response.status === 200) {
          const csr = response.body;
          const refused = csr.status?.conditions?.find(
            (c) => ["Denied", "Failed"].includes(c.type) && c.status === "True",
          );
          if (refused) {
            throw new Error(
              `CSR ${name} was ${refused.type.toLowerCase()} (${refused.reason ?? ""}: ${refused.message ?? ""}): ` +
                `check kube-controller-manager's csrapproving/csrsigning controllers and kubeadm's bootstrap RBAC`,
            );
          }
          if (csr.status?.certificate) {
            log(`CSR ${name} approved and signed`);
            return Buffer.from(csr.status.certificate, "base64").toString("utf8");
          }
          note("waiting for approval and signing");
        } else {
          note(`get answered HTTP ${response.status}: ${statusMessage(response)}`);
        }
      }
    } catch (error) {
      if ((error as Error).message.startsWith(`CSR ${name} was`)) throw error;
      note(`API server not answering (${(error as Error).message})`);
    }
    await sleep(pollMs, undefined, { signal: options.signal });
  }
}

function decode(data: string | undefined): string | undefined {
  return data === undefined ? undefined : Buffer.from(data, "base64").toString("utf8");
}

function firstCertificate(pem: string): string {
  const block = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pem);
  if (!block) throw new Error("no PEM certificate found");
  return block[0];
}
