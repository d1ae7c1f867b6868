// `make bench`: runs each benchmark as its own process (so whatever one starts is cleaned up by the test
// harness when it ends, and one's heap does not weigh on the next), then writes the charts and the README table.
// BENCH_ONLY=health,scale,steps picks some; a failed benchmark is reported and the others still run.
// The whole run must fit in 30 minutes: BENCH_DEADLINE_AT (epoch ms, from BENCH_BUDGET_MINUTES, default 29) is
// passed down, and the scale benchmark, which runs last, fits its convergence waits into what is left.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { benchDir, progress } from "./lib/results.ts";

const ALL = ["health", "etcd-cost", "steps", "scale"] as const;

function main(): number {
  const only = (process.env.BENCH_ONLY ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = only.filter((name) => !(ALL as readonly string[]).includes(name));
  if (unknown.length > 0) {
    process.stderr.write(`BENCH_ONLY: unknown benchmark ${unknown.join(", ")} (known: ${ALL.join(", ")})\n`);
    return 2;
  }
  const selected = only.length > 0 ? ALL.filter((name) => only.includes(name)) : [...ALL];
  const failed: string[] = [];
  const started = Date.now();
  const budgetMinutes = Number(process.env.BENCH_BUDGET_MINUTES ?? 29);
  const deadlineAt = String(started + budgetMinutes * 60_000);
  for (const name of selected) {
    progress("run", `${name}: starting`);
    // --expose-gc: a benchmark may collect garbage before a measuring window, so none is left from the last one.
    const run = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", join(benchDir, name, "run.ts")], {
      stdio: "inherit",
      env: { ...process.env, BENCH_DEADLINE_AT: deadlineAt },
    });
    if (run.status !== 0) failed.push(`${name} (exit ${run.status ?? run.signal})`);
    progress(
      "run",
      `${name}: ${run.status === 0 ? "done" : "FAILED"} after ${Math.round((Date.now() - started) / 1000)} s in total`,
    );
  }
  const report = spawnSync(process.execPath, ["--import", "tsx", join(benchDir, "report.ts")], { stdio: "inherit" });
  if (report.status !== 0) failed.push("report");
  if (failed.length > 0) {
    process.stderr.write(`bench: failed: ${failed.join(", ")}; the other results were written to bench/results/\n`);
    return 1;
  }
  progress("run", `all done in ${Math.round((Date.now() - started) / 6_000) / 10} min`);
  return 0;
}

process.exitCode = main();
