// CPU time and resident memory of a process, from /proc (Linux), for "mCPU at idle" and "RSS" figures that do
// not depend on the process reporting on itself.
import { readFileSync } from "node:fs";

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on every architecture Node runs on. */
const TICKS_PER_SECOND = 100;

export interface ProcessSample {
  at: number;
  /** User + system CPU seconds since the process started. */
  cpuSeconds: number;
  rssMB: number;
}

export function sampleProcess(pid: number): ProcessSample {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may contain spaces; fields after it start past the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rssKB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0");
  return {
    at: Date.now(),
    cpuSeconds: (utime + stime) / TICKS_PER_SECOND,
    rssMB: Math.round((rssKB / 1024) * 10) / 10,
  };
}

/** Average CPU use between two samples in millicores (1000 = one core busy). */
export function milliCores(from: ProcessSample, to: ProcessSample): number {
  const wallSeconds = (to.at - from.at) / 1000;
  return wallSeconds > 0 ? Math.round(((to.cpuSeconds - from.cpuSeconds) / wallSeconds) * 1000) : 0;
}
