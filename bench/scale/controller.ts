// The scale benchmark's controller process: the same wiring as src/main.ts (flags, ManagementClient, Manager with
// leader election, informers, queue, quorumController, reconcile, the real planner) except that the workload side
// of every cluster — etcd and Nodes — is the in-process SIMULATION of bench/scale/simulation.ts. It also counts
// every HTTP request the process sends (so, every request to the management API server: nothing else is
// reached over HTTP here) and times every reconcile, and serves both next to the controller's own metrics; its log
// level can be changed while it runs (/bench/log-level?level=debug).
//
// Usage: node --import tsx bench/scale/controller.ts [the flags of src/main.ts] (BENCH_SIM_LATENCY_MS=2)
import dc from "node:diagnostics_channel";
import type { ClientRequest } from "node:http";
import { createServer } from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { writeHeapSnapshot } from "node:v8";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { Counter } from "prom-client";
import winston from "winston";
import { ManagementClient } from "../../src/adapters/capi/management.ts";
import { CachedSecretStore } from "../../src/adapters/certs/cached-secret-store.ts";
import { coreV1SecretStore } from "../../src/adapters/certs/secret-store.ts";
import { Manager, type Controller } from "../../src/adapters/kube/manager.ts";
import { reuseConnections } from "../../src/adapters/kube/keep-alive.ts";
import { KubeRest } from "../../src/adapters/kube/rest.ts";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import { plan } from "../../src/core/plan.ts";
import { quorumController } from "../../src/controller/controller.ts";
import { crashInjectorFromEnv } from "../../src/controller/crash.ts";
import { createMetrics } from "../../src/controller/metrics.ts";
import { parseBindAddress, parseFlags } from "../../src/flags.ts";
import { SimulatedWorkloadAccess, SimulatedWorkloads } from "./simulation.ts";

const flags = parseFlags(process.argv.slice(2));
const latencyMs = Number(process.env.BENCH_SIM_LATENCY_MS ?? 2);

const log = winston.createLogger({
  level: flags.logLevel,
  format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
  transports: [new winston.transports.Console({ stderrLevels: ["error", "warn", "info", "debug"] })],
});
const metrics = createMetrics();

// Every request the process sends, by verb as the API server's audit log names it.
const requests = new Counter({
  name: "bench_api_requests_total",
  help: "HTTP requests this controller process sent (all go to the management API server)",
  labelNames: ["verb", "resource"],
  registers: [metrics.registry],
});
// Time from sending a request to its response, as the controller waits for it (API server + CPU contention).
const requestSeconds = new Counter({
  name: "bench_api_request_seconds_total",
  help: "Summed time the controller's API requests took to be answered",
  registers: [metrics.registry],
});
const answered = new Counter({
  name: "bench_api_responses_total",
  help: "API responses received",
  registers: [metrics.registry],
});
// Requests that opened a connection (TCP + TLS handshake) instead of reusing a kept-alive one.
const newConnections = new Counter({
  name: "bench_api_new_connections_total",
  help: "API requests this controller process sent on a new connection (not a reused keep-alive one)",
  registers: [metrics.registry],
});
const sentAt = new WeakMap<ClientRequest, number>();
dc.subscribe("http.client.request.start", (message) => {
  const request = (message as { request: ClientRequest }).request;
  sentAt.set(request, performance.now());
  requests.inc({ verb: verbOf(request.method, request.path), resource: resourceOf(request.path) });
});
dc.subscribe("http.client.response.finish", (message) => {
  const request = (message as { request: ClientRequest }).request;
  if (!request.reusedSocket) newConnections.inc();
  const started = sentAt.get(request);
  if (started === undefined || /[?&]watch=(true|1)/.test(request.path)) return;
  requestSeconds.inc((performance.now() - started) / 1000);
  answered.inc();
});

/** The resource plural of an API path (/api/v1/namespaces/ns/secrets/x → secrets), subresource appended (machines/status). */
function resourceOf(path: string): string {
  const segments = path.split("?")[0].split("/").filter(Boolean);
  let rest = segments[0] === "api" ? segments.slice(2) : segments.slice(3);
  if (rest[0] === "namespaces" && rest.length > 2) rest = rest.slice(2);
  return rest.length >= 3 ? `${rest[0]}/${rest[2]}` : (rest[0] ?? "(root)");
}

