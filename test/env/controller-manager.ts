// The real kube-controller-manager (built by `make deps` from k8s.io/kubernetes) against a test kube-apiserver,
// running only the controllers the tests need from it: the namespace controller (what empties and removes a
// deleted namespace) and the garbage collector (ownerReference cascades).
import type { ApiServer } from "./apiserver.ts";
import { freePort, httpGet, retryOnPortConflict } from "./net.ts";
import { makeTempDir, removeTempDir, startProcess, waitUntilReady, type ManagedProcess } from "./processes.ts";
import { builtBinary } from "./tools.ts";
import { join } from "node:path";

export interface ControllerManager {
  readonly process: ManagedProcess;
  readonly logFile: string;
  stop(): Promise<void>;
}

export interface ControllerManagerOptions {
  /** Controllers to run (default: the namespace controller and the garbage collector). */
  controllers?: string[];
  /** Readiness timeout (default 60 s). */
  readyTimeoutMs?: number;
  /** Extra flags, e.g. the cluster signing certificate and key for the csrsigning controller. */
  extraArgs?: string[];
}

export async function startControllerManager(
  apiServer: ApiServer,
  options: ControllerManagerOptions = {},
): Promise<ControllerManager> {
  return retryOnPortConflict(() => startOnce(apiServer, options));
}

async function startOnce(apiServer: ApiServer, options: ControllerManagerOptions): Promise<ControllerManager> {
  const binary = builtBinary("kube-controller-manager");
  const dir = makeTempDir("kube-controller-manager");
  let proc: ManagedProcess | undefined;
  const stop = async () => {
    await proc?.stop(10_000);
    removeTempDir(dir);
  };
  try {
    const host = "127.0.0.1";
    const port = await freePort(host);
    const controllers = options.controllers ?? ["namespace-controller", "garbage-collector-controller"];
    const args = [
      `--kubeconfig=${apiServer.kubeconfigPath}`,
      // Delegated authentication and authorization of its own /healthz use the same admin kubeconfig.
      `--authentication-kubeconfig=${apiServer.kubeconfigPath}`,
      `--authorization-kubeconfig=${apiServer.kubeconfigPath}`,
      `--controllers=${controllers.join(",")}`,
      "--leader-elect=false",
      `--bind-address=${host}`,
      `--secure-port=${port}`,
      `--cert-dir=${join(dir, "certs")}`,
      "--use-service-account-credentials=false",
      "--v=2",
      ...(options.extraArgs ?? []),
    ];
    const healthURL = `https://${host}:${port}/healthz`;
    const logFile = join(dir, "kube-controller-manager.log");
    proc = startProcess({ name: `kube-controller-manager (${healthURL})`, command: binary, args, logFile });
    const started = proc;
    await waitUntilReady({
      process: started,
      what: `GET ${healthURL}`,
      timeoutMs: options.readyTimeoutMs ?? 60_000,
      intervalMs: 300,
      probe: async () => {
        // Its serving certificate is self-signed in --cert-dir; only liveness is checked here.
        const { status, body } = await httpGet(healthURL, { rejectUnauthorized: false });
        return status === 200 ? true : `HTTP ${status}: ${body.trim().slice(0, 300)}`;
      },
    });
    return { process: started, logFile, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
