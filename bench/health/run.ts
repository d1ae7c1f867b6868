// Benchmark 1 — the etcd health check with a dead or a hung member.
//
// A real 5-member TLS etcd (Debian's etcd, started by the test harness). One "round" is what every reconcile
// does to look at a workload cluster's etcd: take the cluster's etcd client from ClusterWorkloadAccess.etcd()
// (the client kept per cluster between reconciles, with Quorum's own certificate issued from the cluster's
// `<cluster>-etcd` CA), observeEtcd() — member list, every member's status in parallel with the per-call
// deadline, alarms — and close() it (which hands it back to the pool). Rounds are timed with all members
// healthy, with one follower killed (SIGKILL: its port refuses), and with one follower paused (SIGSTOP: its
// port accepts but nothing answers, like a hung machine). Targets: healthy round < 50 ms; a round with a dead
// or hung member ≤ 1.2× the per-call deadline. A comparison series opens a fresh client per round (what
// reconciles did before the pool: TLS handshakes to every member in every round).
import { setTimeout as sleep } from "node:timers/promises";
import type { Cluster } from "../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import { EtcdClientCertificates } from "../../src/adapters/etcd/credentials.ts";
import type { EtcdClusterClient } from "../../src/adapters/etcd/types.ts";
import { observeEtcd } from "../../src/controller/etcd-view.ts";
import { silentLogger } from "../../src/adapters/kube/log.ts";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import { startEtcdCluster, type EtcdCluster, type EtcdMember } from "../../test/env/index.ts";
import { MemorySecretStore } from "../../test/unit/adapters/memory-secret-store.ts";
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
  /** The series a reconcile's round matches, which the verdict is judged on. */
  controllerPath: "reusedClient";
  /**
   * reusedClient: the controller's path, the per-cluster client kept by ClusterWorkloadAccess (one lease per
   * round); freshClient: a client opened and closed per round, for comparison.
   */
  scenarios: Record<Scenario, { freshClient: SeriesResult; reusedClient: SeriesResult }>;
  targets: { healthyP95BelowMs: number; faultMaxRatio: number };
  verdict: { healthyMet: boolean; killedMet: boolean; pausedMet: boolean };
}

