// Prometheus metrics of the controller (prom-client), one registry per process so tests can read their own.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export interface ControllerMetrics {
  registry: Registry;
  reconcileDuration: Histogram<"result">;
  actions: Counter<"kind">;
  queueDepth: Gauge;
  etcdVoters: Gauge<"cluster">;
  etcdHealthyVoters: Gauge<"cluster">;
  etcdFailuresTolerated: Gauge<"cluster">;
  /** Time from a precondition becoming observable (e.g. the new member turned healthy) to the action that follows. */
  stepLatency: Histogram<"kind">;
  apiWrites: Counter<"verb">;
  /** 1 while this process leads and its workers run, else 0. */
  leader: Gauge;
  /** Sets the per-cluster etcd series of QuorumControlPlane `key` ("ns/name"), remembering which cluster they name. */
  recordEtcd(
    key: string,
    cluster: string,
    quorum: { voters: number; healthyVoters: number; failuresTolerated: number },
  ): void;
  /** Drops every series of QuorumControlPlane `key` (it is gone): a deleted control plane leaves no series behind. */
  forget(key: string): void;
  /** How many QuorumControlPlanes have per-cluster series now (for tests and the churn check). */
  readonly trackedControlPlanes: number;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): ControllerMetrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: "quorum_process_" });
  // The cluster label each QuorumControlPlane's series carry: once the object is gone its Cluster name is not known
  // any more, and without this the series of every deleted control plane would stay until the process restarts.
  const clusterOf = new Map<string, string>();
  const perCluster = (metrics: ControllerMetrics) => [
    metrics.etcdVoters,
    metrics.etcdHealthyVoters,
    metrics.etcdFailuresTolerated,
  ];
  const metrics: ControllerMetrics = {
    registry,
    reconcileDuration: new Histogram({
      name: "quorum_reconcile_duration_seconds",
      help: "Duration of one reconcile of a QuorumControlPlane",
      labelNames: ["result"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    actions: new Counter({
      name: "quorum_actions_total",
      help: "Actions executed, by kind",
      labelNames: ["kind"],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "quorum_workqueue_depth",
      help: "QuorumControlPlanes waiting to be reconciled",
      registers: [registry],
    }),
    etcdVoters: new Gauge({
      name: "quorum_etcd_voters",
      help: "etcd voting members per cluster",
      labelNames: ["cluster"],
      registers: [registry],
    }),
    etcdHealthyVoters: new Gauge({
      name: "quorum_etcd_healthy_voters",
      help: "Healthy etcd voting members per cluster",
      labelNames: ["cluster"],
      registers: [registry],
    }),
    etcdFailuresTolerated: new Gauge({
      name: "quorum_etcd_failures_tolerated",
      help: "Member failures each cluster's etcd tolerates now",
      labelNames: ["cluster"],
      registers: [registry],
    }),
    stepLatency: new Histogram({
      name: "quorum_step_latency_seconds",
      help: "Time from a step's precondition becoming observable (the watch event that showed it, or for etcd changes the previous poll: an upper bound) to the action that follows",
      labelNames: ["kind"],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers: [registry],
    }),
    leader: new Gauge({
      name: "quorum_leader",
      help: "1 while this process holds the leader Lease and runs its workers",
      registers: [registry],
    }),
    apiWrites: new Counter({
      name: "quorum_api_writes_total",
      help: "Writes the controller sent to the management API server",
      labelNames: ["verb"],
      registers: [registry],
    }),
    recordEtcd(key, cluster, quorum) {
      const previous = clusterOf.get(key);
      if (previous !== undefined && previous !== cluster)
        for (const gauge of perCluster(metrics)) gauge.remove({ cluster: previous });
      clusterOf.set(key, cluster);
      metrics.etcdVoters.set({ cluster }, quorum.voters);
      metrics.etcdHealthyVoters.set({ cluster }, quorum.healthyVoters);
      metrics.etcdFailuresTolerated.set({ cluster }, quorum.failuresTolerated);
    },
    forget(key) {
      const cluster = clusterOf.get(key);
      if (cluster === undefined) return;
      clusterOf.delete(key);
      // Another QuorumControlPlane may report the same Cluster (a copy labelled for it): its series stay.
      if ([...clusterOf.values()].includes(cluster)) return;
      for (const gauge of perCluster(metrics)) gauge.remove({ cluster });
    },
    get trackedControlPlanes() {
      return clusterOf.size;
    },
  };
  return metrics;
}
