// Benchmark — what watching real etcd costs the controller (issue 19).
//
// The scale benchmark's workload etcd is simulated inside the controller process, so its idle figure leaves out
// the TLS gRPC rounds a real controller makes to every member of every cluster every poll interval. Here real
// etcd members (the version Kubernetes 1.36 pins, on loopback, TLS) are watched the way a reconcile does:
// ClusterWorkloadAccess.etcd() leases the client kept for the cluster, observeEtcd() (member list, every member's
// status, alarms), close() hands it back. This process's own CPU (process.cpuUsage: user + system, so TLS and gRPC
// included; the etcd servers are other processes) is measured in three windows: nothing open (the baseline),
// many clusters' clients open and unused (what kept connections cost between rounds: stand-in clusters, 30 per
// real one, over the same members, so that the cost stands out of the noise), and rounds paced evenly
// (the cost per round). A fourth window opens a fresh client per round, the price of a round after the pool has
// closed an idle client (it does after 2 minutes unused). From these: the idle cost implied at 1,000 and 2,000
// clusters at the default --etcd-poll-interval, reported beside the scale benchmark's simulated figure.
import { setTimeout as sleep } from "node:timers/promises";
import type { Cluster } from "../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import { EtcdClientCertificates } from "../../src/adapters/etcd/credentials.ts";
import { silentLogger } from "../../src/adapters/kube/log.ts";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import { observeEtcd } from "../../src/controller/etcd-view.ts";
import { DEFAULT_ETCD_IDLE_POLL_SECONDS, DEFAULT_ETCD_POLL_SECONDS } from "../../src/flags.ts";
import { startEtcdCluster, type EtcdCluster } from "../../test/env/index.ts";
import { builtBinary } from "../../test/env/tools.ts";
import { MemorySecretStore } from "../../test/unit/adapters/memory-secret-store.ts";
import { progress, startResult } from "../lib/results.ts";

const NAME = "etcd-cost";
const clusters = Number(process.env.BENCH_ETCD_COST_CLUSTERS ?? 7);
const membersPerCluster = 3;
const windowSeconds = Number(process.env.BENCH_ETCD_COST_WINDOW_S ?? 40);
/** Rounds per second in the paced windows: far more than 7 clusters would make, to measure a per-round cost. */
const roundsPerSecond = Number(process.env.BENCH_ETCD_COST_RATE ?? 20);
/** The controller's default --etcd-poll-interval and --etcd-idle-poll-interval (src/flags.ts). */
const defaultPollSeconds = DEFAULT_ETCD_POLL_SECONDS;
const defaultIdlePollSeconds = DEFAULT_ETCD_IDLE_POLL_SECONDS;
const deadlineMs = 2_000;
/**
 * Kept clients per etcd cluster in the kept-idle window: each a stand-in cluster of its own (own pool entry, own
 * connections to the same members), so that 7 clusters hold 210 idle clients. With 7 clients the difference from
 * the baseline was a couple of mCPU either way, which times 2,000 clusters is noise reported as cost.
 */
const idleClientsPerCluster = Number(process.env.BENCH_ETCD_COST_IDLE_CLIENTS ?? 30);

export interface EtcdCostResults {
  etcdBinary: string;
  clusters: number;
  members: number;
  windowSeconds: number;
  roundsPerSecond: number;
  /** The process with nothing open: timers, GC. Subtracted from the other windows. */
  baselineMilliCores: number;
  /** Each cluster's kept client open (connections up, keepalives), no rounds: per cluster. */
  keptIdleMilliCoresPerCluster: number;
  /** Kept clients open in the kept-idle window (stand-in clusters over the same members). */
  keptIdleClients: number;
  /** The whole process in that window, to set beside the baseline (the per-cluster figure is clamped at 0). */
  keptIdleMilliCores: number;
  /** CPU milliseconds per round with the kept client, beyond the kept-idle cost. */
  keptRoundCpuMs: number;
  /** CPU milliseconds per round when each round opens and closes its client (TLS handshakes to every member). */
  freshRoundCpuMs: number;
  keptRoundsDone: number;
  freshRoundsDone: number;
  /** Rounds whose observation failed (should be 0: every member is up). */
  failedRounds: number;
  /** Per poll interval: mCPU per cluster polled that often with its client kept (kept-idle + rounds), and totals. */
  implied: Array<{
    pollSeconds: number;
    milliCoresPerCluster: number;
    clusters: Array<{ clusters: number; milliCores: number }>;
  }>;
}

