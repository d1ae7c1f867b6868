// Turns bench/results/*.json into the SVG charts (bench/results/*.svg) and the figures table of bench/README.md
// (between the bench:table markers; the rest of the README is written by hand). Runs at the end of `make bench`;
// also on its own: node --import tsx bench/report.ts
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { histograms, lineCharts, type Series } from "./lib/svg.ts";
import type { EtcdCostResults } from "./etcd-cost/run.ts";
import type { RolloutResults } from "./scale/rollouts.ts";
import { benchDir, readResult, resultsDir, type ResultEnvelope } from "./lib/results.ts";
import type { Summary } from "./lib/stats.ts";

// KCP's fixed requeues and idle cost, the anchor figures of issue 7 (see /work/shared/FACTS.md).
const KCP = {
  requeueAfterFailedPreflightS: 15,
  requeueWhileNotReadyS: 20,
  requeueWhileDeletingS: 30,
  milliCoresPerIdleCluster: 5,
};

interface HealthSeries {
  roundMs: Summary;
  ratioToDeadline: { p50: number; p95: number; max: number };
  correctRounds: number;
  rounds: number;
  samplesMs: number[];
}
type HealthScenario = "healthy" | "one-killed" | "one-paused";
interface Health {
  deadlineMs: number;
  /** spec.etcd.access: Direct. */
  scenarios: Record<HealthScenario, { freshClient: HealthSeries; reusedClient: HealthSeries }>;
  /** spec.etcd.access: APIServerProxy (absent from results before issue 18). */
  apiServerProxy?: { scenarios: Record<HealthScenario, { reusedClient: HealthSeries }> };
}
interface IdleWindow {
  windowSeconds: number;
  controller: { milliCores: number; rssMB: { mean: number; max: number; end: number } };
  apiServer: { milliCores: number; rssMB: number };
  requestsPerMinute: { total: number };
  writesPerMinute: { total: number; excludingLease: number };
  reconciles: { perMinute: number; durationMs: Summary; errors: number };
  eventLoopDelayMs?: { p50: number; p99: number; max: number };
  effectivePollSeconds?: number | null;
}
interface Scale {
  baseline: IdleWindow;
  levels: {
    clusters: number;
    added: number;
    convergence: {
      allConvergedSeconds: number | null;
      converged: number;
      perClusterSeconds: Summary;
      limitSeconds?: number;
    };
    idle: IdleWindow;
    convergedAtWindowEnd?: number;
  }[];
  /** Absent from results before the rollout phase (issue 19). */
  rollouts?: RolloutResults;
}
interface Steps {
  stepLatencyMs: Record<string, Summary & { retries: number }>;
  stepDoneMs: Record<string, Summary>;
  allStepsMs: Summary;
  samples: { kind: string; latencyMs: number }[];
  rollouts: {
    wallSeconds: number;
    intrinsicSeconds: number;
    ratio: number;
    overheadSeconds: number;
    refusedCallsSeconds?: number;
    ratioWithoutRefusals?: number;
  }[];
  rolloutRatio: Summary;
  unmatched: unknown[];
  detection?: { samples: number; detectedMs: Summary; idlePollSeconds: number };
  hangDetection?: { samples: number; detectedMs: Summary; idlePollSeconds: number };
}

const ms = (value: number | null | undefined) =>
  value === null || value === undefined || Number.isNaN(value)
    ? "–"
    : value >= 10_000
      ? `${(value / 1000).toFixed(1)} s`
      : `${Math.round(value)} ms`;
const mark = (met: boolean) => (met ? "met" : "**missed**");

