// The suite's output: a summary table on stdout, e2e/results/summary.json, and an SVG timeline of the rolling
// upgrade (Machines and etcd members over time, each controller action marked).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ControllerAction, ScenarioResult } from "./scenario.ts";
import type { QuorumSample, TrafficRequest } from "./workload.ts";

export interface TimelineData {
  title: string;
  from: number;
  to: number;
  machines: { at: number; machines: { name: string; deleting: boolean; provisioned: boolean }[] }[];
  samples: QuorumSample[];
  actions: ControllerAction[];
  requests: TrafficRequest[];
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;

export function summaryTable(results: ScenarioResult[], header: string): string {
  const rows = results.map((result) => [
    result.name,
    result.passed ? "PASS" : "FAIL",
    `${(result.wallMs / 1000).toFixed(0)} s`,
    String(result.latency.count),
    result.latency.count ? seconds(result.latency.p50Ms) : "-",
    result.latency.count ? seconds(result.latency.p99Ms) : "-",
    `${result.lostKeys}/${result.keysWritten}`,
    result.client.total
      ? `${(result.client.ratio * 100).toFixed(2)}% (${result.client.ok}/${result.client.total})`
      : "-",
    String(result.quorumLosses),
    String(result.leaks.length),
  ]);
  const head = [
    "scenario",
    "result",
    "wall",
    "steps",
    "step p50",
    "step p99",
    "lost keys",
    "client ok (rollouts)",
    "quorum losses",
    "leaks",
  ];
  const widths = head.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column])).join("  ");
  const out = [header, "", line(head), widths.map((width) => "-".repeat(width)).join("  "), ...rows.map(line)];
  for (const result of results.filter((candidate) => !candidate.passed))
    out.push("", `${result.name} FAILED: ${result.error}`, `  logs: ${result.logDir}`);
  for (const result of results.filter((candidate) => candidate.leaks.length > 0))
    out.push("", `${result.name} leaks: ${result.leaks.join("; ")}`);
  return out.join("\n");
}

/**
 * Writes summary.json for a run of every scenario (the file the repository keeps), and summary.<names>.json (ignored
 * by git) for a run of some, so that trying one scenario never replaces the record of a whole run.
 */
export function writeResults(
  dir: string,
  results: ScenarioResult[],
  meta: Record<string, unknown>,
  subset?: string[],
): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, subset ? `summary.${subset.join("+")}.json` : "summary.json");
  writeFileSync(file, `${JSON.stringify({ ...meta, scenarios: results }, null, 2)}\n`);
  return file;
}

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const ACTION_LABEL: Record<string, string> = {
  CreateMachine: "create",
  PromoteLearner: "promote",
  ForwardLeadership: "move leader",
  RemoveMember: "remove member",
  DeleteMachine: "delete",
  ReleaseHook: "release hook",
  AddHook: "add hook",
  RemoveGhost: "remove ghost",
  Remediate: "remediate",
};

