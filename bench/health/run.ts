// Benchmark 1 — the etcd health check with a dead or a hung member.
//
// A real 5-member TLS etcd (Debian's etcd, started by the test harness). One "round" is what every reconcile
// does to look at a workload cluster's etcd: open a client (a fresh one, as reconcile does, so TLS handshakes
// are included), observeEtcd() — member list, every member's status in parallel with the per-call deadline,
// alarms — and close it. Rounds are timed with all members healthy, with one follower killed (SIGKILL: its
// port refuses), and with one follower paused (SIGSTOP: its port accepts but nothing answers, like a hung
// machine). Targets: healthy round < 50 ms; a round with a dead or hung member ≤ 1.2× the per-call deadline.
// A second series reuses one client across rounds (warm connections), to separate the handshake cost.
import { setTimeout as sleep } from "node:timers/promises";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import type { EtcdClientCredentials, EtcdClusterClient } from "../../src/adapters/etcd/types.ts";
import { observeEtcd } from "../../src/adapters/etcd/view.ts";
import { startEtcdCluster, type EtcdCluster, type EtcdMember } from "../../test/env/index.ts";
import { progress, startResult } from "../lib/results.ts";
import { rounded, summarize, type Summary } from "../lib/stats.ts";

const NAME = "health";
const deadlineMs = Number(process.env.BENCH_HEALTH_DEADLINE_MS ?? 2000);
const healthyRounds = Number(process.env.BENCH_HEALTH_ROUNDS ?? 40);
// A round with a hung member lasts one deadline, so fewer of them keep the run short.
const faultRounds = Number(process.env.BENCH_HEALTH_FAULT_ROUNDS ?? Math.max(5, Math.round(healthyRounds * 0.4)));

type Scenario = "healthy" | "one-killed" | "one-paused";

interface SeriesResult {
  /** Round times in ms. */
  roundMs: Summary;
  /** p50/p95/max of the round time divided by the per-call deadline. */
  ratioToDeadline: { p50: number; p95: number; max: number };
  /** Rounds whose observation named exactly the faulty member unreachable and every other one reachable. */
  correctRounds: number;
  rounds: number;
  /** Every round time, for the charts. */
  samplesMs: number[];
}

interface HealthResults {
  deadlineMs: number;
  members: number;
  scenarios: Record<Scenario, { freshClient: SeriesResult; reusedClient: SeriesResult }>;
  targets: { healthyP95BelowMs: number; faultMaxRatio: number };
  verdict: { healthyMet: boolean; killedMet: boolean; pausedMet: boolean };
}

async function main(): Promise<void> {
  const result = startResult(NAME, "etcd health round (observeEtcd: member list + per-member status + alarms) on a real 5-member TLS etcd, healthy / one member killed / one member paused", {
    deadlineMs,
    healthyRounds,
    faultRounds,
    members: 5,
  });
  progress(NAME, `starting a 5-member TLS etcd (deadline ${deadlineMs} ms, ${healthyRounds} healthy and ${faultRounds} fault rounds per series)`);
  const cluster = await startEtcdCluster({ members: 5, tls: true, namePrefix: "bench-" });
  try {
    const credentials: EtcdClientCredentials = { caPem: cluster.credentials.caPem, certPem: cluster.credentials.certPem, keyPem: cluster.credentials.keyPem };
    const open = () => createEtcdClusterClient({ endpoints: cluster.endpoints(), credentials, callDeadlineMs: deadlineMs, context: "etcd of cluster bench/health" });
    await warmUp(open);

    const healthy = await measureBoth(open, healthyRounds, undefined);
    progress(NAME, `healthy: fresh p50 ${healthy.freshClient.roundMs.p50} ms, reused p50 ${healthy.reusedClient.roundMs.p50} ms`);

    const victimKilled = await follower(cluster, open);
    await victimKilled.member.kill();
    const killed = await measureBoth(open, faultRounds, victimKilled.id);
    progress(NAME, `one killed: fresh max ${killed.freshClient.roundMs.max} ms (${killed.freshClient.ratioToDeadline.max}× deadline)`);
    await victimKilled.member.start();
    await waitAllHealthy(open, cluster);

    const victimPaused = await follower(cluster, open);
    victimPaused.member.pause();
    const paused = await measureBoth(open, faultRounds, victimPaused.id);
    victimPaused.member.resume();
    progress(NAME, `one paused: fresh max ${paused.freshClient.roundMs.max} ms (${paused.freshClient.ratioToDeadline.max}× deadline)`);

    const results: HealthResults = {
      deadlineMs,
      members: 5,
      scenarios: { healthy, "one-killed": killed, "one-paused": paused },
      targets: { healthyP95BelowMs: 50, faultMaxRatio: 1.2 },
      verdict: {
        healthyMet: healthy.freshClient.roundMs.p95 < 50,
        killedMet: killed.freshClient.ratioToDeadline.max <= 1.2,
        pausedMet: paused.freshClient.ratioToDeadline.max <= 1.2,
      },
    };
    const notes = [
      "The killed and the paused member are followers, so no election runs during the rounds; a killed leader adds etcd's election (about 1 s with default flags) to the rounds that follow it, which is etcd's time, not the health check's.",
      "freshClient is what a reconcile does (a client per reconcile, TLS handshakes included); reusedClient keeps connections open across rounds.",
    ];
    if (!results.verdict.healthyMet) notes.push(`Healthy p95 ${healthy.freshClient.roundMs.p95} ms misses the 50 ms target: a fresh client sets up 5 gRPC channels with a TLS handshake each per round; the reused client's p95 is ${healthy.reusedClient.roundMs.p95} ms${healthy.reusedClient.roundMs.p95 < 50 ? "" : " (also over: the machine was loaded, see machineAtStart.loadavg)"}. Keeping one client per cluster between reconciles (dropping it when a member's endpoint fails) would remove the handshakes.`);
    const path = result.finish(results, notes);
    progress(NAME, `wrote ${path}`);
  } finally {
    await cluster.stop();
  }
}