function healthRows(result: ResultEnvelope<Health>): string[] {
  const { deadlineMs, scenarios, apiServerProxy } = result.results;
  const rows: string[] = [];
  const healthy = scenarios.healthy;
  const proxy = apiServerProxy?.scenarios;
  rows.push(
    `| Health round, 5 members all healthy (the client kept for the cluster, as a reconcile does), Direct | p50 ${ms(healthy.reusedClient.roundMs.p50)}, p95 ${ms(healthy.reusedClient.roundMs.p95)}, max ${ms(healthy.reusedClient.roundMs.max)} | < 50 ms: ${mark(healthy.reusedClient.roundMs.p95 < 50)} | etcd dial timeout 10 s, call timeout 15 s |`,
  );
  rows.push(
    `| … the same with a fresh client per round (TLS handshakes each round; for comparison) | p50 ${ms(healthy.freshClient.roundMs.p50)}, p95 ${ms(healthy.freshClient.roundMs.p95)} | | |`,
  );
  if (proxy) rows.push(proxyHealthyRow(proxy.healthy.reusedClient));
  for (const [name, label] of [
    ["one-killed", "one member killed (SIGKILL)"],
    ["one-paused", "one member paused (SIGSTOP)"],
  ] as const) {
    rows.push(
      faultRow(
        `Health round, ${label}, per-call deadline ${deadlineMs / 1000} s, Direct`,
        scenarios[name].reusedClient,
      ),
    );
    if (proxy) rows.push(faultRow("… the same through APIServerProxy", proxy[name].reusedClient));
  }
  return rows;
}

function proxyHealthyRow(series: HealthSeries): string {
  return `| … the same through APIServerProxy (kept client; pods/portforward via a real kube-apiserver and kubelet) | p50 ${ms(series.roundMs.p50)}, p95 ${ms(series.roundMs.p95)}, max ${ms(series.roundMs.max)} | < 50 ms: ${mark(series.roundMs.p95 < 50)} | |`;
}

function faultRow(label: string, series: HealthSeries): string {
  return `| ${label} | p50 ${ms(series.roundMs.p50)}, max ${ms(series.roundMs.max)} = **${series.ratioToDeadline.max}×** deadline; ${series.correctRounds}/${series.rounds} rounds named exactly the faulty member | ≤ 1.2×: ${mark(series.ratioToDeadline.max <= 1.2)} | |`;
}

function stepRows(result: ResultEnvelope<Steps>): string[] {
  const steps = result.results;
  const rows: string[] = [];
  const all = steps.allStepsMs;
  const left =
    steps.unmatched.length > 0
      ? `; ${steps.unmatched.length} step(s) left out: an observer saw the precondition only after Quorum acted`
      : "";
  rows.push(
    `| Step latency, all steps (n=${all.n}${left}): precondition observable → Quorum's next call | p50 **${ms(all.p50)}**, p95 ${ms(all.p95)}, p99 **${ms(all.p99)}** | p50 ≤ 50 ms: ${mark(all.p50 <= 50)}; p99 ≤ 250 ms (issue 19): ${mark(all.p99 <= 250)} | fixed requeues: ${KCP.requeueAfterFailedPreflightS} s after a failed preflight, ${KCP.requeueWhileNotReadyS} s while not ready, ${KCP.requeueWhileDeletingS} s while a Machine is deleting |`,
  );
  for (const [kind, summary] of Object.entries(steps.stepLatencyMs)) {
    const done = steps.stepDoneMs[kind];
    const refused =
      summary.retries > 0
        ? `; to the accepted call p50 ${ms(done.p50)}, max ${ms(done.max)} (${summary.retries} refused calls)`
        : "";
    rows.push(
      `| … ${kind} (n=${summary.n}) | p50 ${ms(summary.p50)}, p95 ${ms(summary.p95)}, p99 ${ms(summary.p99)}${refused} | | |`,
    );
  }
  const ratio = steps.rolloutRatio;
  const walls = steps.rollouts.map((rollout) => rollout.wallSeconds);
  const intrinsic = steps.rollouts.map((rollout) => rollout.intrinsicSeconds);
  const refused = steps.rollouts.map((rollout) => rollout.refusedCallsSeconds ?? 0);
  const withoutRefusals = steps.rollouts
    .map((rollout) => rollout.ratioWithoutRefusals ?? Number.NaN)
    .sort((a, b) => a - b);
  const refusedText =
    Math.max(...refused) > 0
      ? `; ${Math.min(...refused)}–${Math.max(...refused)} s of each went to removals etcd refused, without which the ratio would be ${withoutRefusals[Math.floor((withoutRefusals.length - 1) / 2)]}×`
      : "";
  rows.push(
    `| 3-replica rolling upgrade (n=${steps.rollouts.length}): wall time / intrinsic time of the same operations | **${ratio.p50}×** (p50; range ${ratio.min}–${ratio.max}×); wall ${Math.min(...walls)}–${Math.max(...walls)} s vs intrinsic ${Math.min(...intrinsic)}–${Math.max(...intrinsic)} s${refusedText} | ≤ 1.05× (issue 19): ${mark(ratio.p50 <= 1.05)} | each Machine step waits for the next requeue (15–30 s) |`,
  );
  const detection = steps.detection;
  if (detection)
    rows.push(
      `| A member SIGKILLed in a settled cluster → status shows it unhealthy (n=${detection.samples}; killed 0–5 s after a poll; seen when its kept connection closes, settled clusters polled every ${detection.idlePollSeconds} s, the default) | p50 **${ms(detection.detectedMs.p50)}**, p95 ${ms(detection.detectedMs.p95)}, max ${ms(detection.detectedMs.max)} | within 5 s: ${mark(detection.detectedMs.max <= 5_000)} | |`,
    );
  const hang = steps.hangDetection;
  if (hang)
    rows.push(
      `| A member SIGSTOPped (hung, connection open) in a settled cluster → status shows it unhealthy (n=${hang.samples}; 0–5 s after a poll, so near the worst case) | p50 **${ms(hang.detectedMs.p50)}**, p95 ${ms(hang.detectedMs.p95)}, max ${ms(hang.detectedMs.max)} | within one idle poll: ${mark(hang.detectedMs.max <= hang.idlePollSeconds * 1000 + 2_000)} | |`,
    );
  return rows;
}

