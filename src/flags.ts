// Command-line flags of the controller, kubebuilder-style names, with sane defaults and errors that say the fix.
import { parseArgs } from "node:util";
import { parseDuration } from "./api/duration.ts";

export interface Flags {
  kubeconfig?: string;
  namespace?: string;
  watchFilter?: string;
  leaderElect: boolean;
  leaderElectionNamespace: string;
  leaderElectionId: string;
  concurrency: number;
  etcdPollIntervalMs: number;
  /** How often a settled cluster's etcd is re-read (never more often than etcdPollIntervalMs). */
  etcdIdlePollIntervalMs: number;
  etcdCallTimeoutMs: number;
  /** Deadline of every management API request (watches excepted: they have an idle timeout). */
  apiRequestTimeoutMs: number;
  /** A leader whose informer caches have not synced this long after it took the Lease gives it up (exits). */
  cacheSyncTimeoutMs: number;
  metricsBindAddress: string;
  /** HTTPS with TokenReview + SubjectAccessReview on /metrics (false: plain, open HTTP for local use). */
  metricsSecure: boolean;
  /** Directory with tls.crt and tls.key for the metrics endpoint; absent: self-signed at start. */
  metricsCertDir?: string;
  healthProbeBindAddress: string;
  logLevel: "debug" | "info" | "warn" | "error";
  logFormat: "json" | "text";
  help: boolean;
}

/**
 * Bounds of the duration flags, [min, max] as Go durations. Each maximum also keeps the value far below
 * setTimeout's limit (2^31-1 ms, about 24.8 days), above which Node fires the timer after 1 ms: an
 * `--etcd-poll-interval=24000h` would otherwise poll every etcd in a hot loop.
 */
/**
 * --etcd-idle-poll-interval's default. A member killed in a settled cluster shows at once (its kept connection closes:
 * connection-watch.ts); this bounds how late a hung or silently cut-off member shows, and costs about 4 ms of CPU per
 * cluster per poll (bench etcd-cost: 2,000 clusters about 0.1 of a core).
 */
export const DEFAULT_ETCD_IDLE_POLL_SECONDS = 90;
/** --etcd-poll-interval's default, while anything is in progress or unhealthy. */
export const DEFAULT_ETCD_POLL_SECONDS = 10;

export const DURATION_FLAG_BOUNDS: Readonly<Record<string, { min: string; max: string; why: string }>> = {
  "--etcd-poll-interval": {
    min: "500ms",
    max: "1h",
    why: "faster floods etcd with status calls, slower hides a dead member or ghost longer",
  },
  "--etcd-idle-poll-interval": {
    min: "500ms",
    max: "1h",
    why: "shorter costs CPU (about 4 ms per etcd round: 2,000 clusters take 0.8 of a core at 10s), longer shows a member that hangs in a settled cluster later (a killed one shows at once)",
  },
  "--etcd-call-timeout": {
    min: "100ms",
    max: "1m",
    why: "shorter fails healthy members across a network, longer stalls reconciles on a frozen one",
  },
  "--api-request-timeout": {
    min: "1s",
    max: "5m",
    why: "shorter fails large lists on a busy API server, longer lets one hung call stall a reconcile",
  },
  "--cache-sync-timeout": {
    min: "10s",
    max: "30m",
    why: "shorter gives up on a large management cluster still listing, longer holds the Lease while doing nothing",
  },
};

const POLL = DURATION_FLAG_BOUNDS["--etcd-poll-interval"];
const IDLE = DURATION_FLAG_BOUNDS["--etcd-idle-poll-interval"];
const CALL = DURATION_FLAG_BOUNDS["--etcd-call-timeout"];
const API = DURATION_FLAG_BOUNDS["--api-request-timeout"];
const SYNC = DURATION_FLAG_BOUNDS["--cache-sync-timeout"];

export const USAGE = `quorum-controller — Cluster API control-plane provider for stacked etcd

Usage: node dist/main.js [flags]

  --kubeconfig FILE                    management cluster kubeconfig (default: in-cluster, then $KUBECONFIG)
  --namespace NS                       only watch this namespace (default: all)
  --watch-filter VALUE                 only reconcile objects labelled cluster.x-k8s.io/watch-filter=VALUE
  --leader-elect                       elect a leader through a Lease before acting (default: false)
  --leader-election-namespace NS       namespace of the Lease (default: the pod's namespace or "default")
  --leader-election-id NAME            name of the Lease (default: quorum-controller-leader)
  --concurrency N                      QuorumControlPlanes reconciled in parallel (default: 10)
  --etcd-poll-interval DURATION        how often each cluster's etcd membership is re-read while anything is
                                       in progress or unhealthy (default: ${DEFAULT_ETCD_POLL_SECONDS}s; ${POLL.min} to ${POLL.max}:
                                       ${POLL.why})
  --etcd-idle-poll-interval DURATION   how often a settled cluster's etcd is re-read: nothing to do, every
                                       Machine joined, every member a healthy voter (default: ${DEFAULT_ETCD_IDLE_POLL_SECONDS}s; never
                                       shorter than --etcd-poll-interval; ${IDLE.min} to ${IDLE.max}:
                                       ${IDLE.why})
  --etcd-call-timeout DURATION         hard deadline of each call to one etcd member (default: 2s;
                                       ${CALL.min} to ${CALL.max}:
                                       ${CALL.why})
  --api-request-timeout DURATION       deadline of each management API request (default: 30s;
                                       ${API.min} to ${API.max}:
                                       ${API.why})
  --cache-sync-timeout DURATION        a leader whose caches have not synced this long after it took the
                                       Lease exits, so another replica can lead (default: 2m, as
                                       controller-runtime; ${SYNC.min} to ${SYNC.max})
  --metrics-bind-address HOST:PORT     Prometheus /metrics (default: :8443, all interfaces; "0" disables)
  --metrics-secure=true|false          serve /metrics over HTTPS to a bearer token the API server authenticates
                                       (TokenReview) and allows to get /metrics (SubjectAccessReview)
                                       (default: true; false: plain HTTP open to anyone, for local use only)
  --metrics-cert-dir DIR               tls.crt and tls.key for /metrics (default: self-signed at start)
  --health-probe-bind-address HOST:PORT  /healthz and /readyz (default: 127.0.0.1:8081; "0" disables)
  --log-level debug|info|warn|error    (default: info)
  --log-format json|text               (default: json)
  --help                               print this help
`;

