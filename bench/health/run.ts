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
// reconciles did before the pool: TLS handshakes to every member in every round). An APIServerProxy series
// (spec.etcd.access: APIServerProxy, issue 18; apiserver-proxy.ts) measures the same rounds through a real
// kube-apiserver's pods/portforward and a kubelet port-forward server per member, with the same targets.
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { Cluster } from "../../src/api/capi.ts";
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
import {
  benchControlPlane,
  keptClient,
  startApiServerProxyWorld,
  type ApiServerProxyWorld,
  type KeptClient,
} from "./apiserver-proxy.ts";

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
  verdict: Verdict;
  /**
   * The same rounds with spec.etcd.access: APIServerProxy: the kept client's connections are port-forwards through
   * a real kube-apiserver to a kubelet port-forward server per member. `scenarios` and `verdict` above are Direct.
   */
  apiServerProxy: {
    scenarios: Record<Scenario, { reusedClient: SeriesResult }>;
    verdict: Verdict;
    /**
     * Port-forwards the kubelets opened during the healthy rounds: 0 means every round reused the kept client's
     * connections (one port-forward per member, opened in the warm-up).
     */
    healthyRoundsPortForwards: number;
    /** Lines the killed member's kubelet logged during its rounds (what the tunnel got when the dial failed). */
    killedMemberKubeletLog: string[];
  };
  /** 1-minute load average sampled every 5 s during the run (the machine is shared). */
  loadAverage1m: { min: number; mean: number; max: number; samples: number };
}

interface Verdict {
  healthyMet: boolean;
  killedMet: boolean;
  pausedMet: boolean;
}

async function main(): Promise<void> {
  const result = startResult(
    NAME,
    "etcd health round (observeEtcd: member list + per-member status + alarms) on a real 5-member TLS etcd, healthy / one member killed / one member paused, reached directly and through a real kube-apiserver's pods/portforward (APIServerProxy)",
    {
      deadlineMs,
      healthyRounds,
      faultRounds,
      members: 5,
    },
  );
  const load = sampleLoad();
  progress(
    NAME,
    `starting a 5-member TLS etcd (deadline ${deadlineMs} ms, ${healthyRounds} healthy and ${faultRounds} fault rounds per series)`,
  );
  const cluster = await startEtcdCluster({ members: 5, tls: true, namePrefix: "bench-" });
  let access: ClusterWorkloadAccess | undefined;
  let proxy: ApiServerProxyWorld | undefined;
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
    const workloadCluster: Cluster = { metadata: { name: "health", namespace: "bench" }, spec: {} };
    // Direct set explicitly: the default depends on the bootstrap template (kubeadm: APIServerProxy), which this
    // stand-in QuorumControlPlane has none of; without it ClusterWorkloadAccess.etcd() cannot pick a mode.
    const kept = keptClient(access, benchControlPlane("health", { etcd: { access: "Direct" } }), workloadCluster, () =>
      cluster.endpoints(),
    );
    progress(
      NAME,
      "starting kube-apiserver and a kubelet port-forward server per member for the APIServerProxy series",
    );
    proxy = await startApiServerProxyWorld(cluster, deadlineMs);
    await warmUp(open, kept, proxy.kept);

    const results: HealthResults = {
      ...(await measureScenarios(cluster, open, kept, proxy)),
      loadAverage1m: load.stop(),
    };
    const path = result.finish(results, notesFor(results));
    progress(NAME, `wrote ${path}`);
  } finally {
    load.stop();
    await access?.closeAll();
    await proxy?.stop();
    await cluster.stop();
  }
}

/** The three scenarios, each measured Direct (fresh and kept client) then through APIServerProxy (kept client). */
async function measureScenarios(
  cluster: EtcdCluster,
  open: () => EtcdClusterClient,
  kept: KeptClient,
  proxy: ApiServerProxyWorld,
): Promise<Omit<HealthResults, "loadAverage1m">> {
  const tunnelled = proxy.kept;
  const healthy = await measureBoth(open, kept, healthyRounds, undefined);
  const forwardsBefore = proxy.portForwardsOpened();
  const proxyHealthy = await measure(healthyRounds, undefined, tunnelled);
  const healthyRoundsPortForwards = proxy.portForwardsOpened() - forwardsBefore;
  progress(
    NAME,
    `healthy: kept client p50 ${healthy.reusedClient.roundMs.p50} ms, p95 ${healthy.reusedClient.roundMs.p95} ms; fresh client p50 ${healthy.freshClient.roundMs.p50} ms, p95 ${healthy.freshClient.roundMs.p95} ms; APIServerProxy kept client p50 ${proxyHealthy.roundMs.p50} ms, p95 ${proxyHealthy.roundMs.p95} ms`,
  );

  const victimKilled = await follower(cluster, open);
  await victimKilled.member.kill();
  const killedLogFrom = proxy.kubeletLog(victimKilled.member.address).length;
  const killed = await measureBoth(open, kept, faultRounds, victimKilled.id);
  const proxyKilled = await measure(faultRounds, victimKilled.id, tunnelled);
  const killedMemberKubeletLog = proxy.kubeletLog(victimKilled.member.address).slice(killedLogFrom);
  progress(
    NAME,
    `one killed: kept client max ${killed.reusedClient.roundMs.max} ms (${killed.reusedClient.ratioToDeadline.max}× deadline), fresh max ${killed.freshClient.roundMs.max} ms; APIServerProxy max ${proxyKilled.roundMs.max} ms (${proxyKilled.ratioToDeadline.max}× deadline)`,
  );
  await victimKilled.member.start();
  // Through the kept clients: a member that comes back must be seen by the controller's client, not only by a new one.
  await waitAllHealthy(kept, cluster);
  await waitAllHealthy(tunnelled, cluster);

  const victimPaused = await follower(cluster, open);
  await victimPaused.member.pause();
  const paused = await measureBoth(open, kept, faultRounds, victimPaused.id);
  const proxyPaused = await measure(faultRounds, victimPaused.id, tunnelled);
  victimPaused.member.resume();
  progress(
    NAME,
    `one paused: kept client max ${paused.reusedClient.roundMs.max} ms (${paused.reusedClient.ratioToDeadline.max}× deadline), fresh max ${paused.freshClient.roundMs.max} ms; APIServerProxy max ${proxyPaused.roundMs.max} ms (${proxyPaused.ratioToDeadline.max}× deadline)`,
  );

  return {
    deadlineMs,
    members: 5,
    controllerPath: "reusedClient",
    scenarios: { healthy, "one-killed": killed, "one-paused": paused },
    targets: { healthyP95BelowMs: 50, faultMaxRatio: 1.2 },
    verdict: verdictOf(healthy.reusedClient, killed.reusedClient, paused.reusedClient),
    apiServerProxy: {
      scenarios: {
        healthy: { reusedClient: proxyHealthy },
        "one-killed": { reusedClient: proxyKilled },
        "one-paused": { reusedClient: proxyPaused },
      },
      verdict: verdictOf(proxyHealthy, proxyKilled, proxyPaused),
      healthyRoundsPortForwards,
      killedMemberKubeletLog: killedMemberKubeletLog.slice(0, 40),
    },
  };
}