function scaleRows(result: ResultEnvelope<Scale>): string[] {
  const scale = result.results;
  const rows: string[] = [];
  const base = scale.baseline;
  rows.push(
    `| Idle controller, 0 clusters (fixed cost) | RSS ${base.controller.rssMB.end} MB, ${base.controller.milliCores} mCPU, ${base.requestsPerMinute.total} requests/min, ${base.writesPerMinute.excludingLease} writes/min + ${base.writesPerMinute.total - base.writesPerMinute.excludingLease} Lease renewals/min | | |`,
  );
  for (const level of scale.levels) {
    const idle = level.idle;
    const busy =
      level.convergedAtWindowEnd !== undefined && level.convergedAtWindowEnd < level.added
        ? `; **not idle: ${level.convergedAtWindowEnd}/${level.added} converged when the window ended**`
        : "";
    const converge =
      level.convergence.allConvergedSeconds !== null
        ? `all ${level.added} new converged in ${level.convergence.allConvergedSeconds} s (per cluster p50 ${level.convergence.perClusterSeconds.p50} s)`
        : `**${level.convergence.converged}/${level.added} new converged** within the ${level.convergence.limitSeconds ?? "?"} s this level could wait${level.convergence.converged > 0 ? ` (per cluster p50 ${level.convergence.perClusterSeconds.p50} s)` : ""}${busy}`;
    const target =
      level.clusters === 2000
        ? `≤ 300 MB: ${mark(idle.controller.rssMB.max <= 300)}; ≤ 100 mCPU: ${mark(idle.controller.milliCores <= 100)}; 0 writes: ${mark(idle.writesPerMinute.excludingLease === 0)}`
        : "";
    rows.push(
      `| ${level.clusters} clusters × 3 Machines (simulated workload side), ${busy ? "window" : "idle"} ${Math.round((idle.windowSeconds / 60) * 10) / 10} min | RSS **${idle.controller.rssMB.max} MB**, **${idle.controller.milliCores} mCPU** (API server ${idle.apiServer.milliCores} mCPU), ${idle.requestsPerMinute.total} requests/min, **${idle.writesPerMinute.excludingLease} writes/min** (+ Lease); reconcile p50 ${ms(idle.reconciles.durationMs.p50)}, p99 ${ms(idle.reconciles.durationMs.p99)}; each cluster looked at every ${idle.effectivePollSeconds ?? "–"} s; ${converge} | ${target} | ~${KCP.milliCoresPerIdleCluster * level.clusters} mCPU (${KCP.milliCoresPerIdleCluster * 10} mCPU per 10 idle clusters) |`,
    );
  }
  const burst = scale.levels.find((level) => level.added === 700);
  if (burst) {
    const times = burst.convergence.perClusterSeconds;
    rows.push(
      `| ${burst.added} clusters created at once (${burst.clusters - burst.added} already running): each from its QuorumControlPlane's create to 3 healthy voters | first ready **${times.min} s**, per cluster p50 **${times.p50} s**, p99 ${times.p99} s, all ${burst.convergence.allConvergedSeconds ?? "(not all)"} s | first ≤ 30 s: ${mark(times.min <= 30)}; p50 ≤ 60 s: ${mark(times.p50 <= 60)} (issue 19) | |`,
    );
  }
  const fit = idleFit([
    { clusters: 0, idle: scale.baseline },
    ...scale.levels.map((level) => ({ clusters: level.clusters, idle: level.idle })),
  ]);
  if (fit)
    rows.push(
      `| Idle cost as fixed + per cluster (least squares over the 0-cluster baseline and the ${scale.levels.length} levels) | RSS ${fit.rss.fixed} MB + **${fit.rss.perCluster} MB** per cluster; CPU ${fit.cpu.fixed} mCPU + **${fit.cpu.perCluster} mCPU** per cluster | | ~50 mCPU per 10 idle clusters |`,
    );
  if (scale.rollouts) rows.push(...rolloutRows(scale.rollouts));
  return rows;
}

