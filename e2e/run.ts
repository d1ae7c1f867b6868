// `make e2e`: every scenario on its own fresh stack, one after the other, then the summary (stdout and
// e2e/results/summary.json, or summary.<names>.json for some scenarios) and the rolling upgrade's SVG timeline. Exit
// code 1 when any scenario failed. The run moves into a network namespace of its own first (lib/netns.ts).
//   node --import tsx e2e/run.ts [scenario ...]      (default: all; E2E_SCENARIOS="a,b" works too)
import { copyFileSync, cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../test/env/index.ts";
import { enterOwnNetworkNamespace } from "./lib/netns.ts";
import { summaryTable, timelineSvg, writeResults } from "./lib/report.ts";
import { Scenario, percentile, type ScenarioResult } from "./lib/scenario.ts";
import { scenarios } from "./scenarios/index.ts";

const resultsDir = join(repoRoot, "e2e/results");
const MIN_CLIENT_RATIO = 0.99;

async function runOne(definition: (typeof scenarios)[number]): Promise<ScenarioResult> {
  const scenario = new Scenario(definition.name, definition.title);
  scenario.log(definition.title);
  let error: string | undefined;
  let leaks: string[] = [];
  let logDir = "";
  try {
    const replicas = await definition.run(scenario);
    const rollouts = scenario.operations.filter((operation) => operation.rollout);
    const ok = rollouts.reduce((sum, operation) => sum + operation.client.ok, 0);
    const total = rollouts.reduce((sum, operation) => sum + operation.client.total, 0);
    scenario.check(
      total === 0 || ok / total >= MIN_CLIENT_RATIO,
      `the client through the load balancer got ≥ ${MIN_CLIENT_RATIO * 100}% of its requests answered during rollouts (${ok}/${total})`,
    );
    scenario.check(
      scenario.monitor.losses().length === 0,
      `etcd never lost quorum in ${scenario.monitor.samples.length} samples`,
    );
    leaks = await scenario.finish(replicas);
    scenario.check(
      leaks.length === 0,
      `nothing leaked (${leaks.join("; ") || "no member, Machine or process left over"})`,
    );
  } catch (caught) {
    error = caught instanceof Error ? caught.message : String(caught);
    scenario.log(`FAILED: ${error}`);
    await scenario.stopObservers().catch(() => undefined);
    if (scenario.stack) {
      logDir = keepLogs(scenario);
      scenario.log(`logs kept in ${logDir}`);
      await scenario.stack.stop().catch(() => undefined);
    }
  }
  const steps = scenario.stack ? scenario.stepLatencies() : [];
  const rollouts = scenario.operations.filter((operation) => operation.rollout);
  const ok = rollouts.reduce((sum, operation) => sum + operation.client.ok, 0);
  const total = rollouts.reduce((sum, operation) => sum + operation.client.total, 0);
  if (scenario.timelineWindow && scenario.monitor) {
    const file = join(resultsDir, scenario.timelineWindow.file);
    writeFileSync(
      file,
      timelineSvg({
        title: scenario.timelineWindow.title,
        from: scenario.timelineWindow.from,
        to: scenario.timelineWindow.to,
        machines: scenario.machineSnapshots,
        samples: scenario.monitor.samples,
        actions: scenario.controllerActions(),
        requests: scenario.traffic?.requests ?? [],
      }),
    );
    scenario.log(`timeline written to ${file}`);
  }
  const result: ScenarioResult = {
    name: definition.name,
    title: definition.title,
    passed: error === undefined,
    ...(error ? { error } : {}),
    startedAt: scenario.startedAt,
    wallMs: Date.now() - scenario.startedAt,
    operations: scenario.operations,
    steps,
    latency: {
      count: steps.length,
      p50Ms: percentile(
        steps.map((step) => step.latencyMs),
        50,
      ),
      p99Ms: percentile(
        steps.map((step) => step.latencyMs),
        99,
      ),
    },
    keysWritten: scenario.workload?.keysWritten ?? 0,
    lostKeys: scenario.operations.reduce((sum, operation) => Math.max(sum, operation.lostKeys), 0),
    client: {
      total,
      ok,
      ratio: total === 0 ? 1 : ok / total,
      retried: rollouts.reduce((sum, operation) => sum + operation.client.retried, 0),
    },
    quorumLosses: scenario.monitor?.losses().length ?? 0,
    leaderlessSamples: scenario.monitor?.leaderless().length ?? 0,
    quorumSamples: scenario.monitor?.samples.length ?? 0,
    longestBlindMs: scenario.monitor?.longestBlindMs() ?? 0,
    leaks,
    checks: scenario.checks,
    notes: scenario.notes,
    logDir,
  };
  scenario.log(`${result.passed ? "PASSED" : "FAILED"} in ${(result.wallMs / 1000).toFixed(0)} s`);
  return result;
}

/** Copies a failed scenario's logs (Quorum, provider, CAPI, every Machine's etcd and kube-apiserver) to e2e/results/logs/<name>. */
function keepLogs(scenario: Scenario): string {
  const target = join(resultsDir, "logs", scenario.name);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  const stack = scenario.stack;
  cpSync(stack.dir, target, {
    recursive: true,
    filter: (source) => !/etcd-data|apiserver-certs|\.(key|crt|pub)$/.test(source),
  });
  for (const [file, name] of [
    [stack.capi.logFile, "capi-manager.log"],
    [stack.apiServer.process.logFile, "management-kube-apiserver.log"],
  ] as const) {
    if (existsSync(file)) copyFileSync(file, join(target, name));
  }
  return target;
}

async function main(): Promise<void> {
  const wanted = [...process.argv.slice(2), ...(process.env.E2E_SCENARIOS ?? "").split(",")]
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = wanted.filter((name) => !scenarios.some((scenario) => scenario.name === name));
  if (unknown.length > 0)
    throw new Error(
      `unknown scenario ${unknown.join(", ")}: choose among ${scenarios.map((scenario) => scenario.name).join(", ")}`,
    );
  const selected = wanted.length > 0 ? scenarios.filter((scenario) => wanted.includes(scenario.name)) : scenarios;
  await enterOwnNetworkNamespace((line) => process.stderr.write(`${line}\n`));
  const started = Date.now();
  const results: ScenarioResult[] = [];
  for (const definition of selected) results.push(await runOne(definition));
  const header = `Quorum end-to-end: ${results.filter((result) => result.passed).length}/${results.length} scenarios passed in ${((Date.now() - started) / 60_000).toFixed(1)} min (Quorum --etcd-poll-interval 1s, --etcd-idle-poll-interval 1s; latency = last observable change → controller decision)`;
  process.stdout.write(`\n${summaryTable(results, header)}\n`);
  const file = writeResults(
    resultsDir,
    results,
    { startedAt: new Date(started).toISOString(), wallMs: Date.now() - started },
    selected.length < scenarios.length ? selected.map((definition) => definition.name) : undefined,
  );
  process.stdout.write(`\nresults: ${file}\n`);
  // Stray handles (etcd3 channels, timers) must not keep the suite alive; the harness kills what is left on exit.
  process.exit(results.every((result) => result.passed) ? 0 : 1);
}

main().catch((error: unknown) => {
  process.stderr.write(`e2e: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(2);
});
