// Process management for the real-process test harness.
//
// Every process runs in its own process group (detached) so that stopping it also stops anything it forked.
// Three layers make sure nothing outlives the test process:
//   1. callers stop what they started (`after(() => cluster.stop())`);
//   2. `process.on("exit")` and SIGINT/SIGTERM/SIGHUP handlers SIGKILL every group still registered;
//   3. a guard process (its own group) holds a pipe from this process; when the pipe closes, which happens
//      however this process dies (SIGKILL and crashes included), it SIGKILLs every group it was told about.
import { spawn, type ChildProcess } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export interface StartProcessOptions {
  /** Human name used in errors and logs, e.g. "etcd member m2 (127.43.7.2)". */
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Where stdout and stderr go; defaults to a file in a fresh temp dir. Appended to on restart. */
  logFile?: string;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /**
   * Resolves when the process has exited (never rejects). The child does not keep the event loop alive by
   * itself: await stop()/kill(), or keep something else pending, rather than awaiting this alone.
   */
  readonly exited: Promise<ProcessExit>;
  /** Undefined while running. */
  exitStatus(): ProcessExit | undefined;
  isRunning(): boolean;
  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves once the leader has exited. Idempotent. */
  stop(graceMs?: number): Promise<ProcessExit>;
  /** SIGKILL to the group; resolves once the leader has exited. */
  kill(): Promise<ProcessExit>;
  /**
   * SIGSTOP to the group, resolving once every thread of the leader is stopped: the process keeps its sockets but
   * answers nothing. The kernel stops a multi-threaded process only when one of its threads gets a CPU to act on
   * the signal; on a loaded machine the others can answer a request meanwhile, so callers must await this.
   */
  pause(): Promise<void>;
  /** SIGCONT to the group. */
  resume(): void;
  /** The last `count` lines of its log. */
  lastLogLines(count?: number): string;
}

const liveProcesses = new Map<number, ManagedProcess>();
const startedPids: number[] = [];
const pathsToRemove = new Set<string>();

/** PIDs of every process this test process started, in start order (also those that exited since). */
export function allStartedPids(): readonly number[] {
  return [...startedPids];
}

/** Processes started by this test process that have not exited yet. */
export function runningProcesses(): ManagedProcess[] {
  return [...liveProcesses.values()];
}

const keepTestDirs = process.env.QUORUM_KEEP_TEST_DIRS === "1";

/**
 * A fresh directory under the system temp dir, removed by removeTempDir or, failing that, when this process
 * exits however it exits. QUORUM_KEEP_TEST_DIRS=1 keeps them for debugging.
 */
export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `quorum-${prefix.replace(/[^a-zA-Z0-9_.-]/g, "-")}-`));
  if (!keepTestDirs) removeOnExit(dir);
  return dir;
}

export function removeTempDir(dir: string): void {
  if (keepTestDirs) return;
  forgetPath(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** Removes `path` (file or directory) when this process exits, even by SIGKILL; returns a function that forgets it. */
export function removeOnExit(path: string): () => void {
  installExitHandlers();
  pathsToRemove.add(path);
  guard().trackPath(path);
  return () => forgetPath(path);
}

function forgetPath(path: string): void {
  if (pathsToRemove.delete(path)) guard().forgetPath(path);
}

export function startProcess(options: StartProcessOptions): ManagedProcess {
  installExitHandlers();
  const logFile = options.logFile ?? join(makeTempDir("log"), "output.log");
  // The child writes straight into the file: logs survive a crash of this process and cost no event-loop work.
  const logFd = openSync(logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      detached: true,
      stdio: ["ignore", logFd, logFd],
    });
  } finally {
    closeSync(logFd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    // The failure itself arrives as an "error" event; without a listener it would crash the test process.
    child.once("error", () => undefined);
    throw new Error(
      `${options.name}: could not start ${options.command}: is it installed and executable? (run make deps)`,
    );
  }
  child.on("error", (error) => {
    console.error(`${options.name} (pid ${pid}): ${error.message}`);
  });
  // A detached child would otherwise keep the test process alive; the registry and hooks own its lifetime.
  child.unref();
  guard().add(pid);

  let exitStatus: ProcessExit | undefined;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once("exit", (code, signal) => {
      exitStatus = { code, signal };
      liveProcesses.delete(pid);
      guard().remove(pid);
      resolve(exitStatus);
    });
  });

  const signalGroup = (signal: NodeJS.Signals) => {
    if (exitStatus) return;
    try {
      process.kill(-pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    }
  };

  const managed: ManagedProcess = {
    name: options.name,
    pid,
    logFile,
    exited,
    exitStatus: () => exitStatus,
    isRunning: () => exitStatus === undefined,
    async stop(graceMs = 10_000) {
      if (exitStatus) return exitStatus;
      // Waiting for the exit must keep the event loop alive; the child is unref'd otherwise.
      child.ref();
      // A paused group would ignore SIGTERM until resumed.
      signalGroup("SIGCONT");
      signalGroup("SIGTERM");
      const timer = setTimeout(() => signalGroup("SIGKILL"), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
        // The leader is gone; anything it forked into its group goes too.
        killGroupQuietly(pid);
      }
    },
    async kill() {
      if (exitStatus) return exitStatus;
      child.ref();
      signalGroup("SIGKILL");
      return exited;
    },
    async pause() {
      signalGroup("SIGSTOP");
      await waitUntilStopped(pid, options.name, () => exitStatus !== undefined);
    },
    resume: () => signalGroup("SIGCONT"),
    lastLogLines: (count = 30) => tailFile(logFile, count),
  };
  liveProcesses.set(pid, managed);
  startedPids.push(pid);
  return managed;
}