/** A least-squares line through (clusters, idle RSS max) and (clusters, idle mCPU). */
function idleFit(points: { clusters: number; idle: Scale["baseline"] }[]) {
  if (points.length < 2) return undefined;
  const line = (values: number[]) => {
    const xs = points.map((point) => point.clusters);
    const meanX = xs.reduce((a, b) => a + b, 0) / xs.length;
    const meanY = values.reduce((a, b) => a + b, 0) / values.length;
    const sxx = xs.reduce((sum, x) => sum + (x - meanX) ** 2, 0);
    const slope = xs.reduce((sum, x, index) => sum + (x - meanX) * (values[index] - meanY), 0) / sxx;
    return { fixed: Math.round(meanY - slope * meanX), perCluster: Math.round(slope * 1000) / 1000 };
  };
  return {
    rss: line(points.map((point) => point.idle.controller.rssMB.max)),
    cpu: line(points.map((point) => point.idle.controller.milliCores)),
  };
}

function rolloutRows(rollouts: RolloutResults): string[] {
  const { steps, fairness, excluded, targets } = rollouts;
  const all = steps.all;
  const done =
    rollouts.phaseSeconds !== null
      ? `all ${rollouts.clusters} done in ${rollouts.phaseSeconds} s`
      : `**${rollouts.finished}/${rollouts.clusters} done** within the ${rollouts.limitSeconds} s the phase could wait`;
  const rows = [
    `| ${rollouts.clusters} clusters upgraded at once (${rollouts.fromVersion} → ${rollouts.toVersion}, simulated workload side): controller-added latency per step (n=${all.n}), precondition observable → Quorum's next call, etcd's removal window left out | p50 **${ms(all.p50)}**, p99 **${ms(all.p99)}**, max **${ms(all.max)}** | p99 ≤ ${targets.p99Ms / 1000} s: ${mark(rollouts.verdict.p99Met)}; max ≤ ${targets.maxMs / 1000} s: ${mark(rollouts.verdict.maxMet)} (issue 19) | fixed requeues: ${KCP.requeueAfterFailedPreflightS} s after a failed preflight, ${KCP.requeueWhileNotReadyS} s while not ready, ${KCP.requeueWhileDeletingS} s while a Machine is deleting |`,
  ];
  for (const [kind, summary] of Object.entries(steps.byKind))
    rows.push(
      `| … ${kind} (n=${summary.n}) | p50 ${ms(summary.p50)}, p99 ${ms(summary.p99)}, max ${ms(summary.max)} | | |`,
    );
  rows.push(
    `| … fairness: per cluster, spec change → status shows the rollout done (n=${fairness.rolloutSeconds.n}); the sum of its steps' controller-added latency; its first step | rollout p50 ${fairness.rolloutSeconds.p50} s, p99 ${fairness.rolloutSeconds.p99} s, max **${fairness.rolloutSeconds.max} s**; added p50 ${ms(fairness.addedPerClusterMs.p50)}, p99 ${ms(fairness.addedPerClusterMs.p99)}, max **${ms(fairness.addedPerClusterMs.max)}**; first step p50 ${ms(fairness.firstStepMs.p50)}, max ${ms(fairness.firstStepMs.max)} | | |`,
    `| … the phase | ${done}; ${steps.retries} steps retried; etcd's removal window (left out) held ${excluded.removalWindowSteps} steps, p50 ${ms(excluded.removalWindowMs.p50)}, max ${ms(excluded.removalWindowMs.max)}${cpuOfPhase(rollouts.cpuMilliCores)} | | |`,
  );
  return rows;
}