/** A self-contained SVG: one lane per Machine (Machine bar above, its etcd member below), actions as marks. */
export function timelineSvg(data: TimelineData): string {
  const { from, to } = data;
  const span = Math.max(1, to - from);
  const left = 190;
  const right = 30;
  const width = 1280;
  const plot = width - left - right;
  const x = (at: number) => left + ((Math.min(Math.max(at, from), to) - from) / span) * plot;

  // Lanes: every Machine seen in the window, in order of first appearance.
  const lanes: { name: string; first: number; last: number; deletingFrom?: number }[] = [];
  for (const snapshot of data.machines) {
    if (snapshot.at < from - 1_000 || snapshot.at > to + 1_000) continue;
    for (const machine of snapshot.machines) {
      let lane = lanes.find((candidate) => candidate.name === machine.name);
      if (!lane) {
        lane = { name: machine.name, first: snapshot.at, last: snapshot.at };
        lanes.push(lane);
      }
      lane.last = snapshot.at;
      if (machine.deleting && lane.deletingFrom === undefined) lane.deletingFrom = snapshot.at;
    }
  }
  // Member intervals per member name, split into learner / voter, healthy or not.
  type Segment = { from: number; to: number; state: "learner" | "voter" | "unhealthy" };
  const segments = new Map<string, Segment[]>();
  const windowSamples = data.samples.filter((sample) => sample.at >= from && sample.at <= to && sample.voters >= 0);
  for (let i = 0; i < windowSamples.length; i++) {
    const sample = windowSamples[i];
    const next = windowSamples[i + 1]?.at ?? sample.at + 250;
    for (const member of sample.members) {
      if (!member.name) continue;
      const state: Segment["state"] = member.learner ? "learner" : member.healthy ? "voter" : "unhealthy";
      const list = segments.get(member.name) ?? [];
      const lastSegment = list.at(-1);
      if (lastSegment && lastSegment.state === state && sample.at - lastSegment.to < 1_000) lastSegment.to = next;
      else list.push({ from: sample.at, to: next, state });
      segments.set(member.name, list);
    }
  }
  for (const name of segments.keys())
    if (!lanes.some((lane) => lane.name === name)) lanes.push({ name, first: from, last: from });

  const laneHeight = 40;
  const top = 120;
  const lanesBottom = top + lanes.length * laneHeight;
  const quorumTop = lanesBottom + 30;
  const quorumHeight = 70;
  const height = quorumTop + quorumHeight + 90;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  parts.push(`<text x="${left}" y="24" font-size="16" font-weight="bold">${escape(data.title)}</text>`);
  parts.push(
    `<text x="${left}" y="44" fill="#555">${escape(`${new Date(from).toISOString()} + ${seconds(span)}; top bar: Machine (grey, red once deleting); bottom bar: its etcd member (light: learner, blue: voter, orange: unhealthy)`)}</text>`,
  );

  // Time grid every 5 or 10 s.
  const step = span > 120_000 ? 20_000 : span > 60_000 ? 10_000 : 5_000;
  for (let t = 0; t <= span; t += step) {
    const gx = x(from + t);
    parts.push(
      `<line x1="${gx.toFixed(1)}" y1="${top - 10}" x2="${gx.toFixed(1)}" y2="${quorumTop + quorumHeight}" stroke="#eee"/>`,
    );
    parts.push(
      `<text x="${gx.toFixed(1)}" y="${quorumTop + quorumHeight + 16}" text-anchor="middle" fill="#777">${t / 1000}s</text>`,
    );
  }

  lanes.forEach((lane, index) => {
    const y = top + index * laneHeight;
    parts.push(`<text x="${left - 8}" y="${y + 20}" text-anchor="end">${escape(lane.name)}</text>`);
    const end = lane.deletingFrom ?? lane.last;
    if (lane.last > lane.first || lane.deletingFrom !== undefined) {
      parts.push(
        `<rect x="${x(lane.first).toFixed(1)}" y="${y + 4}" width="${Math.max(1, x(end) - x(lane.first)).toFixed(1)}" height="12" fill="#9e9e9e"><title>Machine ${escape(lane.name)}</title></rect>`,
      );
      if (lane.deletingFrom !== undefined) {
        parts.push(
          `<rect x="${x(lane.deletingFrom).toFixed(1)}" y="${y + 4}" width="${Math.max(1, x(lane.last) - x(lane.deletingFrom)).toFixed(1)}" height="12" fill="#e57373"><title>Machine ${escape(lane.name)} deleting</title></rect>`,
        );
      }
    }
    for (const segment of segments.get(lane.name) ?? []) {
      const fill = segment.state === "learner" ? "#90caf9" : segment.state === "voter" ? "#1565c0" : "#ff9800";
      parts.push(
        `<rect x="${x(segment.from).toFixed(1)}" y="${y + 19}" width="${Math.max(1, x(segment.to) - x(segment.from)).toFixed(1)}" height="12" fill="${fill}"><title>member ${escape(lane.name)}: ${segment.state}</title></rect>`,
      );
    }
  });

  // Controller actions: a line across the lanes and a label above, staggered so neighbours stay readable.
  const actions = data.actions.filter((action) => action.at >= from && action.at <= to);
  actions.forEach((action, index) => {
    const ax = x(action.at);
    parts.push(
      `<line x1="${ax.toFixed(1)}" y1="${top - 8}" x2="${ax.toFixed(1)}" y2="${lanesBottom}" stroke="#2e7d32" stroke-dasharray="3,3"><title>${escape(`${action.kind}: ${action.message}`)}</title></line>`,
    );
    const ly = 62 + (index % 4) * 13;
    parts.push(
      `<text x="${(ax + 2).toFixed(1)}" y="${ly}" fill="#2e7d32" font-size="10">${escape(ACTION_LABEL[action.kind] ?? action.kind)}</text>`,
    );
  });

  // Quorum strip: healthy voters against voters.
  parts.push(`<text x="${left - 8}" y="${quorumTop + 14}" text-anchor="end">etcd voters</text>`);
  parts.push(`<text x="${left - 8}" y="${quorumTop + 28}" text-anchor="end" fill="#1565c0">healthy</text>`);
  const maxVoters = Math.max(1, ...windowSamples.map((sample) => sample.voters));
  const qy = (value: number) => quorumTop + quorumHeight - (value / maxVoters) * (quorumHeight - 10);
  const path = (pick: (sample: QuorumSample) => number) =>
    windowSamples
      .map((sample, i) => `${i === 0 ? "M" : "L"}${x(sample.at).toFixed(1)},${qy(pick(sample)).toFixed(1)}`)
      .join(" ");
  if (windowSamples.length > 0) {
    parts.push(`<path d="${path((sample) => sample.voters)}" fill="none" stroke="#9e9e9e" stroke-width="2"/>`);
    parts.push(`<path d="${path((sample) => sample.healthyVoters)}" fill="none" stroke="#1565c0" stroke-width="1.5"/>`);
    parts.push(
      `<path d="${path((sample) => Math.floor(sample.voters / 2) + 1)}" fill="none" stroke="#c62828" stroke-width="1" stroke-dasharray="4,3"/>`,
    );
    parts.push(
      `<text x="${width - right}" y="${quorumTop - 4}" text-anchor="end" fill="#c62828" font-size="10">dashed red: quorum size</text>`,
    );
  }
  for (let v = 0; v <= maxVoters; v++)
    parts.push(`<text x="${left - 60}" y="${qy(v) + 4}" fill="#999" font-size="9">${v}</text>`);

  // Client requests through the load balancer: failures as red ticks.
  const requests = data.requests.filter((entry) => entry.at >= from && entry.at <= to);
  const failed = requests.filter((entry) => !entry.ok);
  const ry = quorumTop + quorumHeight + 40;
  parts.push(`<text x="${left - 8}" y="${ry + 4}" text-anchor="end">client via LB</text>`);
  parts.push(`<line x1="${left}" y1="${ry}" x2="${width - right}" y2="${ry}" stroke="#a5d6a7" stroke-width="6"/>`);
  for (const entry of failed)
    parts.push(
      `<line x1="${x(entry.at).toFixed(1)}" y1="${ry - 7}" x2="${x(entry.at).toFixed(1)}" y2="${ry + 7}" stroke="#c62828" stroke-width="2"><title>${escape(entry.error ?? "failed")}</title></line>`,
    );
  parts.push(
    `<text x="${left}" y="${ry + 24}" fill="#555">${requests.length - failed.length}/${requests.length} requests answered (${requests.length ? (((requests.length - failed.length) / requests.length) * 100).toFixed(2) : "100"}%); red ticks: failures</text>`,
  );
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
