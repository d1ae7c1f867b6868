// The static pods' processes: the manifests dir is the desired state, polled; each manifest's container runs as a
// process (test/env startProcess: its own process group, killed with the kubelet however it dies). A changed
// manifest (new hash) stops the old process and starts the new one; a removed manifest stops it; an exited process
// is restarted after a back-off that doubles up to a cap and resets once the process has run a while, like the
// kubelet's CrashLoopBackOff (which starts at 10 s and caps at 5 min; shorter here so e2e recovers in seconds).
import { readdirSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { startProcess, type ManagedProcess } from "../../../test/env/processes.ts";
import { parseStaticPod, podCommand, type PodRuntimeState, type StaticPod } from "./static-pods.ts";

export interface SupervisorOptions {
  manifestsDir: string;
  binDir: string;
  logDir: string;
  nodeName: string;
  /** SIGTERM, then SIGKILL after this long (default 10 s). */
  stopGraceMs?: number;
  /** First restart delay after an exit (default 1 s), doubled per exit up to maxBackoffMs (default 10 s). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A process that ran this long resets the back-off (default 60 s). */
  backoffResetMs?: number;
  log: (line: string) => void;
}

/** One static pod the kubelet runs: its manifest, its process (if running) and what the mirror Pod reports. */
export interface RunningPod {
  pod: StaticPod;
  process?: ManagedProcess;
  state: PodRuntimeState;
  /** When the kubelet first saw this manifest version (the mirror Pod's startTime). */
  startTime: string;
  /** Earliest time (ms) of the next start attempt. */
  nextStartAt: number;
  backoffMs: number;
}

export class PodSupervisor {
  /** By manifest file path. */
  readonly pods = new Map<string, RunningPod>();
  /** Manifest files that do not parse, by path, with the text last reported (to log each failure once). */
  private readonly badManifests = new Map<string, string>();
  private stopping = false;
  private readonly opts: Required<Omit<SupervisorOptions, "log">> & Pick<SupervisorOptions, "log">;

  constructor(options: SupervisorOptions) {
    this.opts = {
      stopGraceMs: 10_000,
      initialBackoffMs: 1_000,
      maxBackoffMs: 10_000,
      backoffResetMs: 60_000,
      ...options,
    };
  }

  /** Reads the manifests dir once and brings the processes in line with it. */
  async sync(now = Date.now()): Promise<void> {
    if (this.stopping) return;
    const desired = this.readManifests();
    const changes: Promise<void>[] = [];
    for (const [file, running] of this.pods) {
      const wanted = desired.get(file);
      if (!wanted) {
        changes.push(this.remove(file, running, "manifest removed"));
      } else if (wanted.hash !== running.pod.hash) {
        // Forgotten at once, so the loop below adds the new version; it starts once the old process is gone.
        changes.push(this.remove(file, running, "manifest changed"));
      }
    }
    for (const [file, pod] of desired) if (!this.pods.has(file)) this.add(pod, now);
    await Promise.all(changes);
    for (const running of this.pods.values()) this.startIfDue(running, Date.now());
  }

  /**
   * Stops every pod (SIGTERM, SIGKILL after the grace) and starts no more: etcd last, because a kube-apiserver whose
   * etcd is gone does not finish its graceful shutdown and waits for the SIGKILL (seen with kubeadm's manifests).
   */
  async stopAll(): Promise<void> {
    this.stopping = true;
    const isEtcd = (running: RunningPod) => /(^|\/)etcd:/.test(running.pod.manifest.spec.containers[0]?.image ?? "");
    for (const etcdLast of [false, true]) {
      const stops = [...this.pods.entries()]
        .filter(([, running]) => isEtcd(running) === etcdLast)
        .map(([file, running]) => this.remove(file, running, "kubelet stopping"));
      await Promise.all(stops);
    }
  }

  private readManifests(): Map<string, StaticPod> {
    const desired = new Map<string, StaticPod>();
    let entries: string[];
    try {
      entries = readdirSync(this.opts.manifestsDir);
    } catch (error) {
      // kubeadm creates the dir in its control-plane/etcd phases; until then there is nothing to run.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return desired;
      throw error;
    }
    // Like the kubelet, ignore hidden files (editors' swap files, kubeadm's own temp files start with a dot).
    for (const entry of entries.filter((name) => !name.startsWith(".")).sort()) {
      const file = join(this.opts.manifestsDir, entry);
      let text: string;
      try {
        text = readFileSync(file, "utf8");
      } catch (error) {
        // Removed between the listing and the read, or a directory: not a manifest.
        if (["ENOENT", "EISDIR"].includes((error as NodeJS.ErrnoException).code ?? "")) continue;
        throw error;
      }
      try {
        desired.set(file, parseStaticPod(file, text, this.opts.nodeName));
        this.badManifests.delete(file);
      } catch (error) {
        if (this.badManifests.get(file) !== text) this.opts.log(`ERROR ${(error as Error).message}`);
        this.badManifests.set(file, text);
      }
    }
    return desired;
  }

  private add(pod: StaticPod, now: number): void {
    const startTime = new Date(now).toISOString();
    const running: RunningPod = {
      pod,
      state: { restartCount: 0 },
      startTime,
      nextStartAt: now,
      backoffMs: this.opts.initialBackoffMs,
    };
    this.pods.set(pod.file, running);
    this.opts.log(`static pod ${pod.namespace}/${pod.name} found in ${pod.file} (hash ${pod.hash})`);
  }

  private async remove(file: string, running: RunningPod, why: string): Promise<void> {
    this.pods.delete(file);
    const proc = running.process;
    if (!proc) return;
    running.process = undefined;
    const exit = await proc.stop(this.opts.stopGraceMs);
    this.opts.log(
      `stopped static pod ${running.pod.name} (pid ${proc.pid}, ${why}): exited with ` +
        (exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`),
    );
  }

  private startIfDue(running: RunningPod, now: number): void {
    if (this.stopping || running.process || now < running.nextStartAt) return;
    const { pod } = running;
    let command;
    try {
      command = podCommand(pod, this.opts.binDir, hostname());
    } catch (error) {
      const message = (error as Error).message;
      // Logged once per manifest version; the mirror Pod shows it as the container's waiting reason.
      if (running.state.waiting?.message !== message) this.opts.log(`ERROR static pod ${pod.name}: ${message}`);
      running.state.waiting = { reason: "ErrImagePull", message };
      running.nextStartAt = now + this.opts.maxBackoffMs;
      return;
    }
    const logFile = join(this.opts.logDir, `${pod.name}.log`);
    const proc = startProcess({
      name: `static pod ${pod.name}`,
      command: command.command,
      args: command.args,
      env: command.env,
      cwd: command.cwd,
      logFile,
    });
    running.process = proc;
    const startedAt = Date.now();
    running.state.runningSince = new Date(startedAt).toISOString();
    running.state.waiting = undefined;
    this.opts.log(`started static pod ${pod.name} (pid ${proc.pid}, ${command.command}, log ${logFile})`);
    void proc.exited.then((exit) => this.onExit(running, proc, startedAt, exit.code, exit.signal));
  }

  private onExit(
    running: RunningPod,
    proc: ManagedProcess,
    startedAt: number,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    // A stop by the kubelet itself (manifest changed or removed) cleared running.process first.
    if (running.process !== proc) return;
    running.process = undefined;
    const now = Date.now();
    running.state.runningSince = undefined;
    running.state.lastExit = {
      exitCode: code ?? 128 + (signal === "SIGKILL" ? 9 : 15),
      signal: signal ?? undefined,
      finishedAt: new Date(now).toISOString(),
    };
    running.state.restartCount += 1;
    if (now - startedAt >= this.opts.backoffResetMs) running.backoffMs = this.opts.initialBackoffMs;
    running.nextStartAt = now + running.backoffMs;
    running.state.waiting = {
      reason: "CrashLoopBackOff",
      message: `back-off ${running.backoffMs} ms restarting ${running.pod.name}`,
    };
    this.opts.log(
      `static pod ${running.pod.name} (pid ${proc.pid}) exited with ` +
        `${signal ? `signal ${signal}` : `code ${code}`}; restarting in ${running.backoffMs} ms ` +
        `(restart ${running.state.restartCount}; log ${proc.logFile})`,
    );
    running.backoffMs = Math.min(running.backoffMs * 2, this.opts.maxBackoffMs);
  }
}
