// npm run sim -- --schedules N --seed S [--variant NAME]      run N seeded schedules against the planner
// npm run sim -- --replay SEED --trace [--variant NAME]       replay one schedule step by step
// The last line is always `sim: <N> schedules, <V> violations, <S> stuck`; the exit code is 1 when V + S > 0.
import { parseArgs } from "node:util";
import { PLANNERS, type PlannerName } from "./planners.ts";
import { scheduleSeed } from "./prng.ts";
import { runSchedule, type ScheduleResult } from "./run.ts";

const PROGRESS_EVERY_MS = 5000;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      schedules: { type: "string", default: "1000" },
      seed: { type: "string", default: "1" },
      replay: { type: "string" },
      trace: { type: "boolean", default: false },
      variant: { type: "string", default: "real" },
      "max-reports": { type: "string", default: "10" },
    },
    strict: true,
  });
  const variant = values.variant as PlannerName;
  if (!(variant in PLANNERS)) {
    process.stderr.write(
      `sim: unknown --variant "${values.variant}": use one of ${Object.keys(PLANNERS).join(", ")}\n`,
    );
    return 2;
  }
  const planner = PLANNERS[variant];
  const variantFlag = variant === "real" ? "" : ` --variant ${variant}`;

  if (values.replay !== undefined) {
    const seed = parseCount("--replay", values.replay, 0);
    const result = await runSchedule(seed, planner, { trace: true });
    if (values.trace) for (const line of result.trace) process.stdout.write(`${line}\n`);
    if (result.finding) report(result, variantFlag);
    else process.stdout.write(`schedule seed ${seed}: reached the spec in ${result.steps} steps\n`);
    return summary(1, result.outcome === "violation" ? 1 : 0, result.outcome === "stuck" ? 1 : 0);
  }

  const schedules = parseCount("--schedules", values.schedules, 1);
  const runSeed = parseCount("--seed", values.seed, 0);
  const maxReports = parseCount("--max-reports", values["max-reports"], 0);
  let violations = 0;
  let stuck = 0;
  let maxSteps = 0;
  let totalSteps = 0;
  const started = Date.now();
  let lastProgress = started;
  for (let index = 0; index < schedules; index++) {
    const result = await runSchedule(scheduleSeed(runSeed, index), planner);
    totalSteps += result.steps;
    maxSteps = Math.max(maxSteps, result.steps);
    if (result.outcome === "violation") violations++;
    if (result.outcome === "stuck") stuck++;
    if (result.outcome !== "ok" && violations + stuck <= maxReports) report(result, variantFlag, index);
    const now = Date.now();
    if (now - lastProgress >= PROGRESS_EVERY_MS) {
      lastProgress = now;
      process.stderr.write(
        `sim: ${index + 1}/${schedules} schedules, ${violations} violations, ${stuck} stuck (${((now - started) / 1000).toFixed(0)} s)\n`,
      );
    }
  }
  if (violations + stuck > maxReports)
    process.stdout.write(`(${violations + stuck - maxReports} more not shown; raise --max-reports to see them)\n`);
  process.stdout.write(
    `steps per schedule: mean ${(totalSteps / Math.max(1, schedules)).toFixed(1)}, max ${maxSteps}; ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  return summary(schedules, violations, stuck);
}

function report(result: ScheduleResult, variantFlag: string, index?: number): void {
  const finding = result.finding!;
  const where = index === undefined ? "" : `schedule ${index} `;
  process.stdout.write(
    `${finding.kind.toUpperCase()} [${finding.rule}] ${where}seed ${result.seed} at step ${result.steps}: ${finding.message}\n`,
  );
  process.stdout.write(`  replay: npm run sim -- --replay ${result.seed} --trace${variantFlag}\n`);
}

function summary(schedules: number, violations: number, stuck: number): number {
  process.stdout.write(`sim: ${schedules} schedules, ${violations} violations, ${stuck} stuck\n`);
  return violations + stuck > 0 ? 1 : 0;
}

function parseCount(flag: string, text: string, minimum: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < minimum || value > 0xffffffff) {
    process.stderr.write(`sim: ${flag} must be a whole number >= ${minimum} (got "${text}")\n`);
    process.exit(2);
  }
  return value;
}

process.exitCode = await main();
