// The kubelet's /portForward server (bin/quorum-kubelet-portforward, hack/tools/kubelet-portforward) on a free
// loopback port: a Node whose status.daemonEndpoints.kubeletEndpoint.Port is this port and whose InternalIP is its host
// lets a real kube-apiserver's pods/portforward reach ports on that host, as it reaches a real kubelet.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir, removeTempDir, startProcess, waitUntilReady, type ManagedProcess } from "./processes.ts";
import { builtBinary } from "./tools.ts";

export interface KubeletPortForwardOptions {
  /** Address to serve HTTPS on (default 127.0.0.1); the port is always a free one the server picks. */
  host?: string;
  /** Where a pod's port is dialled (default 127.0.0.1): the pods it stands for are hostNetwork. */
  targetHost?: string;
  /** PEM CA: if set, only clients with a certificate it signed (kube-apiserver's --kubelet-client-certificate). */
  clientCaFile?: string;
  /** Directory for its log (default: a fresh temp dir, removed on stop). */
  logDir?: string;
}

export interface KubeletPortForward {
  readonly port: number;
  /** host:port it serves on. */
  readonly address: string;
  readonly process: ManagedProcess;
  /** Stops the server (SIGTERM) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
}

const listeningLine = /^listening on (\S+):(\d+)$/m;

export async function startKubeletPortForward(options: KubeletPortForwardOptions = {}): Promise<KubeletPortForward> {
  const host = options.host ?? "127.0.0.1";
  const ownDir = options.logDir === undefined ? makeTempDir("kubelet-portforward") : undefined;
  const logFile = join(options.logDir ?? ownDir ?? "", `kubelet-portforward-${host}.log`);
  const args = [`--listen=${host}:0`, `--target-host=${options.targetHost ?? "127.0.0.1"}`];
  if (options.clientCaFile) args.push(`--client-ca-file=${options.clientCaFile}`);
  // Port 0 and the printed address, rather than freePort(): nothing can take the port between the check and the bind.
  const proc = startProcess({
    name: `kubelet port-forward (${host})`,
    command: builtBinary("quorum-kubelet-portforward"),
    args,
    logFile,
  });
  const stop = async () => {
    await proc.stop(5_000);
    if (ownDir) removeTempDir(ownDir);
  };
  try {
    let port = 0;
    await waitUntilReady({
      process: proc,
      what: `"listening on" in ${logFile}`,
      timeoutMs: 10_000,
      intervalMs: 50,
      probe: async () => {
        const match = listeningLine.exec(readFileSync(logFile, "utf8"));
        if (!match) return "not listening yet";
        port = Number(match[2]);
        return true;
      },
    });
    return { port, address: `${host}:${port}`, process: proc, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
