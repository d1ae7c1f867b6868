// The controller process: flags → logger → management API clients → workload access → the Manager (leader
// election, informers, queue, workers) → /metrics, /healthz, /readyz. Stops gracefully on SIGTERM.
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { Server } from "node:http";
import winston from "winston";
import { ManagementClient } from "./adapters/capi/management.ts";
import { CachedSecretStore } from "./adapters/certs/cached-secret-store.ts";
import { coreV1SecretStore } from "./adapters/certs/secret-store.ts";
import { selfSignedServingCertificate, servingCertificateFromDir } from "./adapters/certs/serving.ts";
import { DEFAULT_ETCD_IDLE_CLOSE_MS } from "./adapters/etcd/pool.ts";
import { Manager } from "./adapters/kube/manager.ts";
import { reuseConnections } from "./adapters/kube/keep-alive.ts";
import { withRequestDeadline } from "./adapters/kube/request-deadline.ts";
import { withRetryAfter } from "./adapters/kube/retry-after.ts";
import { kubeMetricsAuthorizer } from "./adapters/kube/metrics-auth.ts";
import { KubeRest } from "./adapters/kube/rest.ts";
import { ClusterWorkloadAccess } from "./adapters/workload/access.ts";
import { plan } from "./core/plan.ts";
import { CONTROLLER_NAME, quorumController } from "./controller/controller.ts";
import { crashInjectorFromEnv } from "./controller/crash.ts";
import { createMetrics } from "./controller/metrics.ts";
import { parseBindAddress, parseFlags, USAGE, type Flags } from "./flags.ts";
import { startHttpServer, type ServerSecurity } from "./probes.ts";

function createLogger(flags: Flags): winston.Logger {
  const format =
    flags.logFormat === "json"
      ? winston.format.combine(winston.format.timestamp(), winston.format.json())
      : winston.format.combine(
          winston.format.timestamp(),
          winston.format.printf(
            ({ timestamp, level, message, ...meta }) =>
              `${String(timestamp)} ${level.toUpperCase().padEnd(5)} ${String(message)}${Object.keys(meta).length ? ` ${JSON.stringify(meta)}` : ""}`,
          ),
        );
  return winston.createLogger({
    level: flags.logLevel,
    format,
    transports: [new winston.transports.Console({ stderrLevels: ["error", "warn", "info", "debug"] })],
  });
}

function loadKubeConfig(flags: Flags): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (flags.kubeconfig) kubeConfig.loadFromFile(flags.kubeconfig);
  else kubeConfig.loadFromDefault();
  if (!kubeConfig.getCurrentCluster())
    throw new Error(
      "no management cluster: pass --kubeconfig FILE, set KUBECONFIG, or run in a pod with a service account",
    );
  return reuseConnections(
    withRetryAfter(withRequestDeadline(kubeConfig, flags.apiRequestTimeoutMs), flags.apiRequestTimeoutMs),
  );
}

/** HTTPS and the API server's say on who reads /metrics, unless --metrics-secure=false. */
async function metricsSecurity(flags: Flags, rest: KubeRest): Promise<ServerSecurity> {
  if (!flags.metricsSecure) return {};
  const tls = flags.metricsCertDir
    ? servingCertificateFromDir(flags.metricsCertDir)
    : await selfSignedServingCertificate();
  return { tls, authorize: kubeMetricsAuthorizer(rest) };
}

/** Exits at once, in this very call: no timer, promise callback or I/O callback of a reconcile runs again. */
function exitOnLostLeadership(log: winston.Logger, reason: string): never {
  log.error("leadership lost: exiting so that no reconcile in flight acts again", { reason, exitCode: 1 });
  process.exit(1);
}

