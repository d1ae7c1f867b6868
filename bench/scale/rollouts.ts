// The scale benchmark's rollout phase (issue 19): N converged clusters get a new spec.version at once, and the driver
// keeps playing the infrastructure provider and CAPI while the controller rolls every one of them (maxSurge 1:
// create a Machine, promote its learner, move leadership if needed, remove an old member, delete its Machine, release
// its hook; three times per cluster). It measures until every rolled cluster's status shows all Machines at the new
// version and 3 healthy voters.
//
// Controller-added latency per step, in the vocabulary of the steps benchmark (bench/steps): from the step's
// precondition becoming observable to Quorum's decision to make the call ("next action" in the controller's log). In
// this simulated world a step's precondition is the latest of
//  - the previous step's outcome in the same cluster (its result line in the log: Quorum's own effect),
//  - the driver's last write to the cluster sent before the decision (spec.version changed, a Machine provisioned
//    with an address, a deleted Machine's finalizer removed), observable from the API server's answer, or from the
//    decision if the controller saw it first,
//  - etcd's removal window, when the planner waited for it (its Wait reason names the seconds left): etcd's rule, waited
//    on Quorum's clock, so not controller-added; it is reported apart.
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { actionsOf, jsonLogEntries, type ActionRecord, type LogEntry } from "../lib/controller-log.ts";
import { milliCores, type ProcessSample } from "../lib/procstat.ts";
import { rounded, summarize, type Summary } from "../lib/stats.ts";
import type { Driver, DriverWrite, Rollout } from "./driver.ts";

/** Issue 19's targets for the controller-added latency of a step while 200 clusters roll at once. */
export const ROLLOUT_TARGETS = { p99Ms: 1_000, maxMs: 5_000 } as const;

/** The planner's Wait for etcd's removal window: "... removing <member> waits 4.2s, because etcd refuses ...". */
const REMOVAL_WINDOW = /waits (\d+(?:\.\d+)?)s, because etcd refuses a voter removal/;

export interface StepSample {
  cluster: string;
  kind: string;
  decidedAt: number;
  /** Decision − precondition observable, ms (0 when the controller acted on a write before its answer came back). */
  addedMs: number;
  /** What the precondition was: the previous step's outcome, a driver write, or etcd's removal window. */
  precondition: "previous-step" | DriverWrite["what"] | "removal-window";
  /** The part of decision − (previous outcome or driver write) spent in etcd's removal window, ms. */
  removalWindowMs: number;
  /**
   * Between the precondition and the decision: the planner's Wait reasons and the reconciles that waited for the cache
   * to show Quorum's own last write, with names and figures stripped.
   */
  waitsBetween: string[];
  retry: boolean;
}

export interface RolloutResults {
  clusters: number;
  fromVersion: string;
  toVersion: string;
  /** Rolled clusters whose status showed the new version and 3 healthy voters before the phase's limit. */
  finished: number;
  limitSeconds: number;
  /** First spec change sent → last rolled cluster done (null when not all finished). */
  phaseSeconds: number | null;
  /** First spec change sent → last one answered (the driver sends them `parallelism` at a time). */
  specChangesSeconds: number;
  steps: {
    all: Summary;
    byKind: Record<string, Summary>;
    /** Steps whose call did not do the step (a conflict, "not caught up", a deferral) and were decided again. */
    retries: number;
    /** Steps decided before the driver's write they followed was answered (counted with 0 ms). */
    decidedBeforeAnswer: number;
  };
  /** Whether any cluster waited behind others. */
  fairness: {
    /** Per cluster: spec change answered → status shows the rollout done. */
    rolloutSeconds: Summary;
    /** Per cluster: the sum of its steps' controller-added latency. */
    addedPerClusterMs: Summary;
    /** Per cluster: spec change → its first step (CreateMachine), the queue's turn at 200 clusters at once. */
    firstStepMs: Summary;
    stepsPerCluster: Summary;
  };
  /** Left out of the controller-added latency: etcd's removal window, waited on Quorum's clock. */
  excluded: { removalWindowSteps: number; removalWindowMs: Summary };
  /**
   * Logged after a step's precondition and before its decision, by how many steps: the planner's Wait reasons and the
   * reconciles that waited for the cache to show Quorum's own write (the controller looked and did not act).
   */
  waitsAfterPrecondition: Record<string, number>;
  /** The slowest steps, for reading the log. */
  slowest: StepSample[];
  /**
   * Requests the controller sent during the phase (counted in its process), by "verb resource", per step decided and
   * per rolled cluster; the clusters not rolled are polled meanwhile too, so these err high by their share.
   */
  requests?: { total: number; perStep: Record<string, number>; perCluster: Record<string, number> };
  /**
   * CPU over the phase, in millicores (1000 = one core busy), per process sharing the machine's cores: where the
   * time went while every step waited its turn.
   */
  cpuMilliCores?: Record<string, number>;
  targets: typeof ROLLOUT_TARGETS;
  verdict: { p99Met: boolean; maxMet: boolean };
}