export function parseFlags(argv: string[], env: NodeJS.ProcessEnv = process.env): Flags {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      kubeconfig: { type: "string" },
      namespace: { type: "string" },
      "watch-filter": { type: "string" },
      "leader-elect": { type: "boolean", default: false },
      "leader-election-namespace": { type: "string" },
      "leader-election-id": { type: "string", default: "quorum-controller-leader" },
      concurrency: { type: "string", default: "10" },
      "etcd-poll-interval": { type: "string", default: `${DEFAULT_ETCD_POLL_SECONDS}s` },
      "etcd-idle-poll-interval": { type: "string", default: `${DEFAULT_ETCD_IDLE_POLL_SECONDS}s` },
      "etcd-call-timeout": { type: "string", default: "2s" },
      "api-request-timeout": { type: "string", default: "30s" },
      "cache-sync-timeout": { type: "string", default: "2m" },
      "metrics-bind-address": { type: "string", default: ":8443" },
      "metrics-secure": { type: "string", default: "true" },
      "metrics-cert-dir": { type: "string" },
      "health-probe-bind-address": { type: "string", default: "127.0.0.1:8081" },
      "log-level": { type: "string", default: "info" },
      "log-format": { type: "string", default: "json" },
      help: { type: "boolean", default: false },
    },
  });
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new Error(`--concurrency must be a whole number >= 1 (got "${values.concurrency}")`);
  const logLevel = values["log-level"];
  if (!["debug", "info", "warn", "error"].includes(logLevel))
    throw new Error(`--log-level must be debug, info, warn or error (got "${logLevel}")`);
  const metricsSecure = values["metrics-secure"];
  if (metricsSecure !== "true" && metricsSecure !== "false")
    throw new Error(`--metrics-secure must be true or false (got "${metricsSecure}")`);
  const logFormat = values["log-format"];
  if (logFormat !== "json" && logFormat !== "text")
    throw new Error(`--log-format must be json or text (got "${logFormat}")`);
  const etcdPollIntervalMs = durationFlag("--etcd-poll-interval", values["etcd-poll-interval"]);
  return {
    ...((values.kubeconfig ?? env.KUBECONFIG) ? { kubeconfig: values.kubeconfig ?? env.KUBECONFIG } : {}),
    ...(values.namespace ? { namespace: values.namespace } : {}),
    ...(values["watch-filter"] ? { watchFilter: values["watch-filter"] } : {}),
    leaderElect: values["leader-elect"],
    leaderElectionNamespace: values["leader-election-namespace"] ?? env.POD_NAMESPACE ?? "default",
    leaderElectionId: values["leader-election-id"],
    concurrency,
    etcdPollIntervalMs,
    etcdIdlePollIntervalMs: Math.max(
      etcdPollIntervalMs,
      durationFlag("--etcd-idle-poll-interval", values["etcd-idle-poll-interval"]),
    ),
    etcdCallTimeoutMs: durationFlag("--etcd-call-timeout", values["etcd-call-timeout"]),
    apiRequestTimeoutMs: durationFlag("--api-request-timeout", values["api-request-timeout"]),
    cacheSyncTimeoutMs: durationFlag("--cache-sync-timeout", values["cache-sync-timeout"]),
    metricsBindAddress: values["metrics-bind-address"],
    metricsSecure: metricsSecure === "true",
    ...(values["metrics-cert-dir"] ? { metricsCertDir: values["metrics-cert-dir"] } : {}),
    healthProbeBindAddress: values["health-probe-bind-address"],
    logLevel: logLevel as Flags["logLevel"],
    logFormat,
    help: values.help,
  };
}

function durationFlag(name: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new Error(`${name} must be a positive duration such as 500ms, 10s or 1m (got "${text}")`);
  const bounds = DURATION_FLAG_BOUNDS[name];
  if (bounds && (ms < parseDuration(bounds.min)! || ms > parseDuration(bounds.max)!)) {
    throw new Error(`${name} must be between ${bounds.min} and ${bounds.max} (got "${text}"): ${bounds.why}`);
  }
  return ms;
}

/** "127.0.0.1:8080" → host and port; "0" means disabled. */
export function parseBindAddress(flag: string, value: string): { host: string; port: number } | undefined {
  if (value === "0") return undefined;
  const separator = value.lastIndexOf(":");
  const host = separator <= 0 ? "0.0.0.0" : value.slice(0, separator).replace(/^\[|\]$/g, "");
  const port = Number(value.slice(separator + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`${flag} must be HOST:PORT or "0" to disable (got "${value}")`);
  return { host, port };
}