async function main(): Promise<void> {
  const result = startResult(
    NAME,
    "etcd health round (observeEtcd: member list + per-member status + alarms) on a real 5-member TLS etcd, healthy / one member killed / one member paused",
    {
      deadlineMs,
      healthyRounds,
      faultRounds,
      members: 5,
    },
  );
  progress(
    NAME,
    `starting a 5-member TLS etcd (deadline ${deadlineMs} ms, ${healthyRounds} healthy and ${faultRounds} fault rounds per series)`,
  );
  const cluster = await startEtcdCluster({ members: 5, tls: true, namePrefix: "bench-" });
  let access: ClusterWorkloadAccess | undefined;
  try {
    const ca = cluster.ca;
    if (!ca)
      throw new Error(
        "etcd bench cluster: started without TLS, so there is no CA to issue Quorum's client certificate from",
      );
    // The user brings the etcd CA as the cluster's `<cluster>-etcd` Secret; Quorum issues its own client certificate.
    const secrets = new MemorySecretStore();
    secrets.seed("bench", "health-etcd", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    access = new ClusterWorkloadAccess({ secrets, etcdCallDeadlineMs: deadlineMs, log: silentLogger });
    const credentials = await new EtcdClientCertificates(secrets).get("bench", "health", new Date());
    const open = () =>
      createEtcdClusterClient({
        endpoints: cluster.endpoints(),
        credentials,
        callDeadlineMs: deadlineMs,
        context: "etcd of cluster bench/health",
      });
    const kept = keptClient(access, cluster);
    await warmUp(open, kept);

    const healthy = await measureBoth(open, kept, healthyRounds, undefined);
    progress(
      NAME,
      `healthy: kept client p50 ${healthy.reusedClient.roundMs.p50} ms, p95 ${healthy.reusedClient.roundMs.p95} ms; fresh client p50 ${healthy.freshClient.roundMs.p50} ms, p95 ${healthy.freshClient.roundMs.p95} ms`,
    );

    const victimKilled = await follower(cluster, open);
    await victimKilled.member.kill();
    const killed = await measureBoth(open, kept, faultRounds, victimKilled.id);
    progress(
      NAME,
      `one killed: kept client max ${killed.reusedClient.roundMs.max} ms (${killed.reusedClient.ratioToDeadline.max}× deadline), fresh max ${killed.freshClient.roundMs.max} ms`,
    );
    await victimKilled.member.start();
    // Through the kept client: a member that comes back must be seen by the controller's client, not only by a new one.
    await waitAllHealthy(kept, cluster);

    const victimPaused = await follower(cluster, open);
    await victimPaused.member.pause();
    const paused = await measureBoth(open, kept, faultRounds, victimPaused.id);
    victimPaused.member.resume();
    progress(
      NAME,
      `one paused: kept client max ${paused.reusedClient.roundMs.max} ms (${paused.reusedClient.ratioToDeadline.max}× deadline), fresh max ${paused.freshClient.roundMs.max} ms`,
    );

    const results: HealthResults = {
      deadlineMs,
      members: 5,
      controllerPath: "reusedClient",
      scenarios: { healthy, "one-killed": killed, "one-paused": paused },
      targets: { healthyP95BelowMs: 50, faultMaxRatio: 1.2 },
      verdict: {
        healthyMet: healthy.reusedClient.roundMs.p95 < 50,
        killedMet: killed.reusedClient.ratioToDeadline.max <= 1.2,
        pausedMet: paused.reusedClient.ratioToDeadline.max <= 1.2,
      },
    };
    const notes = [
      "The killed and the paused member are followers, so no election runs during the rounds; a killed leader adds etcd's election (about 1 s with default flags) to the rounds that follow it, which is etcd's time, not the health check's.",
      "reusedClient is what a reconcile does: ClusterWorkloadAccess.etcd() leases the client kept for the cluster (connections stay open between reconciles; a member whose call failed gets a new connection on its next call), and close() hands it back. freshClient opens and closes a client per round (TLS handshakes to every member each round), as reconciles did before, for comparison. The verdict is judged on reusedClient.",
    ];
    if (!results.verdict.healthyMet)
      notes.push(
        `Healthy p95 ${healthy.reusedClient.roundMs.p95} ms with the kept client misses the 50 ms target (fresh client: ${healthy.freshClient.roundMs.p95} ms); see machineAtStart.loadavg: the machine was likely loaded.`,
      );
    const path = result.finish(results, notes);
    progress(NAME, `wrote ${path}`);
  } finally {
    await access?.closeAll();
    await cluster.stop();
  }
}

/** One reconcile's hold on the cluster's kept etcd client: etcd() then close(), as src/controller/reconcile.ts does. */
type KeptClient = <T>(use: (client: EtcdClusterClient) => Promise<T>) => Promise<T>;

function keptClient(access: ClusterWorkloadAccess, cluster: EtcdCluster): KeptClient {
  const controlPlane = {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
    kind: "QuorumControlPlane",
    metadata: { name: "health", namespace: "bench", uid: "bench-health" },
    spec: {},
  } as unknown as QuorumControlPlane;
  const workloadCluster: Cluster = { metadata: { name: "health", namespace: "bench" }, spec: {} };
  return async (use) => {
    const client = await access.etcd(controlPlane, workloadCluster, cluster.endpoints());
    try {
      return await use(client);
    } finally {
      await client.close();
    }
  };
}

async function warmUp(open: () => EtcdClusterClient, kept: KeptClient): Promise<void> {
  // The first rounds pay for module loading and JIT (and the kept client's first connections, which a
  // controller pays once per cluster); they say nothing about the health check.
  for (let i = 0; i < 3; i++) {
    const client = open();
    await observeEtcd(client);
    await client.close();
    await kept(observeEtcd);
  }
}

async function measureBoth(
  open: () => EtcdClusterClient,
  kept: KeptClient,
  rounds: number,
  faultyId: string | undefined,
) {
  const freshClient = await measure(rounds, faultyId, async (round) => {
    const client = open();
    try {
      return await round(client);
    } finally {
      await client.close();
    }
  });
  const reusedClient = await measure(rounds, faultyId, kept);
  return { freshClient, reusedClient };
}

/** Whether a round named exactly the faulty member (or none) unreachable. */
type Round = (client: EtcdClusterClient) => Promise<boolean>;

/**
 * Times each round from getting the client to closing it, like a reconcile's look at etcd: for the kept client
 * that includes taking the lease and the credentials check behind it; for a fresh one, opening and closing it.
 */
async function measure(
  rounds: number,
  faultyId: string | undefined,
  withClient: (round: Round) => Promise<boolean>,
): Promise<SeriesResult> {
  const samples: number[] = [];
  let correctRounds = 0;
  const round: Round = async (client) => {
    const observed = await observeEtcd(client);
    return (
      observed.ok &&
      observed.observation.statuses.every((status) => status.reachable === (status.memberId !== faultyId))
    );
  };
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    const correct = await withClient(round);
    const ms = performance.now() - started;
    samples.push(Math.round(ms * 10) / 10);
    if (correct) correctRounds++;
    await sleep(50);
  }
  const summary = rounded(summarize(samples));
  const ratio = (value: number) => Math.round((value / deadlineMs) * 1000) / 1000;
  return {
    roundMs: summary,
    ratioToDeadline: { p50: ratio(summary.p50), p95: ratio(summary.p95), max: ratio(summary.max) },
    correctRounds,
    rounds,
    samplesMs: samples,
  };
}

/** A member that is not the leader, with its etcd ID. */
async function follower(
  cluster: EtcdCluster,
  open: () => EtcdClusterClient,
): Promise<{ member: EtcdMember; id: string }> {
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

async function waitAllHealthy(kept: KeptClient, cluster: EtcdCluster): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const observed = await kept(observeEtcd);
    if (
      observed.ok &&
      observed.observation.statuses.length === cluster.members.length &&
      observed.observation.statuses.every((status) => status.reachable)
    )
      return;
    await sleep(250);
  }
  throw new Error("etcd bench cluster: the restarted member did not turn healthy within 60 s");
}

main().catch((error: unknown) => {
  process.stderr.write(`bench ${NAME}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