function notesFor(results: HealthResults): string[] {
  const healthy = results.scenarios.healthy;
  const proxyHealthy = results.apiServerProxy.scenarios.healthy.reusedClient;
  const healthyRoundsPortForwards = results.apiServerProxy.healthyRoundsPortForwards;
  const notes = [
    "The killed and the paused member are followers, so no election runs during the rounds; a killed leader adds etcd's election (about 1 s with default flags) to the rounds that follow it, which is etcd's time, not the health check's.",
    "reusedClient is what a reconcile does: ClusterWorkloadAccess.etcd() leases the client kept for the cluster (connections stay open between reconciles; a member whose call failed gets a new connection on its next call), and close() hands it back. freshClient opens and closes a client per round (TLS handshakes to every member each round), as reconciles did before, for comparison. The verdict is judged on reusedClient.",
    "APIServerProxy: the same etcd, reached only through a real kube-apiserver (pods/portforward to kube-system/etcd-<node>) and a kubelet port-forward server per member (bin/quorum-kubelet-portforward, the kubelet's own /portForward code), all on this machine's loopback, interleaved with the Direct series under the same load. Only the kept client is measured: a fresh client per round would also open a fresh tunnel (a WebSocket upgrade through the API server per member connection), which no reconcile does.",
  ];
  if (!results.apiServerProxy.verdict.healthyMet)
    notes.push(
      `APIServerProxy healthy p95 ${proxyHealthy.roundMs.p95} ms misses the 50 ms target (Direct: ${healthy.reusedClient.roundMs.p95} ms; ${healthyRoundsPortForwards} port-forwards opened in ${healthyRounds} rounds: ${healthyRoundsPortForwards === 0 ? "the connections were kept" : "some connections were opened again"}). See "What the proxy path costs" in bench/README.md for where the time goes.`,
    );
  if (!results.verdict.healthyMet)
    notes.push(
      `Healthy p95 ${healthy.reusedClient.roundMs.p95} ms with the kept client misses the 50 ms target (fresh client: ${healthy.freshClient.roundMs.p95} ms); see loadAverage1m: the machine was likely loaded.`,
    );
  return notes;
}

function verdictOf(healthy: SeriesResult, killed: SeriesResult, paused: SeriesResult): Verdict {
  return {
    healthyMet: healthy.roundMs.p95 < 50,
    killedMet: killed.ratioToDeadline.max <= 1.2,
    pausedMet: paused.ratioToDeadline.max <= 1.2,
  };
}

/** The 1-minute load average every 5 s: the benchmark machine is shared, and the figures mean little without it. */
function sampleLoad(): { stop(): { min: number; mean: number; max: number; samples: number } } {
  const samples = [loadavg()[0]];
  const timer = setInterval(() => samples.push(loadavg()[0]), 5_000);
  timer.unref();
  const round2 = (value: number) => Math.round(value * 100) / 100;
  return {
    stop() {
      clearInterval(timer);
      const sum = samples.reduce((total, value) => total + value, 0);
      return {
        min: round2(Math.min(...samples)),
        mean: round2(sum / samples.length),
        max: round2(Math.max(...samples)),
        samples: samples.length,
      };
    },
  };
}

async function warmUp(open: () => EtcdClusterClient, kept: KeptClient, tunnelled: KeptClient): Promise<void> {
  // The first rounds pay for module loading and JIT (and the kept clients' first connections and port-forwards,
  // which a controller pays once per cluster); they say nothing about the health check.
  for (let i = 0; i < 3; i++) {
    const client = open();
    await observeEtcd(client);
    await client.close();
    await kept(observeEtcd);
    await tunnelled(observeEtcd);
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
