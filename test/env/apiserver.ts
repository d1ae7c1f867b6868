// A real kube-apiserver (built by `make deps` from the k8s.io/kubernetes module) on 127.0.0.1 and a free port,
// backed by its own single-member etcd, with client-certificate admin auth, RBAC and service-account keys.
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import {
  createCA,
  issueCertificate,
  oneDay,
  validFor,
  type CertificateAuthority,
} from "../../src/adapters/certs/pki.ts";
import { startEtcdCluster, type EtcdCluster } from "./etcd.ts";
import { freePort, httpGet, retryOnPortConflict } from "./net.ts";
import { makeTempDir, removeTempDir, startProcess, waitUntilReady, type ManagedProcess } from "./processes.ts";
import { builtBinary } from "./tools.ts";

export interface ApiServerOptions {
  /** Readiness timeout (default 120 s: the test machine is shared and the first start compiles OpenAPI). */
  readyTimeoutMs?: number;
  /** Extra kube-apiserver flags, e.g. ["--feature-gates=..."]. */
  extraArgs?: string[];
  /**
   * The CA that signs the serving certificate and every client certificate accepted (default: a new one). A workload
   * cluster's API server gets its `<cluster>-ca`, so the kubeconfig Secret of that cluster works against it.
   */
  ca?: CertificateAuthority;
}

export interface ApiServer {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** Admin (system:masters) client configuration for @kubernetes/client-node. */
  readonly kubeConfig: KubeConfig;
  /** The same credentials as a kubeconfig file, for kubectl and for the CAPI manager. */
  readonly kubeconfigPath: string;
  /** Signs the serving certificate and every client certificate the apiserver accepts. */
  readonly ca: CertificateAuthority;
  readonly process: ManagedProcess;
  readonly etcd: EtcdCluster;
  /** A kubeconfig (object and file) for another user, e.g. to check RBAC denies it something. */
  userKubeConfig(user: string, groups?: string[]): Promise<{ kubeConfig: KubeConfig; kubeconfigPath: string }>;
  /** Stops kube-apiserver and its etcd and removes their files. Idempotent. */
  stop(): Promise<void>;
}

export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  return retryOnPortConflict(() => startApiServerOnce(options));
}

async function startApiServerOnce(options: ApiServerOptions): Promise<ApiServer> {
  const binary = builtBinary("kube-apiserver");
  const dir = makeTempDir("kube-apiserver");
  let etcd: EtcdCluster | undefined;
  let proc: ManagedProcess | undefined;
  const stop = async () => {
    await proc?.stop(15_000);
    await etcd?.stop();
    removeTempDir(dir);
  };
  try {
    etcd = await startEtcdCluster({ members: 1, tls: false, namePrefix: "apiserver-etcd" });
    const host = "127.0.0.1";
    const port = await freePort(host);
    const url = `https://${host}:${port}`;

    const ca = options.ca ?? (await createCA("quorum-test-kube-ca", validFor(7 * oneDay)));
    const serving = await issueCertificate(ca, {
      commonName: "kube-apiserver",
      dnsNames: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
      ipAddresses: [host, "10.0.0.1"],
      usages: "server",
      validity: validFor(oneDay),
    });
    const serviceAccountKeys = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const file = (name: string, contents: string) => {
      const path = join(dir, name);
      writeFileSync(path, contents, { mode: 0o600 });
      return path;
    };
    const caFile = file("ca.crt", ca.certPem);
    const serviceAccountKeyFile = file(
      "sa.key",
      serviceAccountKeys.privateKey.export({ format: "pem", type: "pkcs8" }) as string,
    );
    const serviceAccountPublicKeyFile = file(
      "sa.pub",
      serviceAccountKeys.publicKey.export({ format: "pem", type: "spki" }) as string,
    );

    const args = [
      `--etcd-servers=${etcd.endpoints().join(",")}`,
      `--bind-address=${host}`,
      `--advertise-address=${host}`,
      // The endpoint reconciler refuses a loopback advertise address; nothing here needs the kubernetes Service.
      "--endpoint-reconciler-type=none",
      `--secure-port=${port}`,
      `--cert-dir=${join(dir, "certs")}`,
      `--tls-cert-file=${file("serving.crt", serving.certPem)}`,
      `--tls-private-key-file=${file("serving.key", serving.keyPem)}`,
      `--client-ca-file=${caFile}`,
      "--authorization-mode=RBAC",
      "--service-cluster-ip-range=10.0.0.0/24",
      "--allow-privileged=true",
      `--service-account-issuer=${url}`,
      `--service-account-key-file=${serviceAccountPublicKeyFile}`,
      `--service-account-signing-key-file=${serviceAccountKeyFile}`,
      // No controller-manager creates service-account tokens here, so the admission plugin would reject pods.
      "--disable-admission-plugins=ServiceAccount",
      ...(options.extraArgs ?? []),
    ];
    proc = startProcess({
      name: `kube-apiserver (${url})`,
      command: binary,
      args,
      logFile: join(dir, "kube-apiserver.log"),
    });

    const admin = await issueCertificate(ca, {
      commonName: "quorum-test-admin",
      organization: "system:masters",
      usages: "client",
      validity: validFor(oneDay),
    });
    await waitUntilReady({
      process: proc,
      what: `GET ${url}/readyz`,
      timeoutMs: options.readyTimeoutMs ?? 120_000,
      intervalMs: 500,
      probe: async () => {
        const { status, body } = await httpGet(`${url}/readyz`, {
          ca: ca.certPem,
          cert: admin.certPem,
          key: admin.keyPem,
          timeoutMs: 5_000,
        });
        return status === 200 ? true : `HTTP ${status}: ${lastLines(body, 5)}`;
      },
    });

    const writeKubeconfig = (name: string, certPem: string, keyPem: string) => {
      const kubeconfigPath = file(`${name}.kubeconfig`, kubeconfigYaml(url, ca.certPem, name, certPem, keyPem));
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(kubeconfigPath);
      return { kubeConfig, kubeconfigPath };
    };
    const adminConfig = writeKubeconfig("admin", admin.certPem, admin.keyPem);
    const apiServer: ApiServer = {
      url,
      kubeConfig: adminConfig.kubeConfig,
      kubeconfigPath: adminConfig.kubeconfigPath,
      ca,
      process: proc,
      etcd,
      async userKubeConfig(user, groups = []) {
        const cert = await issueCertificate(ca, {
          commonName: user,
          organization: groups,
          usages: "client",
          validity: validFor(oneDay),
        });
        return writeKubeconfig(user.replace(/[^a-zA-Z0-9_.-]/g, "-"), cert.certPem, cert.keyPem);
      },
      stop,
    };
    return apiServer;
  } catch (error) {
    await stop();
    throw error;
  }
}

function kubeconfigYaml(server: string, caPem: string, user: string, certPem: string, keyPem: string): string {
  const b64 = (pem: string) => Buffer.from(pem).toString("base64");
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "quorum-test", cluster: { server, "certificate-authority-data": b64(caPem) } }],
    users: [{ name: user, user: { "client-certificate-data": b64(certPem), "client-key-data": b64(keyPem) } }],
    contexts: [{ name: "quorum-test", context: { cluster: "quorum-test", user } }],
    "current-context": "quorum-test",
  });
}

function lastLines(text: string, count: number): string {
  return text.trim().split("\n").slice(-count).join(" | ");
}
