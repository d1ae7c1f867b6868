// Where benchmark results go (bench/results/<name>.json) and what every result carries besides its figures:
// when it ran, on what machine, and how loaded that machine was, because the figures mean little without it.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { cpus, loadavg, totalmem, uptime, hostname } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const benchDir = join(dirname(fileURLToPath(import.meta.url)), "..");
export const resultsDir = join(benchDir, "results");

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryMB: number;
  node: string;
  platform: string;
  /** 1, 5 and 15 minute load averages when the sample was taken. */
  loadavg: [number, number, number];
  uptimeSeconds: number;
  hostname: string;
}

export function machineInfo(): MachineInfo {
  const processors = cpus();
  const [one, five, fifteen] = loadavg();
  return {
    cpus: processors.length,
    cpuModel: processors[0]?.model ?? "unknown",
    memoryMB: Math.round(totalmem() / 2 ** 20),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadavg: [round2(one), round2(five), round2(fifteen)],
    uptimeSeconds: Math.round(uptime()),
    hostname: hostname(),
  };
}

export interface ResultEnvelope<T> {
  benchmark: string;
  /** What this result measures, in one sentence, including anything simulated. */
  description: string;
  startedAt: string;
  finishedAt: string;
  durationSeconds: number;
  machineAtStart: MachineInfo;
  machineAtEnd: MachineInfo;
  parameters: Record<string, unknown>;
  results: T;
  /** Caveats a reader must know (shortened windows, simulations, missed targets and why). */
  notes: string[];
}

/** Starts the clock of one benchmark; `finish` writes bench/results/<name>.json and returns its path. */
export function startResult(benchmark: string, description: string, parameters: Record<string, unknown>) {
  const started = Date.now();
  const machineAtStart = machineInfo();
  return {
    finish<T>(results: T, notes: string[] = []): string {
      const finished = Date.now();
      const envelope: ResultEnvelope<T> = {
        benchmark,
        description,
        startedAt: new Date(started).toISOString(),
        finishedAt: new Date(finished).toISOString(),
        durationSeconds: Math.round((finished - started) / 100) / 10,
        machineAtStart,
        machineAtEnd: machineInfo(),
        parameters,
        results,
        notes,
      };
      mkdirSync(resultsDir, { recursive: true });
      const path = join(resultsDir, `${benchmark}.json`);
      writeFileSync(path, `${JSON.stringify(envelope, null, 2)}\n`);
      return path;
    },
  };
}

export function readResult<T>(benchmark: string): ResultEnvelope<T> | undefined {
  const path = join(resultsDir, `${benchmark}.json`);
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, "utf8")) as ResultEnvelope<T>;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/** A progress line on stderr, so a 25-minute `make bench` shows where it is. */
export function progress(benchmark: string, message: string): void {
  process.stderr.write(`[bench ${benchmark} ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}