async function warmUp(open: () => EtcdClusterClient): Promise<void> {
  // The first rounds pay for module loading and JIT; they say nothing about the health check.
  for (let i = 0; i < 3; i++) {
    const client = open();
    await observeEtcd(client);
    await client.close();
  }
}

async function measureBoth(open: () => EtcdClusterClient, rounds: number, faultyId: string | undefined) {
  const freshClient = await measure(rounds, faultyId, async (round) => {
    const client = open();
    try {
      return await round(client);
    } finally {
      await client.close();
    }
  });
  const reused = open();
  try {
    await observeEtcd(reused);
    const reusedClient = await measure(rounds, faultyId, (round) => round(reused));
    return { freshClient, reusedClient };
  } finally {
    await reused.close();
  }
}

type Round = (client: EtcdClusterClient) => Promise<{ ms: number; correct: boolean }>;

async function measure(rounds: number, faultyId: string | undefined, withClient: (round: Round) => Promise<{ ms: number; correct: boolean }>): Promise<SeriesResult> {
  const samples: number[] = [];
  let correctRounds = 0;
  const round: Round = async (client) => {
    const started = performance.now();
    const observed = await observeEtcd(client);
    const ms = performance.now() - started;
    let correct = false;
    if (observed.ok) {
      correct = observed.observation.statuses.every((status) => status.reachable === (status.memberId !== faultyId));
    }
    return { ms, correct };
  };
  for (let i = 0; i < rounds; i++) {
    const { ms, correct } = await withClient(round);
    samples.push(Math.round(ms * 10) / 10);
    if (correct) correctRounds++;
    await sleep(50);
  }
  const summary = rounded(summarize(samples));
  const ratio = (value: number) => Math.round((value / deadlineMs) * 1000) / 1000;
  return { roundMs: summary, ratioToDeadline: { p50: ratio(summary.p50), p95: ratio(summary.p95), max: ratio(summary.max) }, correctRounds, rounds, samplesMs: samples };
}

/** A member that is not the leader, with its etcd ID. */
async function follower(cluster: EtcdCluster, open: () => EtcdClusterClient): Promise<{ member: EtcdMember; id: string }> {
  const client = open();
  try {
    const observed = await observeEtcd(client);
    if (!observed.ok) throw new Error(`etcd bench cluster: no member answered (${observed.error})`);
    const status = observed.observation.statuses.find((candidate) => candidate.reachable && !candidate.leader);
    const member = observed.observation.members.find((candidate) => candidate.id === status?.memberId);
    const harnessMember = cluster.members.find((candidate) => member?.peerURLs.includes(candidate.peerURL));
    if (!status || !harnessMember) throw new Error("etcd bench cluster: found no reachable follower to stop");
    return { member: harnessMember, id: status.memberId };
  } finally {
    await client.close();
  }
}

async function waitAllHealthy(open: () => EtcdClusterClient, cluster: EtcdCluster): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const client = open();
    try {
      const observed = await observeEtcd(client);
      if (observed.ok && observed.observation.statuses.length === cluster.members.length && observed.observation.statuses.every((status) => status.reachable)) return;
    } finally {
      await client.close();
    }
    await sleep(250);
  }
  throw new Error("etcd bench cluster: the restarted member did not turn healthy within 60 s");
}

main().catch((error: unknown) => {
  process.stderr.write(`bench ${NAME}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