/** "; CPU: controller 950 mCPU, apiServer 700 mCPU, …" over the rollout phase, when the run measured it. */
function cpuOfPhase(cpu: Record<string, number> | undefined): string {
  if (!cpu) return "";
  const total = Object.values(cpu).reduce((sum, milliCores) => sum + milliCores, 0);
  const each = Object.entries(cpu).map(([name, milliCores]) => `${name} ${milliCores}`);
  return `; CPU over the phase (mCPU, 1,000 = one core busy): ${each.join(", ")}, together ${total}`;
}

/** The idle 2,000-cluster level's simulated figure plus what real etcd rounds at the idle poll interval would add. */
function totalIdleRows(scale: ResultEnvelope<Scale>, cost: ResultEnvelope<EtcdCostResults>): string[] {
  const level = scale.results.levels.find((candidate) => candidate.clusters === 2000);
  const idlePoll = cost.results.implied.reduce(
    (longest, row) => (row.pollSeconds > longest.pollSeconds ? row : longest),
    cost.results.implied[0],
  );
  const etcd = idlePoll?.clusters.find((total) => total.clusters === 2000)?.milliCores;
  if (!level || etcd === undefined) return [];
  const total = Math.round(level.idle.controller.milliCores + etcd);
  return [
    `| 2,000 settled clusters including real etcd: the scale level's idle CPU (simulated etcd) + the etcd-cost rounds at one per ${idlePoll.pollSeconds} s | ${level.idle.controller.milliCores} + ${etcd} = **${total} mCPU** | ≤ 200 mCPU: ${mark(total <= 200)} (issue 19) | ~${KCP.milliCoresPerIdleCluster * 2000} mCPU |`,
  ];
}

function etcdCostRows(result: ResultEnvelope<EtcdCostResults>): string[] {
  const cost = result.results;
  const version = /etcd-(\d+\.\d+)/.exec(cost.etcdBinary)?.[1] ?? "";
  const rows = [
    `| Real etcd watch cost: controller CPU per health round (observeEtcd), ${cost.clusters} clusters × ${cost.members / cost.clusters} TLS members${version ? ` (etcd ${version})` : ""}, the kept client | **${cost.keptRoundCpuMs} ms** CPU per round (n=${cost.keptRoundsDone}, ${cost.failedRounds} failed); a fresh client per round ${cost.freshRoundCpuMs} ms; open idle connections ${cost.keptIdleMilliCoresPerCluster} mCPU per cluster${cost.keptIdleClients ? ` (${cost.keptIdleClients} kept clients idle: ${cost.keptIdleMilliCores} mCPU in all, with none open ${cost.baselineMilliCores})` : ""} | | |`,
  ];
  const idle = Math.max(...cost.implied.map((row) => row.pollSeconds));
  for (const row of cost.implied) {
    const at = (count: number) => row.clusters.find((total) => total.clusters === count)?.milliCores ?? "–";
    const which =
      row.pollSeconds === 10
        ? "--etcd-poll-interval default: while anything is in progress or unhealthy"
        : "--etcd-idle-poll-interval default: settled clusters";
    rows.push(
      `| … implied at 1,000 / 2,000 clusters polled every ${row.pollSeconds} s (${which}) | **${at(1000)} / ${at(2000)} mCPU** on top of the simulated figure | ${row.pollSeconds === idle ? "see the 2,000-cluster total below" : ""} | |`,
    );
  }
  return rows;
}