export interface RolloutPhaseOptions {
  count: number;
  toVersion: string;
  fromVersion: string;
  limitSeconds: number;
  logFile: string;
  setLogLevel: (level: "debug" | "info") => Promise<void>;
  progress: (message: string) => void;
  /** Throws when the controller is gone (its last log lines say why). */
  checkController: () => void;
  /** The controller's request counters so far, by "verb resource". */
  requestCounts: () => Promise<ReadonlyMap<string, number>>;
  /** CPU samples of the processes that share the machine (controller, API server, its etcd, this driver). */
  sampleCpu?: () => Record<string, ProcessSample>;
  /** Started with the spec changes, awaited when the phase ends: e.g. a CPU profile of the API server. */
  alongside?: () => Promise<void>;
}

/** Rolls the first `count` converged clusters at once and measures each step; see the file's head. */
export async function runRolloutPhase(driver: Driver, options: RolloutPhaseOptions): Promise<RolloutResults> {
  const keys = [...driver.createdAt.keys()].filter((key) => driver.convergedAt.has(key)).slice(0, options.count);
  const logOffset = fileSize(options.logFile);
  const requestsBefore = await options.requestCounts();
  const cpuBefore = options.sampleCpu?.();
  await options.setLogLevel("debug");
  const started = Date.now();
  const alongside = options
    .alongside?.()
    .catch((error: unknown) => options.progress(`rollouts: ${error instanceof Error ? error.message : String(error)}`));
  for (const key of keys) driver.changeVersion(key, options.toVersion);
  const deadline = started + options.limitSeconds * 1000;
  let lastReport = started;
  for (;;) {
    const done = keys.filter((key) => driver.rollouts.get(key)?.doneAt !== undefined).length;
    if (done === keys.length || Date.now() >= deadline) break;
    if (Date.now() - lastReport > 15_000) {
      options.progress(`rollouts: ${done}/${keys.length} done after ${Math.round((Date.now() - started) / 1000)} s`);
      lastReport = Date.now();
    }
    options.checkController();
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const requestsAfter = await options.requestCounts();
  const cpuAfter = options.sampleCpu?.();
  await alongside;
  await options.setLogLevel("info");
  // Next to the controller's log, so that the timeline of any cluster can be read again with both.
  writeFileSync(
    `${options.logFile}.rollouts.json`,
    JSON.stringify({
      logOffset,
      keys,
      rollouts: Object.fromEntries(keys.map((key) => [key, driver.rollouts.get(key)])),
      writes: Object.fromEntries(keys.map((key) => [key, driver.writes.get(key) ?? []])),
    }),
  );
  const entries = jsonLogEntries(readFrom(options.logFile, logOffset));
  const results = analyseRollouts({
    keys,
    rollouts: driver.rollouts,
    writes: driver.writes,
    entries,
    fromVersion: options.fromVersion,
    toVersion: options.toVersion,
    limitSeconds: options.limitSeconds,
  });
  return {
    ...results,
    requests: requestsPer(requestsBefore, requestsAfter, results.steps.all.n, keys.length),
    ...(cpuBefore && cpuAfter
      ? {
          cpuMilliCores: Object.fromEntries(
            Object.keys(cpuAfter).map((name) => [name, milliCores(cpuBefore[name], cpuAfter[name])]),
          ),
        }
      : {}),
  };
}

/** Counter deltas over the phase, per step and per cluster, to a tenth. */
function requestsPer(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
  steps: number,
  clusters: number,
): NonNullable<RolloutResults["requests"]> {
  const perStep: Record<string, number> = {};
  const perCluster: Record<string, number> = {};
  let total = 0;
  for (const [key, count] of [...after].sort(([a], [b]) => a.localeCompare(b))) {
    const delta = count - (before.get(key) ?? 0);
    if (delta === 0) continue;
    total += delta;
    perStep[key] = Math.round((delta / Math.max(1, steps)) * 10) / 10;
    perCluster[key] = Math.round((delta / Math.max(1, clusters)) * 10) / 10;
  }
  perStep.total = Math.round((total / Math.max(1, steps)) * 10) / 10;
  perCluster.total = Math.round((total / Math.max(1, clusters)) * 10) / 10;
  return { total, perStep, perCluster };
}

/** What a reader of the rollout figures must know, for the result's notes. */
export function rolloutNotes(
  rollouts: RolloutResults,
  world: { parallelism: number; simulatedLatencyMs: number },
): string[] {
  return [
    `Rollouts: ${rollouts.clusters} converged clusters got spec.version ${rollouts.toVersion} at once (the driver sends the patches ${world.parallelism} at a time: all answered within ${rollouts.specChangesSeconds} s); the driver keeps playing the infrastructure provider and CAPI (a new Machine gets CAPI's finalizer and an address; a deleted Machine waits for the pre-terminate hooks, then its infrastructure and bootstrap objects are deleted and the finalizer removed). The phase ends when every rolled cluster's status shows all Machines at the new version and 3 healthy voters.`,
    "Rollouts: a step's controller-added latency runs from its precondition becoming observable to the controller's \"next action\" log line; in this simulated world the precondition is the later of the cluster's previous step's outcome (its result line) and the driver's last write to that cluster sent before the decision (spec changed, Machine provisioned, Machine gone; from the API server's answer, or from the decision when the controller saw the write first). Every driver write counts, whether or not the step needed it, so a step that could have gone earlier is measured from the later write: the figures err short, never long, by that.",
    `Rollouts: left out of the controller-added latency: etcd's removal window (a voter removal waits until the leader has had enough voters connected for 5 s), which the planner waits out on its own clock and names in its Wait reason (logged at debug, which the phase turns on while it runs); ${rollouts.excluded.removalWindowSteps} steps waited for it, p50 ${rollouts.excluded.removalWindowMs.p50} ms, max ${rollouts.excluded.removalWindowMs.max} ms. The Wait reason gives the seconds left to 0.1 s, so each such step's figure is ±50 ms. The simulated etcd never refuses a call, catches a learner up at once and answers in ${world.simulatedLatencyMs} ms, and nothing drains a Node: what is left is the controller's own time (queue, informer caches, reconcile) under ${rollouts.clusters} rollouts at once.`,
  ];
}

interface AnalysisInput {
  keys: string[];
  rollouts: ReadonlyMap<string, Rollout>;
  writes: ReadonlyMap<string, DriverWrite[]>;
  entries: LogEntry[];
  fromVersion: string;
  toVersion: string;
  limitSeconds: number;
}

/** Step latency and fairness from the controller's log and the driver's writes (pure: no clock, no I/O). */
export function analyseRollouts(input: AnalysisInput): RolloutResults {
  const actionsByCluster = groupBy(actionsOf(input.entries), (action) => action.object);
  // The planner's Waits, and reconciles that ended before planning because the cache had not shown Quorum's own
  // last write yet (src/controller/expectations.ts): both are the controller looking and not acting.
  const waitsByCluster = groupBy(
    input.entries.filter(
      (entry) =>
        (entry.meta.action === "Wait" && entry.message.startsWith("next action: Wait")) ||
        entry.message.startsWith("waiting for the cache to show"),
    ),
    (entry) => entry.meta.object ?? "",
  );
  const samples: StepSample[] = [];
  const perCluster: { rolloutSeconds?: number; addedMs: number; firstStepMs?: number; steps: number }[] = [];
  const specChanges: DriverWrite[] = [];
  for (const key of input.keys) {
    const writes = input.writes.get(key) ?? [];
    const spec = writes.find((write) => write.what === "spec-changed");
    if (!spec) continue;
    specChanges.push(spec);
    const steps = clusterSteps(
      key,
      spec,
      actionsByCluster.get(key) ?? [],
      writes,
      waitsByCluster.get(key) ?? [],
      input.rollouts.get(key)?.doneAt,
    );
    samples.push(...steps);
    const doneAt = input.rollouts.get(key)?.doneAt;
    perCluster.push({
      ...(doneAt !== undefined ? { rolloutSeconds: (doneAt - spec.at) / 1000 } : {}),
      addedMs: steps.reduce((sum, step) => sum + step.addedMs, 0),
      ...(steps[0] ? { firstStepMs: steps[0].addedMs } : {}),
      steps: steps.length,
    });
  }
  const finished = input.keys.filter((key) => input.rollouts.get(key)?.doneAt !== undefined);
  const firstSent = Math.min(...specChanges.map((write) => write.sentAt));
  const lastDone = Math.max(...finished.map((key) => input.rollouts.get(key)?.doneAt as number));
  const all = rounded(summarize(samples.map((sample) => sample.addedMs)));
  const windowed = samples.filter((sample) => sample.removalWindowMs > 0);
  const waits: Record<string, number> = {};
  for (const reason of samples.flatMap((sample) => sample.waitsBetween)) waits[reason] = (waits[reason] ?? 0) + 1;
  return {
    clusters: input.keys.length,
    fromVersion: input.fromVersion,
    toVersion: input.toVersion,
    finished: finished.length,
    limitSeconds: input.limitSeconds,
    phaseSeconds:
      finished.length === input.keys.length && finished.length > 0
        ? Math.round((lastDone - firstSent) / 100) / 10
        : null,
    specChangesSeconds: Math.round((Math.max(...specChanges.map((write) => write.at)) - firstSent) / 100) / 10,
    steps: {
      all,
      byKind: Object.fromEntries(
        [...groupBy(samples, (sample) => sample.kind)]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([kind, ofKind]) => [kind, rounded(summarize(ofKind.map((sample) => sample.addedMs)))]),
      ),
      retries: samples.filter((sample) => sample.retry).length,
      decidedBeforeAnswer: samples.filter((sample) => sample.addedMs === 0 && sample.precondition !== "previous-step")
        .length,
    },
    fairness: {
      rolloutSeconds: rounded(
        summarize(
          perCluster.flatMap((cluster) => (cluster.rolloutSeconds !== undefined ? [cluster.rolloutSeconds] : [])),
        ),
        2,
      ),
      addedPerClusterMs: rounded(summarize(perCluster.map((cluster) => cluster.addedMs))),
      firstStepMs: rounded(
        summarize(perCluster.flatMap((cluster) => (cluster.firstStepMs !== undefined ? [cluster.firstStepMs] : []))),
      ),
      stepsPerCluster: rounded(summarize(perCluster.map((cluster) => cluster.steps))),
    },
    excluded: {
      removalWindowSteps: windowed.length,
      removalWindowMs: rounded(summarize(windowed.map((sample) => sample.removalWindowMs))),
    },
    waitsAfterPrecondition: Object.fromEntries(Object.entries(waits).sort(([, a], [, b]) => b - a)),
    slowest: [...samples].sort((a, b) => b.addedMs - a.addedMs).slice(0, 10),
    targets: ROLLOUT_TARGETS,
    verdict: { p99Met: all.p99 <= ROLLOUT_TARGETS.p99Ms, maxMet: all.max <= ROLLOUT_TARGETS.maxMs },
  };
}