function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** Collects garbage before a window, when run with --expose-gc (bench/run.ts does), so none is left over from the last. */
function collect(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Average mCPU of this process over `seconds` with nothing scheduled by the benchmark. */
async function idleWindow(seconds: number): Promise<number> {
  collect();
  const startCpu = cpuMs();
  const started = performance.now();
  await sleep(seconds * 1000);
  return ((cpuMs() - startCpu) / (performance.now() - started)) * 1000;
}

/** Runs `round` evenly paced at `rate` per second for `seconds`; returns CPU ms used and rounds done. */
async function pacedWindow(
  seconds: number,
  rate: number,
  round: (index: number) => Promise<boolean>,
): Promise<{ cpuMs: number; wallMs: number; rounds: number; failed: number }> {
  collect();
  const startCpu = cpuMs();
  const started = performance.now();
  const interval = 1000 / rate;
  const pending: Array<Promise<void>> = [];
  let failed = 0;
  let index = 0;
  for (; performance.now() - started < seconds * 1000; index++) {
    const due = started + index * interval;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      round(index).then(
        (ok) => {
          if (!ok) failed++;
        },
        () => {
          failed++;
        },
      ),
    );
  }
  await Promise.all(pending);
  return { cpuMs: cpuMs() - startCpu, wallMs: performance.now() - started, rounds: index, failed };
}