function runLine(results: ResultEnvelope<unknown>[]): string {
  const first = results.reduce((a, b) => (a.startedAt < b.startedAt ? a : b));
  const last = results.reduce((a, b) => (a.finishedAt > b.finishedAt ? a : b));
  const machine = first.machineAtStart;
  const loads = results
    .map((result) => `${result.benchmark} ${result.machineAtStart.loadavg[0]}→${result.machineAtEnd.loadavg[0]}`)
    .join(", ");
  // Results of several days (a benchmark re-run alone) say when each ran.
  const when =
    first.startedAt.slice(0, 10) === last.finishedAt.slice(0, 10)
      ? `Run ${first.startedAt.slice(0, 16).replace("T", " ")}–${last.finishedAt.slice(11, 16)} UTC`
      : `Runs ${results.map((result) => `${result.benchmark} ${result.startedAt.slice(0, 16).replace("T", " ")}`).join(", ")} UTC`;
  // A benchmark re-run alone may run on another machine of the same kind: name each model and what ran on it.
  const models = [...new Set(results.map((result) => result.machineAtStart.cpuModel))];
  const cpu =
    models.length === 1
      ? machine.cpuModel
      : models
          .map(
            (model) =>
              `${model} (${results
                .filter((result) => result.machineAtStart.cpuModel === model)
                .map((result) => result.benchmark)
                .join(", ")})`,
          )
          .join(" / ");
  return `${when} on ${machine.cpus} × ${cpu}, ${Math.round(machine.memoryMB / 1024)} GB, ${machine.platform}, Node ${machine.node}. 1-minute load average at start→end of each benchmark: ${loads} (the machine has ${machine.cpus} CPUs).`;
}

function charts(health?: ResultEnvelope<Health>, scale?: ResultEnvelope<Scale>, steps?: ResultEnvelope<Steps>): void {
  if (steps) {
    const kinds = Object.keys(steps.results.stepLatencyMs);
    const svg = histograms(
      kinds.map((kind) => ({
        title: kind,
        values: steps.results.samples.filter((sample) => sample.kind === kind).map((sample) => sample.latencyMs),
      })),
      {
        title: "Quorum step latency: precondition observable → next call (real etcd members, controller defaults)",
        edges: [25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 20_000, 30_000],
        edgeLabel: (edge) => (edge >= 1000 ? `${edge / 1000}s` : `${edge}ms`),
        markers: [{ value: 20_000, label: "KCP requeues 15–30 s" }],
        footnote:
          "Targets: p50 ≤ 50 ms, p99 ≤ 250 ms. KCP reacts on fixed requeues: 15 s after a failed preflight, 20 s while not ready, 30 s while deleting.",
      },
    );
    writeFileSync(join(resultsDir, "steps-latency.svg"), svg);
  }
  if (health) {
    const { scenarios, deadlineMs, apiServerProxy } = health.results;
    const proxy = apiServerProxy?.scenarios;
    // Direct on the left, APIServerProxy on the right, one scenario per row.
    const scenarioPanels = (["healthy", "one-killed", "one-paused"] as const).flatMap((name) => {
      const label = { healthy: "all healthy", "one-killed": "one member killed", "one-paused": "one member paused" }[
        name
      ];
      return [
        { title: `${label}, Direct, kept client (the controller's)`, values: scenarios[name].reusedClient.samplesMs },
        ...(proxy
          ? [{ title: `${label}, APIServerProxy, kept client`, values: proxy[name].reusedClient.samplesMs }]
          : []),
      ];
    });
    const svg = histograms(
      [
        ...scenarioPanels,
        { title: "all healthy, Direct, fresh client per round", values: scenarios.healthy.freshClient.samplesMs },
      ],
      {
        title: `etcd health round on a real 5-member etcd${proxy ? ", direct and through APIServerProxy" : ""} (per-call deadline ${deadlineMs / 1000} s)`,
        edges: [10, 25, 50, 100, 250, 500, 1000, deadlineMs, deadlineMs * 1.2],
        edgeLabel: (edge) => (edge >= 1000 ? `${edge / 1000}s` : `${edge}ms`),
        markers: [{ value: deadlineMs * 1.2, label: "1.2× deadline" }],
        footnote: "Targets: < 50 ms all healthy; ≤ 1.2× the per-call deadline with a dead or hung member.",
      },
    );
    writeFileSync(join(resultsDir, "health-rounds.svg"), svg);
  }
  if (scale) {
    const points = [
      { clusters: 0, idle: scale.results.baseline },
      ...scale.results.levels.map((level) => ({ clusters: level.clusters, idle: level.idle })),
    ];
    const maxClusters = Math.max(...points.map((point) => point.clusters));
    const rss: Series[] = [
      {
        label: "controller RSS, max over the idle window",
        points: points.map((point) => ({ x: point.clusters, y: point.idle.controller.rssMB.max })),
      },
      {
        label: "target at 1,000 clusters: 300 MB",
        points: [
          { x: 0, y: 300 },
          { x: maxClusters, y: 300 },
        ],
        dashed: true,
        reference: true,
      },
    ];
    const cpu: Series[] = [
      {
        label: "controller CPU at idle",
        points: points.map((point) => ({ x: point.clusters, y: point.idle.controller.milliCores })),
      },
      {
        label: "API server CPU meanwhile",
        points: points.map((point) => ({ x: point.clusters, y: point.idle.apiServer.milliCores })),
      },
      {
        label: "KCP anchor: 50 mCPU per 10 idle clusters",
        points: [
          { x: 0, y: 0 },
          { x: maxClusters, y: KCP.milliCoresPerIdleCluster * maxClusters },
        ],
        dashed: true,
        reference: true,
        color: "#ea580c",
      },
      {
        label: "target at 1,000 clusters: 100 mCPU",
        points: [
          { x: 0, y: 100 },
          { x: maxClusters, y: 100 },
        ],
        dashed: true,
        reference: true,
      },
    ];
    const busy = scale.results.levels
      .filter((level) => level.convergedAtWindowEnd !== undefined && level.convergedAtWindowEnd < level.added)
      .map((level) => String(level.clusters));
    const cpuMax =
      Math.max(...points.map((point) => Math.max(point.idle.controller.milliCores, point.idle.apiServer.milliCores))) *
      1.3;
    const svg = lineCharts(
      [
        { title: "Controller memory vs number of clusters", yLabel: "RSS (MB)", series: rss },
        { title: "CPU at idle vs number of clusters", yLabel: "millicores", series: cpu, yMax: Math.max(200, cpuMax) },
      ],
      {
        title: "Scale: QuorumControlPlanes × 3 Machines, real kube-apiserver, SIMULATED workload etcd and Nodes",
        xLabel: "QuorumControlPlanes",
        footnote: `Levels are cumulative in one controller process; CPU from /proc over each idle window. The KCP line leaves the chart: at ${maxClusters} clusters it is ${KCP.milliCoresPerIdleCluster * maxClusters} mCPU.${busy.length > 0 ? ` Not idle: at ${busy.join(" and ")} clusters some were still converging during the window (see the table).` : ""}`,
      },
    );
    writeFileSync(join(resultsDir, "scale-resources.svg"), svg);
  }
}

