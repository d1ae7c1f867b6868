// Benchmark 2 — scale: 100 → 300 → 1,000 → 2,000 QuorumControlPlanes with 3 Machines each against a real
// kube-apiserver, the controller running as its own process (bench/scale/controller.ts: the real Manager,
// informers, queue, reconcile, planner and certificate Secrets) with the workload side (etcd and Nodes) SIMULATED
// in-process.
//
// The driver (./driver.ts) plays what the controller does not do: it creates the clusters (Namespace, templates,
// Cluster, QuorumControlPlane), plays the infrastructure provider and CAPI (a Machine gets an address, its
// infrastructure and bootstrap become ready, its nodeRef is set; the Cluster mirrors the control plane's
// initialization); this file measures. The levels are cumulative: 100 clusters are created, converge and sit idle,
// then 200 more are added (300), then 700 more at once (1,000: the burst whose first-ready and per-cluster median
// issue 19 targets), then 1,000 more (2,000), all on the same API server and controller process, like a management
// cluster that grows. Per level: time to converge from creation, then an idle window with controller RSS and
// CPU (from /proc), API requests per minute (counted inside the controller process), writes per minute (the
// API server's audit log, the controller's user only) and reconcile duration percentiles. Then 200 clusters are
// upgraded at once (./rollouts.ts).
import { spawnSync } from "node:child_process";
import { existsSync, openSync, readFileSync, readSync, closeSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { setTimeout as sleep } from "node:timers/promises";
import {
  freePort,
  installCRDs,
  makeTempDir,
  startApiServer,
  startProcess,
  type ApiServer,
  type ManagedProcess,
} from "../../test/env/index.ts";
import { testKindCRDs } from "../../test/integration/controller/test-kinds.ts";
import { milliCores, sampleProcess, type ProcessSample } from "../lib/procstat.ts";
import { DEFAULT_ETCD_IDLE_POLL_SECONDS } from "../../src/flags.ts";
import { profileApiServer } from "../lib/apiserver-profile.ts";
import { benchDir, progress, startResult } from "../lib/results.ts";
import { rounded, summarize, type Summary } from "../lib/stats.ts";
import { Driver, INITIAL_VERSION } from "./driver.ts";
import { rolloutNotes, runRolloutPhase, type RolloutResults } from "./rollouts.ts";

const NAME = "scale";
const CONTROLLER_USER = "quorum-bench-controller";
const sizes = list("BENCH_SCALE_SIZES", "100,300,1000,2000");
// Idle windows: 2 minutes at 2,000 clusters (issue 19 judges writes per idle minute), the smaller levels shortened to
// fit `make bench` in 30 minutes.
const idleSeconds = list("BENCH_SCALE_IDLE_SECONDS", "20,20,30,120");
const idleOf = (levelIndex: number) => idleSeconds[levelIndex] ?? idleSeconds[idleSeconds.length - 1];
const baselineIdleSeconds = Number(process.env.BENCH_SCALE_BASELINE_SECONDS ?? 30);
const perNamespace = Number(process.env.BENCH_SCALE_PER_NAMESPACE ?? 10);
const createParallelism = Number(process.env.BENCH_SCALE_CREATE_PARALLELISM ?? 16);
const apiServerProfile = process.env.BENCH_SCALE_APISERVER_PROF;
const convergeTimeoutSeconds = Number(process.env.BENCH_SCALE_CONVERGE_TIMEOUT_SECONDS ?? 900);
/** Converged clusters upgraded at once after the last idle window (issue 19 asks for 200); 0 skips the phase. */
const rolloutCount = Number(process.env.BENCH_SCALE_ROLLOUTS ?? 200);
/** How long the rollout phase may wait for its clusters (reserved from the run's deadline when there is one). */
const rolloutTimeoutSeconds = Number(process.env.BENCH_SCALE_ROLLOUT_TIMEOUT_SECONDS ?? 300);
const ROLLOUT_VERSION = "v1.33.2";
// Set by bench/run.ts so that `make bench` ends in time; convergence waits shrink to fit (see convergeLimit).
const deadlineAt = process.env.BENCH_DEADLINE_AT ? Number(process.env.BENCH_DEADLINE_AT) : undefined;
/** Kept free for a level's settling, and for stopping the processes at the end (that took 2 s in the 21:08 UTC run of 2026-12-04). */
const SETTLE_MAX_SECONDS = 30;
const TEARDOWN_SECONDS = 20;
/**
 * What the levels leave for the rollout phase when the run has a deadline: 200 rollouts took 71–84 s in the runs of
 * 2026-12-03 and 2026-12-04, so 150 s; the phase itself may then use whatever the levels did not (rolloutLimit).
 */
const ROLLOUT_RESERVE_SECONDS = 150;
const pollInterval = process.env.BENCH_SCALE_POLL_INTERVAL ?? "10s";
/**
 * Settled clusters are polled at this interval: the controller's default (src/flags.ts), so that the idle figures are what a
 * user's controller costs. Until 2026-12-03 the benchmark polled every cluster at pollInterval (10s), so the idle
 * CPU of earlier runs bounds the cost from above; BENCH_SCALE_IDLE_POLL_INTERVAL=10s measures that again.
 */
const idlePollInterval = process.env.BENCH_SCALE_IDLE_POLL_INTERVAL ?? `${DEFAULT_ETCD_IDLE_POLL_SECONDS}s`;
const idlePollSeconds = Number.parseFloat(idlePollInterval);
const concurrency = process.env.BENCH_SCALE_CONCURRENCY ?? "10";
/** e.g. ECDSA-P256: every cluster's bootstrap template asks for that key type (the default run leaves it unset). */
const encryptionAlgorithm = process.env.BENCH_SCALE_ENCRYPTION_ALGORITHM;
const simulatedLatencyMs = Number(process.env.BENCH_SIM_LATENCY_MS ?? 2);
/**
 * The controller's environment from the shipped manifest (config/manager/manager.yaml), as the container runs it:
 * NODE_OPTIONS (V8's heap limits) and MALLOC_ARENA_MAX (glibc's malloc arenas). Until 2026-12-03 the benchmark ran
 * the controller without them, so V8 sized its heap from this machine's memory (24 GB) and let it grow to about four
 * times what was live before collecting: the RSS of those runs is not the deployed controller's.
 * BENCH_SCALE_NODE_OPTIONS and BENCH_SCALE_MALLOC_ARENA_MAX replace them ("" runs without).
 */
const manifestEnv = manifestLiteralEnv();
const mallocArenaMax = process.env.BENCH_SCALE_MALLOC_ARENA_MAX ?? manifestEnv.MALLOC_ARENA_MAX ?? "";
const controllerEnv: Record<string, string> = {
  NODE_OPTIONS: process.env.BENCH_SCALE_NODE_OPTIONS ?? manifestEnv.NODE_OPTIONS,
  ...(mallocArenaMax ? { MALLOC_ARENA_MAX: mallocArenaMax } : {}),
};
/** BENCH_SCALE_HEAP_SNAPSHOT_DIR=DIR: a heap snapshot of the controller there after each idle window (for looking into memory). */
const heapSnapshotDir = process.env.BENCH_SCALE_HEAP_SNAPSHOT_DIR;
const replicas = 3;

/**
 * The controller runs compiled to JavaScript, as the container runs dist/main.js: under tsx, transpiling at load
 * added ~120 MB of RSS to every figure. Compiled into .cache/ inside the repository so node_modules resolve.
 */
function compileController(): string {
  const started = Date.now();
  const result = spawnSync(
    process.execPath,
    [
      join(benchDir, "..", "node_modules", "typescript", "bin", "tsc"),
      "-p",
      join(benchDir, "scale", "tsconfig.build.json"),
    ],
    { encoding: "utf8" },
  );
  if (result.status !== 0)
    throw new Error(`compiling the benchmark's controller failed:\n${result.stdout}${result.stderr}`);
  progress(NAME, `compiled the controller to JavaScript in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return join(benchDir, "..", ".cache", "bench-scale", "bench", "scale", "controller.js");
}

/** The literal `value:` env entries of the manifest's controller container. */
function manifestLiteralEnv(): Record<string, string> {
  const path = join(benchDir, "..", "config", "manager", "manager.yaml");
  const deployment = parseAllDocuments(readFileSync(path, "utf8"))
    .map((document) => document.toJS() as Deployment | null)
    .find((object) => object?.kind === "Deployment");
  const env = deployment?.spec?.template?.spec?.containers?.[0]?.env ?? [];
  const literal = Object.fromEntries(
    env.flatMap((variable) => (variable.value === undefined ? [] : [[variable.name, variable.value]])),
  );
  if (literal.NODE_OPTIONS === undefined) throw new Error(`${path}: no NODE_OPTIONS value found for the controller`);
  return literal;
}

interface Deployment {
  kind?: string;
  spec?: { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } };
}

function list(variable: string, fallback: string): number[] {
  return (process.env[variable] ?? fallback).split(",").map((text) => Number(text.trim()));
}

interface LevelResult {
  clusters: number;
  added: number;
  convergence: {
    /**
     * From the first create of this level's batch to the last of its clusters converging; the controller's CPU, writes
     * and requests below are counted over the same span (the controller starts on the first clusters while the
     * driver is still creating the others).
     */
    allConvergedSeconds: number | null;
    converged: number;
    /** Per cluster: from its QuorumControlPlane's create to the status showing 3 healthy, up-to-date members. */
    perClusterSeconds: Summary;
    /** How long this level could wait for convergence (the configured cap, shrunk to fit the run's deadline). */
    limitSeconds: number;
    controllerCpuSeconds: number;
    controllerPeakRssMB: number;
    controllerWrites: number;
    /** Requests the controller sent while this level converged, divided by the clusters it added, by verb and resource. */
    requestsPerAddedCluster: { total: number; byResource: Record<string, number> };
    /** Responses that came on a new connection (a TCP + TLS handshake) while this level converged. */
    newConnections: number;
  };
  idle: IdleWindow;
  /** This level's clusters converged when its idle window ended: below `added`, the window was not idle. */
  convergedAtWindowEnd: number;
}

interface IdleWindow {
  windowSeconds: number;
  controller: {
    milliCores: number;
    rssMB: { mean: number; max: number; end: number };
    heapMB: { used: number; total: number; external: number };
  };
  apiServer: { milliCores: number; rssMB: number };
  /** Requests the controller sent, per minute, by verb (counted in the controller process). */
  requestsPerMinute: {
    total: number;
    byVerb: Record<string, number>;
    byResource: Record<string, number>;
    meanResponseMs: number | null;
  };
  /** Writes the API server logged for the controller's user, per minute. */
  writesPerMinute: { total: number; excludingLease: number; byResource: Record<string, number> };
  reconciles: { perMinute: number; durationMs: Summary; errors: number };
  /** How long callbacks waited for the controller's event loop during the window. */
  eventLoopDelayMs: { p50: number; p99: number; max: number };
  /** Reconciles waiting in the queue at the end of the window (0 when the controller keeps up with its polls). */
  queueDepthAtEnd: number;
  /** Clusters × 60 / reconciles per minute: how often each cluster was actually looked at (the flag asks for 10 s). */
  effectivePollSeconds: number | null;
}

interface ScaleResults {
  simulation: string;
  controllerFlags: string[];
  baseline: IdleWindow;
  levels: LevelResult[];
  /** Clusters upgraded at once after the last level (bench/scale/rollouts.ts); absent when not run. */
  rollouts?: RolloutResults;
  targets: {
    clusters: number;
    rssMB: number;
    milliCores: number;
    writesPerMinute: number;
    /** Of the level that adds this many clusters at once: the first ready, and the per-cluster median. */
    burst: { added: number; firstReadySeconds: number; p50Seconds: number };
  };
  verdict: {
    rssMet: boolean | null;
    cpuMet: boolean | null;
    writesMet: boolean | null;
    burstFirstMet: boolean | null;
    burstP50Met: boolean | null;
  };
}

/**
 * How long level `index` may wait for its clusters to converge: the configured cap, shrunk when the run has a
 * deadline so that this level's and the later levels' idle windows (and settling, the rollout phase, and teardown)
 * still fit. The time left is shared among the levels still to converge in proportion to the clusters each adds
 * (they converge at about the same rate per cluster), so 1,000 new clusters get more than 700; a level that
 * converges early leaves its rest to the later ones.
 */
function convergeLimit(index: number, now: number): number {
  if (deadlineAt === undefined) return convergeTimeoutSeconds;
  const later = sizes.slice(index).map((_, offset) => idleOf(index + offset) + SETTLE_MAX_SECONDS + 10);
  const rollout = rolloutCount > 0 ? Math.min(rolloutTimeoutSeconds, ROLLOUT_RESERVE_SECONDS) : 0;
  const available =
    (deadlineAt - now) / 1000 - later.reduce((sum, seconds) => sum + seconds, 0) - rollout - TEARDOWN_SECONDS;
  // Levels are cumulative: this one adds sizes[index] - sizes[index - 1], and it and the later ones together add
  // the last size less the size before this level.
  const before = index > 0 ? sizes[index - 1] : 0;
  const addedLeft = sizes[sizes.length - 1] - before;
  return Math.max(30, Math.min(convergeTimeoutSeconds, (available * (sizes[index] - before)) / Math.max(1, addedLeft)));
}

/** How long the rollout phase may wait: its cap, shrunk to what the run's deadline leaves after teardown. */
function rolloutLimit(now: number): number {
  if (deadlineAt === undefined) return rolloutTimeoutSeconds;
  return Math.round(Math.max(30, Math.min(rolloutTimeoutSeconds, (deadlineAt - now) / 1000 - TEARDOWN_SECONDS - 10)));
}

/** The controller's /metrics counters this benchmark reads. */
async function scrape(metricsUrl: string): Promise<{
  requests: Map<string, number>;
  writes: number;
  requestSeconds: number;
  responses: number;
  newConnections: number;
}> {
  const text = await (await fetch(metricsUrl)).text();
  const requests = new Map<string, number>();
  let writes = 0;
  let requestSeconds = 0;
  let responses = 0;
  let newConnections = 0;
  for (const line of text.split("\n")) {
    const opened = /^bench_api_new_connections_total (\S+)$/.exec(line);
    if (opened) newConnections = Number(opened[1]);
    const seconds = /^bench_api_request_seconds_total (\S+)$/.exec(line);
    if (seconds) requestSeconds = Number(seconds[1]);
    const count = /^bench_api_responses_total (\S+)$/.exec(line);
    if (count) responses = Number(count[1]);
    const request = /^bench_api_requests_total\{([^}]*)\} (\S+)$/.exec(line);
    if (request) {
      const labels = Object.fromEntries(
        [...request[1].matchAll(/(\w+)="([^"]*)"/g)].map((match) => [match[1], match[2]]),
      );
      requests.set(`${labels.verb} ${labels.resource}`, Number(request[2]));
    }
    const write = /^quorum_api_writes_total\{[^}]*\} (\S+)$/.exec(line);
    if (write) writes += Number(write[1]);
  }
  return { requests, writes, requestSeconds, responses, newConnections };
}

interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string };
  stageTimestamp: string;
}

/** Audit events of the controller's user appended to the log since byte `offset`. */
function auditEventsSince(path: string, offset: number): { events: AuditEvent[]; end: number } {
  if (!existsSync(path)) return { events: [], end: offset };
  const end = statSync(path).size;
  if (end <= offset) return { events: [], end };
  const buffer = Buffer.alloc(end - offset);
  const fd = openSync(path, "r");
  try {
    readSync(fd, buffer, 0, buffer.length, offset);
  } finally {
    closeSync(fd);
  }
  const events: AuditEvent[] = [];
  for (const line of buffer.toString("utf8").split("\n")) {
    if (!line.trim()) continue;
    const event = JSON.parse(line) as AuditEvent;
    if (event.stage === "ResponseComplete" && event.user.username === CONTROLLER_USER) events.push(event);
  }
  return { events, end };
}

interface LevelStart {
  process: ProcessSample;
  scrape: Awaited<ReturnType<typeof scrape>>;
}

class Bench {
  private controllerPid = 0;
  private metricsUrl = "";
  private controller: ManagedProcess | undefined;
  private auditLog = "";

  constructor(
    readonly apiServer: ApiServer,
    readonly driver: Driver,
  ) {}

  async startController(auditLog: string): Promise<string[]> {
    this.auditLog = auditLog;
    const port = await freePort();
    const user = await this.apiServer.userKubeConfig(CONTROLLER_USER, ["system:masters"]);
    const flags = [
      "--leader-elect",
      "--leader-election-namespace",
      "default",
      "--etcd-poll-interval",
      pollInterval,
      "--etcd-idle-poll-interval",
      idlePollInterval,
      "--concurrency",
      concurrency,
      "--log-level",
      "info",
      "--log-format",
      "json",
      "--health-probe-bind-address",
      "0",
    ];
    this.controller = startProcess({
      name: "quorum controller (scale benchmark, simulated workload side)",
      command: process.execPath,
      // BENCH_SCALE_CPU_PROF=DIR writes a V8 CPU profile of the controller there when it stops (for looking into costs).
      args: [
        ...(process.env.BENCH_SCALE_CPU_PROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_SCALE_CPU_PROF] : []),
        compileController(),
        "--kubeconfig",
        user.kubeconfigPath,
        "--metrics-bind-address",
        `127.0.0.1:${port}`,
        "--metrics-secure=false",
        ...flags,
      ],
      env: { ...process.env, BENCH_SIM_LATENCY_MS: String(simulatedLatencyMs), ...controllerEnv },
      // BENCH_SCALE_CONTROLLER_LOG=FILE keeps the controller's log there (by default it goes to a temporary directory).
      ...(process.env.BENCH_SCALE_CONTROLLER_LOG ? { logFile: process.env.BENCH_SCALE_CONTROLLER_LOG } : {}),
    });
    this.controllerPid = this.controller.pid;
    this.metricsUrl = `http://127.0.0.1:${port}/metrics`;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      if (ready) break;
      if (!this.controller.isRunning() || Date.now() > deadline)
        throw new Error(`the benchmark's controller did not become ready:\n${this.controller.lastLogLines(30)}`);
      await sleep(250);
    }
    return flags;
  }

  async stop(): Promise<void> {
    await this.controller?.stop(10_000);
  }

  get controllerLog(): string {
    return this.controller?.logFile ?? "";
  }

  /** After the idle window, so writing it (seconds, and memory) does not show in the window's figures. */
  async heapSnapshot(dir: string, clusters: number): Promise<void> {
    const url = this.metricsUrl.replace("/metrics", `/bench/heap-snapshot?dir=${encodeURIComponent(dir)}`);
    const answer = (await (await fetch(url)).json()) as {
      file: string;
      before: NodeJS.MemoryUsage;
      after: NodeJS.MemoryUsage;
    };
    const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;
    const { before, after } = answer;
    progress(
      NAME,
      `level ${clusters}: heap snapshot ${answer.file}; heap used ${mb(before.heapUsed)} → ${mb(after.heapUsed)} MB after a full GC (total ${mb(after.heapTotal)}), external ${mb(after.external)}, arrayBuffers ${mb(after.arrayBuffers)}, RSS ${mb(before.rss)} → ${mb(after.rss)} MB`,
    );
  }

  async setLogLevel(level: "debug" | "info"): Promise<void> {
    const response = await fetch(this.metricsUrl.replace("/metrics", `/bench/log-level?level=${level}`));
    if (!response.ok)
      throw new Error(`the benchmark's controller refused log level ${level}: ${await response.text()}`);
  }

  async requestCounts(): Promise<ReadonlyMap<string, number>> {
    return (await scrape(this.metricsUrl)).requests;
  }

  /** CPU samples of every process on the machine's cores: the controller, the API server, its etcd, this driver. */
  sampleCpu(): Record<string, ProcessSample> {
    const etcdPids = this.apiServer.etcd.members.flatMap((member) => {
      const pid = member.pid();
      return pid === undefined ? [] : [pid];
    });
    return {
      controller: sampleProcess(this.controllerPid),
      apiServer: sampleProcess(this.apiServer.process.pid),
      ...Object.fromEntries(
        etcdPids.map((pid, i) => [etcdPids.length === 1 ? "etcd" : `etcd${i}`, sampleProcess(pid)]),
      ),
      driver: sampleProcess(process.pid),
    };
  }

  checkRunning(): void {
    if (!this.controller?.isRunning())
      throw new Error(`the benchmark's controller exited:\n${this.controller?.lastLogLines(30)}`);
  }

  /** Waits until every cluster created so far converged, sampling the controller meanwhile. */
  /** The controller's counters before a level's first create: its convergence costs are counted from there. */
  async startLevel(): Promise<LevelStart> {
    return { process: sampleProcess(this.controllerPid), scrape: await scrape(this.metricsUrl) };
  }

  async waitConverged(
    levelStart: number,
    start: LevelStart,
    keys: string[],
    limitSeconds: number,
  ): Promise<LevelResult["convergence"]> {
    const before = start.process;
    const scrapeBefore = start.scrape;
    const writesBefore = scrapeBefore.writes;
    let peak = before.rssMB;
    const deadline = levelStart + limitSeconds * 1000;
    let lastReport = 0;
    while (Date.now() < deadline) {
      const converged = keys.filter((key) => this.driver.convergedAt.has(key)).length;
      peak = Math.max(peak, sampleProcess(this.controllerPid).rssMB);
      if (converged === keys.length) break;
      if (Date.now() - lastReport > 15_000) {
        progress(NAME, `${converged}/${keys.length} converged after ${Math.round((Date.now() - levelStart) / 1000)} s`);
        lastReport = Date.now();
      }
      if (!this.controller?.isRunning())
        throw new Error(`the benchmark's controller exited:\n${this.controller?.lastLogLines(30)}`);
      await sleep(500);
    }
    const waiting = keys.find((key) => !this.driver.convergedAt.has(key));
    if (waiting) {
      const status = this.driver.lastSeen.get(waiting)?.status;
      progress(
        NAME,
        `not converged, e.g. ${waiting}: replicas ${status?.replicas}, ready ${status?.readyReplicas}, up to date ${status?.upToDateReplicas}, etcd ${status?.etcd?.summary}; next action: ${JSON.stringify(status?.nextAction)}`,
      );
    }
    const after = sampleProcess(this.controllerPid);
    const times = keys
      .filter((key) => this.driver.convergedAt.has(key))
      .map((key) => ((this.driver.convergedAt.get(key) as number) - (this.driver.createdAt.get(key) as number)) / 1000);
    const last = Math.max(...keys.map((key) => this.driver.convergedAt.get(key) ?? Number.NaN));
    const allConverged = times.length === keys.length;
    const scrapeAfter = await scrape(this.metricsUrl);
    const perCluster = (count: number) => Math.round((count / Math.max(1, keys.length)) * 10) / 10;
    const requestsByResource: Record<string, number> = {};
    let requestsTotal = 0;
    for (const [key, count] of scrapeAfter.requests) {
      const delta = count - (scrapeBefore.requests.get(key) ?? 0);
      if (delta === 0) continue;
      requestsByResource[key] = delta;
      requestsTotal += delta;
    }
    return {
      allConvergedSeconds: allConverged ? Math.round((last - levelStart) / 100) / 10 : null,
      converged: times.length,
      perClusterSeconds: rounded(summarize(times), 2),
      limitSeconds: Math.round(limitSeconds),
      controllerCpuSeconds: Math.round((after.cpuSeconds - before.cpuSeconds) * 10) / 10,
      controllerPeakRssMB: peak,
      controllerWrites: scrapeAfter.writes - writesBefore,
      requestsPerAddedCluster: {
        total: perCluster(requestsTotal),
        byResource: mapValues(requestsByResource, perCluster),
      },
      newConnections: scrapeAfter.newConnections - scrapeBefore.newConnections,
    };
  }

  /** Waits until the controller stops writing (its last status patches after the last action), for a while. */
  async settle(): Promise<void> {
    const deadline = Date.now() + SETTLE_MAX_SECONDS * 1000;
    let last = (await scrape(this.metricsUrl)).writes;
    let quietSince = Date.now();
    while (Date.now() < deadline && Date.now() - quietSince < 10_000) {
      await sleep(2_500);
      const writes = (await scrape(this.metricsUrl)).writes;
      if (writes !== last) {
        last = writes;
        quietSince = Date.now();
      }
    }
  }

  async idleWindow(seconds: number, clusters: number): Promise<IdleWindow> {
    await fetch(this.metricsUrl.replace("/metrics", "/bench/reconciles"));
    const auditStart = existsSync(this.auditLog) ? statSync(this.auditLog).size : 0;
    const scrapeBefore = await scrape(this.metricsUrl);
    const requestsBefore = scrapeBefore.requests;
    const controllerSamples: ProcessSample[] = [sampleProcess(this.controllerPid)];
    const apiServerBefore = sampleProcess(this.apiServer.process.pid);
    const end = Date.now() + seconds * 1000;
    while (Date.now() < end) {
      await sleep(Math.min(5_000, Math.max(0, end - Date.now())));
      controllerSamples.push(sampleProcess(this.controllerPid));
    }
    const apiServerAfter = sampleProcess(this.apiServer.process.pid);
    const scrapeAfter = await scrape(this.metricsUrl);
    const requestsAfter = scrapeAfter.requests;
    const answeredInWindow = scrapeAfter.responses - scrapeBefore.responses;
    const meanRequestMs =
      answeredInWindow > 0
        ? Math.round(((scrapeAfter.requestSeconds - scrapeBefore.requestSeconds) / answeredInWindow) * 10_000) / 10
        : null;
    const reconciles = (await (await fetch(this.metricsUrl.replace("/metrics", "/bench/reconciles"))).json()) as {
      samples: { ms: number; ok: boolean }[];
      eventLoopDelayMs: IdleWindow["eventLoopDelayMs"];
      queueDepth: Record<string, number>;
      memory: NodeJS.MemoryUsage;
    };
    const audit = auditEventsSince(this.auditLog, auditStart);
    const first = controllerSamples[0];
    const last = controllerSamples[controllerSamples.length - 1];
    const windowSeconds = (last.at - first.at) / 1000;
    const perMinute = (count: number) => Math.round((count / windowSeconds) * 60 * 10) / 10;

    const byVerb: Record<string, number> = {};
    const byResource: Record<string, number> = {};
    let totalRequests = 0;
    for (const [key, after] of requestsAfter) {
      const delta = after - (requestsBefore.get(key) ?? 0);
      if (delta === 0) continue;
      const [verb, resource] = key.split(" ");
      byVerb[verb] = (byVerb[verb] ?? 0) + delta;
      byResource[`${verb} ${resource}`] = delta;
      totalRequests += delta;
    }
    const writesByResource: Record<string, number> = {};
    for (const event of audit.events) {
      const resource = `${event.verb} ${event.objectRef?.resource ?? "?"}${event.objectRef?.subresource ? `/${event.objectRef.subresource}` : ""}`;
      writesByResource[resource] = (writesByResource[resource] ?? 0) + 1;
    }
    const leaseWrites = audit.events.filter((event) => event.objectRef?.resource === "leases").length;
    const rss = controllerSamples.map((sample) => sample.rssMB);
    return {
      windowSeconds: Math.round(windowSeconds),
      controller: {
        milliCores: milliCores(first, last),
        rssMB: {
          mean: Math.round((rss.reduce((a, b) => a + b, 0) / rss.length) * 10) / 10,
          max: Math.max(...rss),
          end: last.rssMB,
        },
        heapMB: {
          used: toMB(reconciles.memory.heapUsed),
          total: toMB(reconciles.memory.heapTotal),
          external: toMB(reconciles.memory.external),
        },
      },
      apiServer: { milliCores: milliCores(apiServerBefore, apiServerAfter), rssMB: apiServerAfter.rssMB },
      requestsPerMinute: {
        total: perMinute(totalRequests),
        byVerb: mapValues(byVerb, perMinute),
        byResource: mapValues(byResource, perMinute),
        meanResponseMs: meanRequestMs,
      },
      writesPerMinute: {
        total: perMinute(audit.events.length),
        excludingLease: perMinute(audit.events.length - leaseWrites),
        byResource: mapValues(writesByResource, perMinute),
      },
      reconciles: {
        perMinute: perMinute(reconciles.samples.length),
        durationMs: rounded(summarize(reconciles.samples.map((sample) => sample.ms))),
        errors: reconciles.samples.filter((sample) => !sample.ok).length,
      },
      eventLoopDelayMs: reconciles.eventLoopDelayMs,
      queueDepthAtEnd: Object.values(reconciles.queueDepth).reduce((sum, depth) => sum + depth, 0),
      // Only a window of at least one idle poll can say how often each settled cluster was looked at: a shorter one
      // (the smaller levels', kept short for the budget) sees just the polls that happen to fall due in it.
      effectivePollSeconds:
        clusters > 0 && reconciles.samples.length > 0 && windowSeconds >= idlePollSeconds
          ? Math.round((clusters * windowSeconds * 10) / reconciles.samples.length) / 10
          : null,
    };
  }
}