async function main(argv: string[]): Promise<void> {
  const flags = parseFlags(argv);
  if (flags.help) {
    process.stdout.write(USAGE);
    return;
  }
  const log = createLogger(flags);
  const kubeConfig = loadKubeConfig(flags);
  const metrics = createMetrics();
  const management = new ManagementClient(kubeConfig);
  const rest = new KubeRest(kubeConfig, { requestTimeoutMs: flags.apiRequestTimeoutMs });
  // Cluster Secrets are read on every reconcile: from a watch-backed cache (CAPI's own selector), not the API server.
  const secrets = new CachedSecretStore({
    inner: coreV1SecretStore(kubeConfig.makeApiClient(CoreV1Api)),
    rest,
    ...(flags.namespace ? { namespace: flags.namespace } : {}),
    informer: { logger: log },
  });
  secrets.start();
  // A settled cluster's etcd client stays open between its polls (a new one costs TLS handshakes to every member).
  const etcdIdleCloseMs = Math.max(DEFAULT_ETCD_IDLE_CLOSE_MS, 2 * flags.etcdIdlePollIntervalMs);
  // A member whose kept connection closed (killed, restarted) is looked at now, not at the next idle poll.
  let onEtcdConnectionLost = (_controlPlaneKey: string, _endpoint: string): void => {};
  const workload = new ClusterWorkloadAccess({
    secrets,
    etcdCallDeadlineMs: flags.etcdCallTimeoutMs,
    etcdIdleCloseMs,
    log,
    onEtcdConnectionLost: (controlPlaneKey, endpoint) => onEtcdConnectionLost(controlPlaneKey, endpoint),
  });
  const controller = quorumController({
    ...(flags.namespace ? { namespace: flags.namespace } : {}),
    ...(flags.watchFilter ? { watchFilter: flags.watchFilter } : {}),
    deps: {
      management,
      workload,
      planner: plan,
      clock: Date.now,
      log,
      crash: crashInjectorFromEnv(process.env.QUORUM_CRASH_AFTER),
      metrics,
      etcdPollIntervalMs: flags.etcdPollIntervalMs,
      etcdIdlePollIntervalMs: flags.etcdIdlePollIntervalMs,
    },
  });
  const manager = new Manager({
    controllers: [controller],
    rest,
    // POD_NAME (from the downward API) is unique per replica and readable in `kubectl get lease`.
    ...(flags.leaderElect
      ? {
          leaderElection: {
            namespace: flags.leaderElectionNamespace,
            name: flags.leaderElectionId,
            ...(process.env.POD_NAME ? { identity: process.env.POD_NAME } : {}),
          },
        }
      : {}),
    queue: { concurrency: flags.concurrency },
    cacheSyncTimeoutMs: flags.cacheSyncTimeoutMs,
    // As controller-runtime does: a reconcile in flight may be between two port calls (an etcd member removed, its
    // Machine not yet deleted) and only ending the process stops its next call for certain; the Deployment
    // restarts it as a standby. README, "Leadership".
    onLostLeadership: (reason) => exitOnLostLeadership(log, reason),
    logger: log,
    onEvent: (event) => {
      if (event.type === "starting-workers") metrics.leader.set(1);
      if (event.type === "stopped-leading" || event.type === "stopped") metrics.leader.set(0);
      // A standby keeps no connections to workload etcd; they are opened again if it leads again.
      if (event.type === "stopped-leading") void workload.closeAll();
    },
  });

  const servers: Server[] = [];
  const metricsAddress = parseBindAddress("--metrics-bind-address", flags.metricsBindAddress);
  if (metricsAddress)
    servers.push(
      await startHttpServer(
        metricsAddress.host,
        metricsAddress.port,
        { registry: metrics.registry },
        await metricsSecurity(flags, rest),
      ),
    );
  const probeAddress = parseBindAddress("--health-probe-bind-address", flags.healthProbeBindAddress);
  if (probeAddress)
    servers.push(
      await startHttpServer(probeAddress.host, probeAddress.port, {
        probes: { healthy: () => true, ready: () => !flags.leaderElect || manager.isReady() || !manager.isLeader() },
      }),
    );
  const depthTimer = setInterval(
    () => metrics.queueDepth.set(Object.values(manager.queueDepths()).reduce((sum, depth) => sum + depth, 0)),
    1000,
  );
  depthTimer.unref();

  onEtcdConnectionLost = (controlPlaneKey, endpoint) => {
    if (manager.enqueue(CONTROLLER_NAME, controlPlaneKey))
      log.info(`the connection to etcd member ${endpoint} closed; looking at the cluster now`, {
        object: `QuorumControlPlane ${controlPlaneKey}`,
      });
  };
  manager.stopOnSignals(["SIGTERM", "SIGINT"], (code) => {
    for (const server of servers) server.close();
    log.info("stopped", { code });
    void Promise.all([workload.closeAll(), secrets.stop()]).finally(() => process.exit(code));
  });
  log.info("quorum controller starting", {
    leaderElect: flags.leaderElect,
    namespace: flags.namespace ?? "(all)",
    concurrency: flags.concurrency,
    metrics: metricsAddress
      ? `${flags.metricsSecure ? "https" : "http"}://${metricsAddress.host}:${metricsAddress.port}/metrics`
      : "off",
  });
  manager.start();
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`quorum: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
});
