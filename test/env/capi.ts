// The real CAPI managers (built by `make deps` from sigs.k8s.io/cluster-api) against a test kube-apiserver: the core
// manager (sigs.k8s.io/cluster-api/core) and the kubeadm bootstrap provider (bootstrap/kubeadm, CABPK). Both are
// controller-runtime managers with the same flags; how their webhooks are handled is explained in test/env/README.md.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createCA, issueCertificate, oneDay, validFor } from "../../src/adapters/certs/pki.ts";
import type { ApiServer } from "./apiserver.ts";
import { freePort, httpGet, retryOnPortConflict } from "./net.ts";
import { makeTempDir, removeTempDir, startProcess, waitUntilReady, type ManagedProcess } from "./processes.ts";
import { builtBinary } from "./tools.ts";

export interface CapiManagerOptions {
  /** Readiness timeout (default 120 s). */
  readyTimeoutMs?: number;
  /** Extra manager flags, e.g. ["--feature-gates=ClusterTopology=true"]. */
  extraArgs?: string[];
  /** klog verbosity (default 2). */
  verbosity?: number;
}

export interface CapiManager {
  readonly process: ManagedProcess;
  /** http://127.0.0.1:<port>, serving /healthz and /readyz. */
  readonly healthURL: string;
  /** http://127.0.0.1:<port>/metrics (served without auth: --insecure-diagnostics). */
  readonly metricsURL: string;
  readonly logFile: string;
  stop(): Promise<void>;
}

/** Starts the CAPI core controllers against `apiServer` (whose CRDs must already be installed) and waits for /readyz. */
export async function startCapiManager(apiServer: ApiServer, options: CapiManagerOptions = {}): Promise<CapiManager> {
  return retryOnPortConflict(() => startManagerOnce(apiServer, options, MANAGERS.core));
}

/**
 * Starts CAPI's kubeadm bootstrap provider (the KubeadmConfig controller) against `apiServer`, whose CRDs must include
 * the bootstrap/kubeadm set (installCRDs' default), and waits for /readyz. It writes each KubeadmConfig's cloud-init
 * data Secret; for a join it also creates a bootstrap token in the workload cluster, reached through the
 * `<cluster>-kubeconfig` Secret at Cluster.spec.controlPlaneEndpoint.
 */
export async function startKubeadmBootstrapManager(
  apiServer: ApiServer,
  options: CapiManagerOptions = {},
): Promise<CapiManager> {
  return retryOnPortConflict(() => startManagerOnce(apiServer, options, MANAGERS.kubeadmBootstrap));
}

const MANAGERS = {
  core: { binary: "capi-manager", what: "CAPI core manager", webhookService: "capi-webhook-service" },
  kubeadmBootstrap: {
    binary: "capi-kubeadm-bootstrap-manager",
    what: "CAPI kubeadm bootstrap manager",
    webhookService: "capi-kubeadm-bootstrap-webhook-service",
  },
} as const;

async function startManagerOnce(
  apiServer: ApiServer,
  options: CapiManagerOptions,
  manager: (typeof MANAGERS)[keyof typeof MANAGERS],
): Promise<CapiManager> {
  const binary = builtBinary(manager.binary);
  const dir = makeTempDir(manager.binary);
  let proc: ManagedProcess | undefined;
  const stop = async () => {
    await proc?.stop(10_000);
    removeTempDir(dir);
  };
  try {
    const host = "127.0.0.1";
    const healthPort = await freePort(host);
    const diagnosticsPort = await freePort(host);
    // controller-runtime's webhook server binds every interface and has no host flag, so probe 0.0.0.0.
    const webhookPort = await freePort("0.0.0.0");

    // The webhook server refuses to start without a certificate. No webhook configuration points at it (none
    // is installed), so the apiserver never calls it; the certificate only lets the manager start.
    const webhookCA = await createCA("capi-webhook-ca", validFor(7 * oneDay));
    const webhookCert = await issueCertificate(webhookCA, {
      commonName: manager.webhookService,
      dnsNames: ["localhost"],
      ipAddresses: [host],
      usages: "server",
      validity: validFor(oneDay),
    });
    const certDir = join(dir, "webhook-certs");
    mkdirSync(certDir, { recursive: true });
    writeFileSync(join(certDir, "tls.crt"), webhookCert.certPem);
    writeFileSync(join(certDir, "tls.key"), webhookCert.keyPem, { mode: 0o600 });

    const args = [
      `--kubeconfig=${apiServer.kubeconfigPath}`,
      `--health-addr=${host}:${healthPort}`,
      `--diagnostics-address=${host}:${diagnosticsPort}`,
      "--insecure-diagnostics",
      `--webhook-port=${webhookPort}`,
      `--webhook-cert-dir=${certDir}`,
      "--leader-elect=false",
      `--v=${options.verbosity ?? 2}`,
      ...(options.extraArgs ?? []),
    ];
    const healthURL = `http://${host}:${healthPort}`;
    const logFile = join(dir, `${manager.binary}.log`);
    proc = startProcess({ name: `${manager.what} (health ${healthURL})`, command: binary, args, logFile });
    const started = proc;
    await waitUntilReady({
      process: started,
      what: `GET ${healthURL}/readyz`,
      timeoutMs: options.readyTimeoutMs ?? 120_000,
      intervalMs: 500,
      probe: async () => {
        const { status, body } = await httpGet(`${healthURL}/readyz`);
        return status === 200 ? true : `HTTP ${status}: ${body.trim().slice(0, 300)}`;
      },
    });
    return {
      process: started,
      healthURL,
      metricsURL: `http://${host}:${diagnosticsPort}/metrics`,
      logFile,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