function toMB(bytes: number): number {
  return Math.round((bytes / 2 ** 20) * 10) / 10;
}

function mapValues(record: Record<string, number>, fn: (value: number) => number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(record)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]) => [key, fn(value)]),
  );
}

async function main(): Promise<void> {
  const parameters = {
    sizes,
    idleSeconds,
    baselineIdleSeconds,
    controllerEnv,
    replicas,
    perNamespace,
    createParallelism,
    pollInterval,
    concurrency,
    simulatedLatencyMs,
    convergeTimeoutSeconds,
    rolloutCount,
    rolloutTimeoutSeconds,
  };
  const result = startResult(
    NAME,
    "QuorumControlPlanes × 3 Machines on a real kube-apiserver, the real controller as a process; the workload side (etcd, Nodes) is an in-process SIMULATION",
    parameters,
  );
  const auditDir = makeTempDir("bench-audit");
  const policy = join(auditDir, "policy.yaml");
  // Only the controller's writes: "0 writes per minute at idle" is judged by the API server, not by the controller.
  writeFileSync(
    policy,
    [
      "apiVersion: audit.k8s.io/v1",
      "kind: Policy",
      "omitStages: [RequestReceived]",
      "rules:",
      "- level: Metadata",
      `  users: ["${CONTROLLER_USER}"]`,
      "  verbs: [create, update, patch, delete, deletecollection]",
      "- level: None",
      "",
    ].join("\n"),
  );
  const auditLog = join(auditDir, "audit.log");
  progress(NAME, `starting kube-apiserver (sizes ${sizes.join(" → ")}, idle windows ${idleSeconds.join("/")} s)`);
  const apiServer = await startApiServer({
    extraArgs: [`--audit-policy-file=${policy}`, `--audit-log-path=${auditLog}`, "--audit-log-mode=blocking"],
  });
  const driver = new Driver(apiServer, {
    parallelism: createParallelism,
    perNamespace,
    replicas,
    ...(encryptionAlgorithm ? { encryptionAlgorithm } : {}),
  });
  const bench = new Bench(apiServer, driver);
  const levels: LevelResult[] = [];
  const notes: string[] = [];
  try {
    await installCRDs(apiServer.kubeConfig, { extra: testKindCRDs() });
    await driver.start();
    const controllerFlags = await bench.startController(auditLog);
    progress(NAME, `controller ready; baseline idle window (0 clusters, ${baselineIdleSeconds} s)`);
    const baseline = await bench.idleWindow(baselineIdleSeconds, 0);
    let created = 0;
    for (const [index, size] of sizes.entries()) {
      const windowSeconds = idleOf(index);
      const levelStart = Date.now();
      const limitSeconds = convergeLimit(index, levelStart);
      progress(NAME, `level ${size}: creating ${size - created} clusters`);
      const start = await bench.startLevel();
      await driver.createClusters(created, size);
      const keys = [...driver.createdAt.keys()].slice(created, size);
      progress(
        NAME,
        `level ${size}: created in ${Math.round((Date.now() - levelStart) / 1000)} s; waiting for convergence`,
      );
      const convergence = await bench.waitConverged(levelStart, start, keys, limitSeconds);
      progress(
        NAME,
        `level ${size}: ${convergence.converged}/${keys.length} converged, all in ${convergence.allConvergedSeconds ?? "(not all)"} s; settling, then ${windowSeconds} s idle`,
      );
      progress(
        NAME,
        `level ${size}: requests per added cluster ${convergence.requestsPerAddedCluster.total} ${JSON.stringify(convergence.requestsPerAddedCluster.byResource)}`,
      );
      await bench.settle();
      const idle = await bench.idleWindow(windowSeconds, size);
      progress(
        NAME,
        `level ${size}: idle ${idle.controller.milliCores} mCPU, RSS ${idle.controller.rssMB.end} MB, ${idle.requestsPerMinute.total} requests/min, ${idle.writesPerMinute.excludingLease} writes/min (+ Lease), reconcile p50 ${idle.reconciles.durationMs.p50} ms`,
      );
      if (heapSnapshotDir) await bench.heapSnapshot(heapSnapshotDir, size);
      levels.push({
        clusters: size,
        added: size - created,
        convergence,
        idle,
        convergedAtWindowEnd: keys.filter((key) => driver.convergedAt.has(key)).length,
      });
      created = size;
    }
    let rollouts: RolloutResults | undefined;
    const rolled = Math.min(rolloutCount, driver.convergedAt.size);
    if (rolled > 0) {
      const limitSeconds = rolloutLimit(Date.now());
      progress(
        NAME,
        `rollouts: ${rolled} clusters ${INITIAL_VERSION} → ${ROLLOUT_VERSION} at once (limit ${limitSeconds} s)`,
      );
      rollouts = await runRolloutPhase(driver, {
        count: rolled,
        fromVersion: INITIAL_VERSION,
        toVersion: ROLLOUT_VERSION,
        limitSeconds,
        logFile: bench.controllerLog,
        setLogLevel: (level) => bench.setLogLevel(level),
        progress: (message) => progress(NAME, message),
        checkController: () => bench.checkRunning(),
        requestCounts: () => bench.requestCounts(),
        sampleCpu: () => bench.sampleCpu(),
        // BENCH_SCALE_APISERVER_PROF=FILE writes a CPU profile of the API server over the phase's first 30 s there.
        ...(apiServerProfile
          ? {
              alongside: async () => {
                await profileApiServer(apiServer.kubeConfig, 30, apiServerProfile);
                progress(NAME, `rollouts: wrote the API server's CPU profile (30 s) to ${apiServerProfile}`);
              },
            }
          : {}),
      });
      const all = rollouts.steps.all;
      progress(
        NAME,
        `rollouts: ${rollouts.finished}/${rolled} done in ${rollouts.phaseSeconds ?? "(not all)"} s; controller-added per step p50 ${all.p50} ms, p99 ${all.p99} ms, max ${all.max} ms (n=${all.n}); per cluster ${rollouts.fairness.rolloutSeconds.p50}/${rollouts.fairness.rolloutSeconds.max} s (p50/max)`,
      );
      progress(NAME, `rollouts: requests per step ${JSON.stringify(rollouts.requests?.perStep)}`);
      progress(NAME, `rollouts: mCPU over the phase ${JSON.stringify(rollouts.cpuMilliCores)}`);
      notes.push(...rolloutNotes(rollouts, { parallelism: createParallelism, simulatedLatencyMs }));
    }
    const top = levels.find((level) => level.clusters === 2000);
    const burst = levels.find((level) => level.added === 700);
    const results: ScaleResults = {
      simulation: `SIMULATED workload side: etcd members and Nodes of every cluster are in-process objects in the controller process (bench/scale/simulation.ts), ${simulatedLatencyMs} ms per simulated call; the management side (kube-apiserver, Secrets, certificates, Machines) is real`,
      controllerFlags,
      baseline,
      levels,
      ...(rollouts ? { rollouts } : {}),
      targets: {
        clusters: 2000,
        rssMB: 300,
        milliCores: 100,
        writesPerMinute: 0,
        burst: { added: 700, firstReadySeconds: 30, p50Seconds: 60 },
      },
      verdict: {
        rssMet: top ? top.idle.controller.rssMB.max <= 300 : null,
        cpuMet: top ? top.idle.controller.milliCores <= 100 : null,
        writesMet: top ? top.idle.writesPerMinute.excludingLease === 0 : null,
        burstFirstMet: burst ? burst.convergence.perClusterSeconds.min <= 30 : null,
        burstP50Met: burst ? burst.convergence.perClusterSeconds.p50 <= 60 : null,
      },
    };
    // Idle windows measure settled clusters, which are polled at the idle interval.
    for (const level of levels) {
      const effective = level.idle.effectivePollSeconds;
      if (effective === null || effective <= 1.5 * idlePollSeconds) continue;
      notes.push(
        `At ${level.clusters} clusters the controller did not keep up with its own polling: each settled cluster was looked at every ${effective} s instead of every ${idlePollInterval} (queue depth ${level.idle.queueDepthAtEnd} at the window's end, reconcile p50 ${Math.round(level.idle.reconciles.durationMs.p50)} ms with --concurrency ${concurrency}, ${Math.round((level.idle.reconciles.perMinute / 60) * 10) / 10} reconciles/s, each of about ${Math.round(level.idle.requestsPerMinute.total / Math.max(1, level.idle.reconciles.perMinute))} sequential API requests answered in ${level.idle.requestsPerMinute.meanResponseMs} ms on average). Its CPU there is bounded by that throughput on this machine, so it understates what polling every cluster every ${idlePollInterval} would cost.`,
      );
    }
    if (encryptionAlgorithm)
      notes.push(
        `Every bootstrap config template asks for encryptionAlgorithm ${encryptionAlgorithm} (BENCH_SCALE_ENCRYPTION_ALGORITHM), so each new cluster's keys are of that type: not the default run.`,
      );
    if (driver.errors.length > 0)
      notes.push(`driver errors (first 5 of ${driver.errors.length}): ${driver.errors.slice(0, 5).join(" | ")}`);
    notes.push(
      "Levels are cumulative on one API server and one controller process (a growing management cluster); the idle window is 2 minutes at 2,000 clusters, and those of the smaller levels are shortened to fit `make bench` in 30 minutes.",
    );
    notes.push(
      "Lease writes are the leader election's renewals (one every 2 s, whatever the number of clusters); writesPerMinute.excludingLease is what the 0-writes target is judged on.",
    );
    notes.push(
      "The controller runs compiled to JavaScript (tsc into .cache/bench-scale), as the container runs dist/main.js; the 0-cluster baseline is its fixed cost (Node, client-node, etcd3/gRPC, winston).",
    );
    const path = result.finish(results, notes);
    progress(NAME, `wrote ${path}`);
  } finally {
    await driver.stop().catch(() => undefined);
    await bench.stop().catch(() => undefined);
    await apiServer.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench ${NAME}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