/** The state letter of each thread of `pid` (`T` stopped, `t` traced, `S` sleeping, ...); empty once it is gone. */
function threadStates(pid: number): string[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const states: string[] = [];
  for (const task of tasks) {
    try {
      // "pid (comm) S ...": comm may hold spaces or parentheses, so the state follows the last ")".
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8");
      states.push(stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return states;
}

async function waitUntilStopped(pid: number, name: string, exited: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited()) return;
    const states = threadStates(pid);
    if (states.length > 0 && states.every((state) => state === "T" || state === "t")) return;
    if (Date.now() > deadline) {
      throw new Error(
        `${name} (pid ${pid}): SIGSTOP sent ${timeoutMs} ms ago, threads still in states ${states.join("")}`,
      );
    }
    await sleep(5);
  }
}

/** Stops every process still running (SIGTERM, then SIGKILL after `graceMs`). */
export async function stopAllProcesses(graceMs = 10_000): Promise<void> {
  await Promise.all(runningProcesses().map((p) => p.stop(graceMs)));
}

export interface WaitUntilReadyOptions {
  /** The process whose readiness is awaited; its early exit fails the wait at once. */
  process: ManagedProcess;
  /** What is being waited for, e.g. "GET https://127.43.7.1:2379/health". */
  what: string;
  timeoutMs: number;
  /** Resolves true when ready; false or a thrown error means "not yet" and is remembered for the message. */
  probe: () => Promise<boolean | string>;
  intervalMs?: number;
}

/** When a wait ended: the probe that said ready, and the last that did not (absent if the first said ready). */
export interface ReadyTimes {
  /** When the probe that said ready returned. */
  readyAt: number;
  /**
   * When the last probe that did not say ready returned: up to then the process was certainly not ready, after it
   * the probe's interval hides when it became ready.
   */
  notReadyAt?: number;
}

/** Polls `probe` until it says ready; on timeout or early exit, the error names the process and shows its log. */
export async function waitUntilReady(options: WaitUntilReadyOptions): Promise<ReadyTimes> {
  const { process: proc, what, timeoutMs, probe, intervalMs = 200 } = options;
  const deadline = Date.now() + timeoutMs;
  let lastResult = "no probe finished yet";
  let notReadyAt: number | undefined;
  while (Date.now() < deadline) {
    const status = proc.exitStatus();
    if (status) {
      throw new Error(
        `${proc.name} (pid ${proc.pid}) exited with ${describeExit(status)} before it was ready (${what}); ` +
          `last log lines from ${proc.logFile}:\n${proc.lastLogLines()}`,
      );
    }
    try {
      const result = await probe();
      if (result === true)
        return notReadyAt === undefined ? { readyAt: Date.now() } : { readyAt: Date.now(), notReadyAt };
      lastResult = result === false ? "not ready" : result;
    } catch (error) {
      lastResult = (error as Error).message;
    }
    notReadyAt = Date.now();
    await sleep(intervalMs);
  }
  throw new Error(
    `${proc.name} (pid ${proc.pid}) was not ready within ${Math.round(timeoutMs / 1000)} s (${what}; last probe: ` +
      `${lastResult}); the machine may be overloaded or the process misconfigured; last log lines from ` +
      `${proc.logFile}:\n${proc.lastLogLines()}`,
  );
}

/** Whether `pid` is a live (non-zombie) process, optionally also checking its command line contains `command`. */
export function isProcessAlive(pid: number, command?: string): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return false;
  }
  // The state is the field after the parenthesised command name, which may itself contain spaces.
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  if (state === "Z" || state === "X") return false;
  if (command === undefined) return true;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(command);
  } catch {
    return false;
  }
}

