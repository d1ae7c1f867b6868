// The kubelet's port-forward server for the process kubelet: bin/quorum-kubelet-portforward (the kubelet's own
// /portForward code, hack/tools/kubelet-portforward) as a child process in the Machine's namespaces, on the kubelet
// port the Node reports. kube-apiserver's pods/portforward proxies there, which is how Quorum (like KCP) reaches a
// node's etcd without dialling port 2379. Restarted with a back-off when it dies, on the same port, so the Node's
// status.daemonEndpoints stays true.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startProcess, type ManagedProcess } from "../../../test/env/processes.ts";

export interface PortForwardServerOptions {
  binDir: string;
  logDir: string;
  /** The node's address: served there and dialled for the (hostNetwork) pods' ports. */
  nodeIP: string;
  /** 10250 as the kubelet's default; 0 takes a free port (then kept across restarts). */
  port: number;
  /**
   * Only clients with a certificate this CA signed (kube-apiserver's --kubelet-client-certificate, which kubeadm
   * signs with the cluster CA): kubeadm writes it before any API server can call, so the server waits for the file.
   * Empty: any client.
   */
  clientCaFile: string;
  log: (line: string) => void;
}

const listeningLine = /^listening on \S+:(\d+)$/m;

export class PortForwardServer {
  private process: ManagedProcess | undefined;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  /** The port it serves on, once it reported it (the configured one unless that was 0). */
  port: number | undefined;

  constructor(private readonly options: PortForwardServerOptions) {}

  start(): void {
    this.loop = this.supervise();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.process?.stop(5_000);
    await this.loop;
  }

  private async supervise(): Promise<void> {
    const { clientCaFile, log } = this.options;
    let backoffMs = 1_000;
    let waitedForCa = false;
    const { signal } = this.abort;
    // Sleeps end early on stop(); the loop checks the signal after each.
    const pause = (ms: number) => sleep(ms, undefined, { signal }).catch(() => undefined);
    while (!signal.aborted) {
      if (clientCaFile && !existsSync(clientCaFile)) {
        if (!waitedForCa) log(`port-forward server: waiting for ${clientCaFile} (kubeadm writes it)`);
        waitedForCa = true;
        await pause(500);
        continue;
      }
      const startedAt = Date.now();
      const proc = this.startOnce();
      this.process = proc;
      const exit = await proc.exited;
      if (signal.aborted) return;
      // A server that ran a while gets a fresh back-off, as the supervisor's static pods do.
      backoffMs = Date.now() - startedAt > 60_000 ? 1_000 : Math.min(backoffMs * 2, 30_000);
      log(
        `ERROR port-forward server exited (code ${exit.code}, signal ${exit.signal}): ${proc.lastLogLines(3)}; ` +
          `restarting in ${backoffMs} ms`,
      );
      await pause(backoffMs);
    }
  }

  private startOnce(): ManagedProcess {
    const { binDir, logDir, nodeIP, clientCaFile, log } = this.options;
    const port = this.port ?? this.options.port;
    const logFile = join(logDir, "kubelet-portforward.log");
    const args = [`--listen=${nodeIP.includes(":") ? `[${nodeIP}]` : nodeIP}:${port}`, `--target-host=${nodeIP}`];
    if (clientCaFile) args.push(`--client-ca-file=${clientCaFile}`);
    // The log is appended to across restarts: only what this start writes counts.
    const offset = existsSync(logFile) ? readFileSync(logFile).length : 0;
    const proc = startProcess({
      name: "kubelet port-forward server",
      command: join(binDir, "quorum-kubelet-portforward"),
      args,
      logFile,
    });
    log(`started the port-forward server (pid ${proc.pid}, ${args.join(" ")}, log ${logFile})`);
    void this.readPort(proc, logFile, offset);
    return proc;
  }

  /** Learns the port from the server's one stdout line (ready within milliseconds; 10 s at most). */
  private async readPort(proc: ManagedProcess, logFile: string, offset: number): Promise<void> {
    for (let attempt = 0; attempt < 200 && proc.isRunning(); attempt++) {
      const match = listeningLine.exec(readFileSync(logFile).subarray(offset).toString("utf8"));
      if (match) {
        this.port = Number(match[1]);
        this.options.log(`port-forward server listening on port ${this.port}`);
        return;
      }
      await sleep(50);
    }
  }
}