async function main(): Promise<void> {
  const etcdBinary = builtBinary("etcd-3.6");
  const result = startResult(
    NAME,
    `controller CPU for watching real etcd: ${clusters} clusters × ${membersPerCluster} TLS members (etcd 3.6, loopback), kept clients idle and paced observeEtcd rounds, fresh-client rounds for comparison`,
    { clusters, membersPerCluster, windowSeconds, roundsPerSecond, deadlineMs, defaultPollSeconds },
  );
  const started: EtcdCluster[] = [];
  const secrets = new MemorySecretStore();
  // As the controller wires it: every connection that answered is watched for closing (nothing closes here).
  const access = new ClusterWorkloadAccess({
    secrets,
    etcdCallDeadlineMs: deadlineMs,
    log: silentLogger,
    onEtcdConnectionLost: () => {},
  });
  try {
    for (let i = 0; i < clusters; i++) {
      progress(NAME, `starting etcd cluster ${i + 1}/${clusters} (${membersPerCluster} TLS members, etcd 3.6)`);
      const cluster = await startEtcdCluster({
        members: membersPerCluster,
        tls: true,
        namePrefix: `cost${i}-`,
        binary: etcdBinary,
      });
      started.push(cluster);
      const ca = cluster.ca;
      if (!ca) throw new Error(`etcd cost bench: cluster ${i} started without TLS, so there is no CA`);
      for (const name of [`cost${i}`, ...Array.from({ length: idleClientsPerCluster }, (_, k) => `cost${i}-idle${k}`)])
        secrets.seed("bench", `${name}-etcd`, { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    }
    const targets = started.map((cluster, i) => ({
      cluster,
      controlPlane: {
        apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
        kind: "QuorumControlPlane",
        metadata: { name: `cost${i}`, namespace: "bench", uid: `bench-cost-${i}` },
        // The members are dialled at their loopback addresses (a stand-in without a machine template has no flavour).
        spec: { etcd: { access: "Direct" } },
      } as unknown as QuorumControlPlane,
      workload: { metadata: { name: `cost${i}`, namespace: "bench" }, spec: {} } as Cluster,
    }));
    const allUp = (observed: Awaited<ReturnType<typeof observeEtcd>>) =>
      observed.ok &&
      observed.observation.statuses.length === membersPerCluster &&
      observed.observation.statuses.every((status) => status.reachable);
    // Stand-ins for the kept-idle window: a cluster name of their own each, over the same members.
    const standIns = targets.flatMap((target, i) =>
      Array.from({ length: idleClientsPerCluster }, (_, k) => ({
        ...target,
        workload: { metadata: { name: `cost${i}-idle${k}`, namespace: "bench" }, spec: {} } as Cluster,
      })),
    );
    const roundOn = async (target: (typeof targets)[number]) => {
      const client = await access.etcd(target.controlPlane, target.workload, target.cluster.endpoints());
      try {
        return allUp(await observeEtcd(client));
      } finally {
        await client.close();
      }
    };
    const keptRound = (index: number) => roundOn(targets[index % targets.length] as (typeof targets)[number]);
    const credentials = await Promise.all(
      targets.map((target) =>
        new EtcdClientCertificates(secrets).get("bench", target.workload.metadata.name, new Date()),
      ),
    );
    const freshRound = async (index: number) => {
      const target = targets[index % targets.length] as (typeof targets)[number];
      const client = createEtcdClusterClient({
        endpoints: target.cluster.endpoints(),
        credentials: credentials[index % targets.length] as (typeof credentials)[number],
        callDeadlineMs: deadlineMs,
        context: `etcd of cluster bench/${target.workload.metadata.name}`,
      });
      try {
        return allUp(await observeEtcd(client));
      } finally {
        await client.close();
      }
    };

    // Warm-up: module loading, JIT, the kept clients' first connections; then let GC settle.
    for (let i = 0; i < targets.length * 5; i++) await keptRound(i);
    for (let i = 0; i < targets.length * 3; i++) await freshRound(i);
    await access.closeAll();
    const idleSeconds = Math.max(10, Math.round(windowSeconds / 2));
    progress(NAME, `baseline: ${idleSeconds} s with no client open`);
    const baseline = await idleWindow(idleSeconds);
    for (const standIn of standIns) await roundOn(standIn);
    progress(NAME, `kept idle: ${idleSeconds} s with ${standIns.length} clients open (stand-in clusters), no rounds`);
    const keptIdle = await idleWindow(idleSeconds);
    await access.closeAll();
    const keptIdlePerCluster = Math.max(0, keptIdle - baseline) / standIns.length;
    for (let i = 0; i < targets.length; i++) await keptRound(i);
    progress(NAME, `kept rounds: ${windowSeconds} s at ${roundsPerSecond} rounds/s over ${targets.length} clusters`);
    const kept = await pacedWindow(windowSeconds, roundsPerSecond, keptRound);
    await access.closeAll();
    progress(NAME, `fresh rounds: ${idleSeconds} s at ${roundsPerSecond / 2} rounds/s, a new client each round`);
    const fresh = await pacedWindow(idleSeconds, roundsPerSecond / 2, freshRound);

    const overKeptIdle = (window: { cpuMs: number; wallMs: number; rounds: number }, idleMilliCores: number) =>
      Math.max(0, window.cpuMs - (idleMilliCores * window.wallMs) / 1000) / window.rounds;
    const keptRoundCpuMs = overKeptIdle(kept, baseline + keptIdlePerCluster * targets.length);
    const freshRoundCpuMs = overKeptIdle(fresh, baseline);
    const round3 = (value: number) => Math.round(value * 1000) / 1000;
    const results: EtcdCostResults = {
      etcdBinary,
      clusters: targets.length,
      members: targets.length * membersPerCluster,
      windowSeconds,
      roundsPerSecond,
      baselineMilliCores: round3(baseline),
      keptIdleMilliCoresPerCluster: round3(keptIdlePerCluster),
      keptIdleClients: standIns.length,
      keptIdleMilliCores: round3(keptIdle),
      keptRoundCpuMs: round3(keptRoundCpuMs),
      freshRoundCpuMs: round3(freshRoundCpuMs),
      keptRoundsDone: kept.rounds,
      freshRoundsDone: fresh.rounds,
      failedRounds: kept.failed + fresh.failed,
      implied: [defaultPollSeconds, defaultIdlePollSeconds].map((pollSeconds) => {
        const perCluster = keptIdlePerCluster + keptRoundCpuMs / pollSeconds;
        return {
          pollSeconds,
          milliCoresPerCluster: round3(perCluster),
          clusters: [1000, 2000].map((count) => ({ clusters: count, milliCores: Math.round(count * perCluster) })),
        };
      }),
    };
    const impliedText = results.implied
      .map(
        (row) =>
          `every ${row.pollSeconds} s: ${row.clusters.map((total) => `${total.clusters} clusters ${total.milliCores} mCPU`).join(", ")}`,
      )
      .join("; ");
    progress(
      NAME,
      `kept round ${results.keptRoundCpuMs} CPU ms, fresh round ${results.freshRoundCpuMs} CPU ms, kept idle ${results.keptIdleMilliCoresPerCluster} mCPU per cluster; implied ${impliedText}`,
    );
    const notes = [
      `The implied figures are this process's CPU per cluster (kept connections + one round per poll) times the number of clusters, at the controller's two default intervals: --etcd-poll-interval (${defaultPollSeconds} s, while anything is in progress or unhealthy) and --etcd-idle-poll-interval (${defaultIdlePollSeconds} s, settled clusters). They come on top of the scale benchmark's figure, whose simulated etcd answers in-process instead.`,
      "The windows are a few tens of seconds and GC is forced before each (node --expose-gc), so idle figures near 0 are within noise; the per-round figure is the robust one.",
    ];
    if (results.failedRounds > 0)
      notes.push(`${results.failedRounds} rounds did not see every member reachable: the machine was likely loaded.`);
    progress(NAME, `wrote ${result.finish(results, notes)}`);
  } finally {
    await access.closeAll();
    progress(NAME, `stopping ${started.length} etcd clusters`);
    await Promise.all(started.map((cluster) => cluster.stop()));
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench ${NAME}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