function describeExit(status: ProcessExit): string {
  return status.signal ? `signal ${status.signal}` : `code ${status.code}`;
}

function tailFile(file: string, count: number): string {
  if (!existsSync(file)) return "(no log file)";
  const size = statSync(file).size;
  const maxBytes = 64 * 1024;
  const fd = openSync(file, "r");
  try {
    const buffer = Buffer.alloc(Math.min(size, maxBytes));
    readSyncAt(fd, buffer, Math.max(0, size - maxBytes));
    const lines = buffer.toString("utf8").split("\n");
    if (lines.at(-1) === "") lines.pop();
    return (
      lines
        .slice(-count)
        .map((line) => `  | ${line}`)
        .join("\n") || "  | (empty log)"
    );
  } finally {
    closeSync(fd);
  }
}

function readSyncAt(fd: number, buffer: Buffer, position: number): void {
  let offset = 0;
  while (offset < buffer.length) {
    const read = readSync(fd, buffer, offset, buffer.length - offset, position + offset);
    if (read === 0) break;
    offset += read;
  }
}

function killGroupQuietly(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone, which is the goal.
  }
}

/** SIGKILLs every registered group and removes temp dirs, synchronously (safe inside an "exit" handler). */
export function killEverythingNow(): void {
  for (const pid of liveProcesses.keys()) killGroupQuietly(pid);
  for (const path of pathsToRemove) {
    try {
      // A process killed a moment ago may still be writing into its data dir; retry briefly.
      rmSync(path, { recursive: true, force: true, maxRetries: 3 });
    } catch (error) {
      // Throwing inside an exit handler would hide the test's own result; the guard retries at its exit.
      console.error(`test harness: could not remove ${path}: ${(error as Error).message}`);
    }
  }
  pathsToRemove.clear();
}

let exitHandlersInstalled = false;
let signalsLeftToCaller = false;

/**
 * For a long-running program (not a test) that stops its children gracefully on SIGINT/SIGTERM/SIGHUP itself: the
 * harness then installs no signal handlers of its own (which SIGKILL every group at once). The "exit" handler and
 * the guard stay, so children still never outlive the program. Call before the first startProcess.
 */
export function leaveTerminationSignalsToCaller(): void {
  if (exitHandlersInstalled) {
    throw new Error("leaveTerminationSignalsToCaller() must be called before the first startProcess/makeTempDir");
  }
  signalsLeftToCaller = true;
}

function installExitHandlers(): void {
  if (exitHandlersInstalled) return;
  exitHandlersInstalled = true;
  process.on("exit", killEverythingNow);
  if (signalsLeftToCaller) return;
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      killEverythingNow();
      // Listening replaced the default action, so die by the same signal as the default would have.
      process.kill(process.pid, signal);
    });
  }
}

// The guard: a bash loop reading "add PGID", "del PGID", "path PATH", "unpath PATH" lines on stdin; at EOF
// it SIGKILLs the groups and removes the paths still listed.
const guardScript = `
declare -A groups paths
while IFS= read -r line; do
  op=\${line%% *}; arg=\${line#* }
  case "$op" in
    add) groups[$arg]=1 ;;
    del) unset "groups[$arg]" ;;
    path) paths[$arg]=1 ;;
    unpath) unset "paths[$arg]" ;;
  esac
done
for pgid in "\${!groups[@]}"; do kill -KILL -- "-$pgid" 2>/dev/null; done
sleep 0.2
for path in "\${!paths[@]}"; do rm -rf -- "$path"; done
exit 0
`;

interface Guard {
  add(pgid: number): void;
  remove(pgid: number): void;
  trackPath(path: string): void;
  forgetPath(path: string): void;
}

let guardInstance: Guard | undefined;

function guard(): Guard {
  if (guardInstance) return guardInstance;
  const child = spawn("bash", ["-c", guardScript], { detached: true, stdio: ["pipe", "ignore", "ignore"] });
  child.unref();
  const stdin = child.stdin!;
  // The pipe must not keep the test process alive either; it closes when this process exits, however it exits.
  (stdin as unknown as { unref(): void }).unref();
  stdin.on("error", () => {
    // The guard died (e.g. killed by hand); layers 1 and 2 still clean up.
  });
  guardInstance = {
    add: (pgid) => stdin.write(`add ${pgid}\n`),
    remove: (pgid) => stdin.write(`del ${pgid}\n`),
    trackPath: (path) => stdin.write(`path ${path.replace(/\n/g, "")}\n`),
    forgetPath: (path) => stdin.write(`unpath ${path.replace(/\n/g, "")}\n`),
  };
  return guardInstance;
}