function verbOf(method: string, path: string): string {
  if (method !== "GET")
    return { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" }[method] ?? method.toLowerCase();
  if (/[?&]watch=(true|1)/.test(path)) return "watch";
  // A collection path ends in a plural resource: an odd number of segments after /api/v1 or /apis/g/v.
  const segments = path.split("?")[0].split("/").filter(Boolean);
  const afterVersion = segments[0] === "api" ? segments.slice(2) : segments.slice(3);
  return afterVersion.length % 2 === 1 ? "list" : "get";
}

// Reconcile durations since the last reset, for exact percentiles (the histogram's buckets are too coarse).
let reconcileSamples: { ms: number; ok: boolean }[] = [];
// How long timers and I/O callbacks waited for the event loop: synchronous work (key generation, big JSON) shows here.
const eventLoopDelay = monitorEventLoopDelay({ resolution: 10 });
eventLoopDelay.enable();

const kubeConfig = new KubeConfig();
if (flags.kubeconfig) kubeConfig.loadFromFile(flags.kubeconfig);
else kubeConfig.loadFromDefault();
reuseConnections(kubeConfig);
const world = new SimulatedWorkloads(latencyMs);
const rest = new KubeRest(kubeConfig);
const secrets = new CachedSecretStore({
  inner: coreV1SecretStore(kubeConfig.makeApiClient(CoreV1Api)),
  rest,
  ...(flags.namespace ? { namespace: flags.namespace } : {}),
  informer: { logger: log },
});
secrets.start();
const real = new ClusterWorkloadAccess({
  secrets,
  etcdCallDeadlineMs: flags.etcdCallTimeoutMs,
  etcdClientFactory: world.etcdClientFactory,
});
const inner = quorumController({
  ...(flags.namespace ? { namespace: flags.namespace } : {}),
  ...(flags.watchFilter ? { watchFilter: flags.watchFilter } : {}),
  deps: {
    management: new ManagementClient(kubeConfig),
    workload: new SimulatedWorkloadAccess(real, world),
    planner: plan,
    clock: Date.now,
    log,
    crash: crashInjectorFromEnv(undefined),
    metrics,
    etcdPollIntervalMs: flags.etcdPollIntervalMs,
    etcdIdlePollIntervalMs: flags.etcdIdlePollIntervalMs,
  },
});
const timed: Controller = {
  ...inner,
  async reconcile(key, context) {
    const started = performance.now();
    let ok = false;
    try {
      const result = await inner.reconcile(key, context);
      ok = true;
      return result;
    } finally {
      const ms = performance.now() - started;
      reconcileSamples.push({ ms, ok });
      metrics.reconcileDuration.observe({ result: ok ? "success" : "error" }, ms / 1000);
    }
  },
};
const manager = new Manager({
  controllers: [timed],
  rest,
  ...(flags.leaderElect
    ? {
        leaderElection: {
          namespace: flags.leaderElectionNamespace,
          name: flags.leaderElectionId,
          identity: "quorum-bench",
        },
      }
    : {}),
  queue: { concurrency: flags.concurrency },
  logger: log,
  onEvent: (event) => {
    if (event.type === "starting-workers") metrics.leader.set(1);
  },
});

const address = parseBindAddress("--metrics-bind-address", flags.metricsBindAddress);
if (!address)
  throw new Error("bench controller: --metrics-bind-address is needed (the benchmark reads its counters there)");
const server = createServer((request, response) => {
  const path = (request.url ?? "/").split("?")[0];
  if (path === "/metrics") {
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { "Content-Type": metrics.registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500).end(String(error)),
    );
    return;
  }
  if (path === "/bench/reconciles") {
    // Returns the samples since the last call and starts a new window.
    const samples = reconcileSamples;
    reconcileSamples = [];
    const toMs = (ns: number) => Math.round(ns / 1e4) / 100;
    const loop = {
      p50: toMs(eventLoopDelay.percentile(50)),
      p99: toMs(eventLoopDelay.percentile(99)),
      max: toMs(eventLoopDelay.max),
    };
    eventLoopDelay.reset();
    response.writeHead(200, { "Content-Type": "application/json" }).end(
      JSON.stringify({
        samples,
        eventLoopDelayMs: loop,
        memory: process.memoryUsage(),
        queueDepth: manager.queueDepths(),
        simulatedCalls: Object.fromEntries(world.calls),
      }),
    );
    return;
  }
  if (path === "/bench/log-level") {
    // The rollout phase reads the planner's Wait reasons (logged at debug) while it runs, and only then: at 1,000
    // idle clusters they would be a hundred lines a second in the idle windows' CPU.
    const level = new URL(request.url ?? "/", "http://localhost").searchParams.get("level") ?? "";
    if (!["debug", "info", "warn", "error"].includes(level)) {
      response.writeHead(400).end(`level must be debug, info, warn or error (got "${level}")`);
      return;
    }
    log.level = level;
    response.writeHead(200).end(level);
    return;
  }
  if (path === "/bench/heap-snapshot") {
    // Writes a V8 heap snapshot (which starts with a full GC) into ?dir=, and answers the memory use before and
    // after: heapUsed after it is the live heap, without the garbage an idle process has not collected yet.
    const dir = new URL(request.url ?? "/", "http://localhost").searchParams.get("dir") ?? "";
    const before = process.memoryUsage();
    const file = writeHeapSnapshot(`${dir}/controller-${Date.now()}.heapsnapshot`);
    response
      .writeHead(200, { "Content-Type": "application/json" })
      .end(JSON.stringify({ file, before, after: process.memoryUsage() }));
    return;
  }
  if (path === "/readyz") {
    response.writeHead(manager.isReady() ? 200 : 503).end(manager.isReady() ? "ok" : "not ready");
    return;
  }
  response.writeHead(404).end("not found");
});
server.listen(address.port, address.host);
manager.stopOnSignals(["SIGTERM", "SIGINT"], (code) => {
  server.close();
  process.exit(code);
});
log.info(
  "quorum controller starting with a SIMULATED workload side (etcd and Nodes in-process) for the scale benchmark",
  { simulatedLatencyMs: latencyMs, concurrency: flags.concurrency, etcdPollIntervalMs: flags.etcdPollIntervalMs },
);
manager.start();