function main(): void {
  const health = readResult<Health>("health");
  const scale = readResult<Scale>("scale");
  const steps = readResult<Steps>("steps");
  const etcdCost = readResult<EtcdCostResults>("etcd-cost");
  charts(health, scale, steps);
  const present = [health, etcdCost, steps, scale].filter(
    (result): result is ResultEnvelope<never> => result !== undefined,
  );
  const rows = [
    "| Measure | Quorum, this run | Target (issue 7) | KCP anchor |",
    "|---|---|---|---|",
    ...(steps ? stepRows(steps) : ["| Step latency / rollout overhead | not run | | |"]),
    ...(health ? healthRows(health) : ["| Health round | not run | | |"]),
    ...(etcdCost ? etcdCostRows(etcdCost) : ["| Real etcd watch cost | not run | | |"]),
    ...(scale ? scaleRows(scale) : ["| Scale | not run | | |"]),
    ...(scale && etcdCost ? totalIdleRows(scale, etcdCost) : []),
  ];
  const notes = present.flatMap((result) => result.notes.map((note) => `- ${result.benchmark}: ${note}`));
  const table = [
    present.length > 0 ? runLine(present) : "No results yet: run `make bench`.",
    "",
    ...rows,
    "",
    "Charts: [step latency](results/steps-latency.svg) · [health rounds](results/health-rounds.svg) · [RSS/CPU vs clusters](results/scale-resources.svg). Raw figures: `bench/results/*.json`.",
    "",
    "Notes written by the benchmarks:",
    "",
    ...notes,
  ].join("\n");
  const readmePath = join(benchDir, "README.md");
  const readme = readFileSync(readmePath, "utf8");
  const start = "<!-- bench:table:start -->";
  const end = "<!-- bench:table:end -->";
  const from = readme.indexOf(start);
  const to = readme.indexOf(end);
  if (from < 0 || to < from)
    throw new Error(
      `${readmePath} has no ${start} … ${end} section: restore it from git, the table is written between those markers`,
    );
  writeFileSync(readmePath, `${readme.slice(0, from + start.length)}\n${table}\n${readme.slice(to)}`);
  process.stderr.write(`[bench report] wrote the table in ${readmePath} and the charts in ${resultsDir}\n`);
}

main();