/** One cluster's steps after its spec change, each with its precondition (see the file's head). */
function clusterSteps(
  cluster: string,
  spec: DriverWrite,
  actions: ActionRecord[],
  writes: DriverWrite[],
  waits: LogEntry[],
  doneAt: number | undefined,
): StepSample[] {
  const samples: StepSample[] = [];
  let previousOutcome = Number.NEGATIVE_INFINITY;
  for (const action of actions) {
    const inRollout = action.decidedAt >= spec.sentAt && (doneAt === undefined || action.decidedAt <= doneAt);
    if (inRollout) {
      // A write the controller acted on before the driver heard back was observable no later than the decision.
      const write = writes
        .filter((candidate) => candidate.sentAt <= action.decidedAt)
        .map((candidate) => ({ candidate, observable: Math.min(candidate.at, action.decidedAt) }))
        .reduce<{ candidate: DriverWrite; observable: number } | undefined>(
          (latest, next) => (latest === undefined || next.observable >= latest.observable ? next : latest),
          undefined,
        );
      let precondition: StepSample["precondition"] = "previous-step";
      let observable = previousOutcome;
      if (write && write.observable >= observable) {
        precondition = write.candidate.what;
        observable = write.observable;
      }
      const between = waits.filter((wait) => wait.at >= observable && wait.at < action.decidedAt);
      // The last Wait for the window says best when it opens (each rounds the seconds left to 0.1 s).
      const windowWait = between.filter((wait) => REMOVAL_WINDOW.test(wait.message)).pop();
      const windowOpen = windowWait
        ? windowWait.at + Number(REMOVAL_WINDOW.exec(windowWait.message)?.[1]) * 1000
        : Number.NEGATIVE_INFINITY;
      let removalWindowMs = 0;
      if (windowOpen > observable) {
        removalWindowMs = Math.min(windowOpen, action.decidedAt) - observable;
        precondition = "removal-window";
        observable = Math.min(windowOpen, action.decidedAt);
      }
      samples.push({
        cluster,
        kind: action.kind,
        decidedAt: action.decidedAt,
        addedMs: Math.max(0, action.decidedAt - observable),
        precondition,
        removalWindowMs,
        waitsBetween: between.filter((wait) => wait.at >= observable).map((wait) => reasonClass(wait.message)),
        retry: action.retry,
      });
    }
    // Any outcome, a refusal or a failure included: the next decision follows it.
    previousOutcome = action.completedAt ?? action.decidedAt;
  }
  return samples;
}

/** A Wait reason with names, ids and figures stripped, so that reasons group: "machine <name> is joining ...". */
function reasonClass(message: string): string {
  return message
    .replace(/^next action: Wait: /, "")
    .replace(/scale-\d+\//g, "")
    .replace(/\b(?:c\d{4}-[a-z0-9-]+|c\d{4}|ip-[\d-]+|\d{6,})\b/g, "<name>")
    .replace(/\b(?:\d+(?:\.\d+)?(?:ms|h|m|s))+\b/g, "<time>")
    .slice(0, 120);
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

function fileSize(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

function readFrom(path: string, offset: number): string {
  return readFileSync(path).subarray(offset).toString("utf8");
}
