// One reconcile of one QuorumControlPlane: observe → plan → execute one action → write status (only if changed).
// Nothing is carried between reconciles in memory: the next one re-derives its step from the sources of truth,
// which is what makes a crash between any two calls harmless.
import type { Cluster } from "../api/capi.ts";
import { CONDITION, FINALIZER, KIND, LABEL_CLUSTER_NAME, PAUSED_ANNOTATION } from "../api/constants.ts";
import type { QuorumControlPlane, QuorumControlPlaneStatus } from "../api/types.ts";
import { isDisruptive, type Action } from "../core/actions.ts";
import type { Verdict } from "../core/assess.ts";
import type { Decision } from "../core/plan.ts";
import type { Snapshot } from "../core/snapshot.ts";
import { setConditions, type ConditionInput } from "./conditions.ts";
import type { CrashInjector } from "./crash.ts";
import { execute } from "./execute.ts";
import { mergePatch } from "./merge-patch.ts";
import type { ControllerMetrics } from "./metrics.ts";
import { observe } from "./observe.ts";
import { etcdMessageOf, type Clock, type EtcdClusterClient, type Logger, type ManagementApi, type WorkloadAccess } from "../ports/index.ts";
import { buildSnapshot } from "./snapshot-builder.ts";
import { computeStatus } from "./status.ts";

export type Planner = (snapshot: Snapshot) => Decision;

export interface ReconcilerDeps {
  management: ManagementApi;
  workload: WorkloadAccess;
  planner: Planner;
  clock: Clock;
  log: Logger;
  crash: CrashInjector;
  metrics?: ControllerMetrics;
  /** How often an idle cluster's etcd is re-read (there is no membership watch). */
  etcdPollIntervalMs: number;
}

export interface ReconcileResult {
  /** Reconcile again after this long (etcd poll, or a Wait's recheck); undefined: only on the next event. */
  requeueAfterMs?: number;
  action?: Action;
}

/** A reconcile error that has already been written to status as a condition; the queue backs off and retries. */
export class ReconcileError extends Error {
  constructor(message: string, readonly reason: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ReconcileError";
  }
}

/**
 * After an action, look again at once: an etcd change is visible right away, and a change to a Kubernetes object
 * makes the next reconcile wait for its watch event (expectations.ts) instead of planning on a stale cache.
 */
const AFTER_ACTION_MS = 0;
/** A conflict means the cache missed someone else's write: its watch event is on the way. */
const AFTER_CONFLICT_MS = 250;
/** Idle polls of many clusters spread out instead of all landing in the same second. */
const IDLE_POLL_JITTER = 0.1;
/** How soon a removal etcd refused for now is asked again (etcd's own health window is 5 s). */
const ETCD_REFUSAL_RETRY_MS = 1_000;

export async function reconcile(namespace: string, name: string, deps: ReconcilerDeps, triggeredAt?: number): Promise<ReconcileResult> {
  const controlPlane = await deps.management.getControlPlane(namespace, name);
  if (!controlPlane) return {};
  const key = `${KIND} ${namespace}/${name}`;
  const log = (level: "info" | "warn" | "error" | "debug", message: string, meta: Record<string, unknown> = {}) => deps.log[level](message, { object: `${namespace}/${name}`, ...meta });

  const clusterName = owningClusterName(controlPlane);
  if (!clusterName) {
    await writeProblem(controlPlane, deps, "WaitingForCluster", `${key} has no owning Cluster yet: set spec.controlPlaneRef of a Cluster to this object (CAPI then adds the owner reference)`);
    return { requeueAfterMs: 30_000 };
  }
  const cluster = await deps.management.getCluster(namespace, clusterName);
  if (!cluster) {
    await writeProblem(controlPlane, deps, "ClusterNotFound", `Cluster ${namespace}/${clusterName} that owns ${key} was not found: create it or fix the ${LABEL_CLUSTER_NAME} label`);
    return { requeueAfterMs: 30_000 };
  }
  if (cluster.spec?.paused || controlPlane.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined) {
    await writePaused(controlPlane, cluster, deps);
    return {};
  }
  const finalizers = controlPlane.metadata.finalizers ?? [];
  if (!controlPlane.metadata.deletionTimestamp && !finalizers.includes(FINALIZER)) {
    // Without it, deleting the QuorumControlPlane would orphan Machines whose members are still voters.
    deps.metrics?.apiWrites.inc({ verb: "patch-finalizers" });
    await deps.management.setFinalizers(controlPlane, [...finalizers, FINALIZER]);
    return { requeueAfterMs: 0 };
  }

  try {
    await deps.workload.ensureCertificates(controlPlane, cluster);
  } catch (error) {
    const message = errorText(error);
    await writeProblem(controlPlane, deps, "CertificatesUnavailable", message, CONDITION.CertificatesAvailable);
    throw new ReconcileError(message, "CertificatesUnavailable", { cause: error });
  }

  const machines = await deps.management.listControlPlaneMachines(namespace, name);
  if (controlPlane.metadata.deletionTimestamp && machines.length === 0) {
    await deps.management.setFinalizers(controlPlane, finalizers.filter((finalizer) => finalizer !== FINALIZER));
    await deps.workload.forget(namespace, clusterName);
    log("info", "all Machines are gone; released the finalizer");
    return {};
  }
  let etcd: EtcdClusterClient | undefined;
  try {
    const world = await observe(controlPlane, cluster, machines, deps.workload, deps.clock);
    etcd = world.etcd;
    let snapshot: Snapshot;
    try {
      snapshot = buildSnapshot(world.observation);
    } catch (error) {
      await writeProblem(controlPlane, deps, "InvalidSpec", errorText(error));
      throw new ReconcileError(errorText(error), "InvalidSpec", { cause: error });
    }
    const { action, assessment: verdict } = deps.planner(snapshot);
    log(action.kind === "Wait" ? "debug" : "info", `next action: ${action.kind}: ${action.reason}`, { action: action.kind });

    let actionStatus: Record<string, unknown> | undefined;
    let retryAfterMs: number | undefined;
    if (action.kind !== "Wait") {
      try {
        const result = await execute(action, {
          controlPlane,
          clusterName,
          machines,
          snapshot,
          management: deps.management,
          etcd: async () => etcd ?? (await deps.workload.etcd(controlPlane, cluster, [])),
        });
        actionStatus = result.statusUpdate;
        retryAfterMs = result.retryAfterMs;
        deps.metrics?.actions.inc({ kind: action.kind });
        if (triggeredAt !== undefined) deps.metrics?.stepLatency.observe({ kind: action.kind }, Math.max(0, deps.clock() - triggeredAt) / 1000);
        log("info", result.message, { action: action.kind });
        await deps.management
          .event(controlPlane, "Normal", action.kind, `${result.message} — ${action.reason}`, new Date(deps.clock()))
          .catch((error: unknown) => log("warn", `could not record an Event: ${errorText(error)}`));
      } catch (error) {
        // A conflict means the decision was made on an object that changed meanwhile (a stale cache): look
        // again soon rather than report a failure; the next plan sees the change.
        if (isConflict(error)) {
          log("debug", `${action.kind} hit a conflict; re-planning`, { action: action.kind });
          return { requeueAfterMs: AFTER_CONFLICT_MS, action };
        }
        // etcd refuses a removal ("unhealthy cluster") until its leader has been connected to enough members for 5 s,
        // which is every rollout right after leadership moved to the member that just joined. assess has judged the
        // removal safe and etcd keeps refusing while it is not: wait and ask again each second, as for a learner that
        // is not caught up, instead of backing off up to 16 s and reporting a failure (found by the e2e suite).
        if ((action.kind === "RemoveMember" || action.kind === "RemoveGhost") && etcdMessageOf(error)?.includes("unhealthy cluster")) {
          const message = `${action.kind} deferred: ${errorText(error)}`;
          log("info", message, { action: action.kind });
          await writeProblem(controlPlane, deps, `${action.kind}Deferred`, message);
          return { requeueAfterMs: ETCD_REFUSAL_RETRY_MS, action };
        }
        const message = `${action.kind} failed: ${errorText(error)}`;
        await writeProblem(controlPlane, deps, `${action.kind}Failed`, message);
        if (isDisruptive(action)) {
          await deps.management
            .event(controlPlane, "Warning", `${action.kind}Failed`, message, new Date(deps.clock()))
            .catch((eventError: unknown) => log("warn", `could not record an Event: ${errorText(eventError)}`));
        }
        throw new ReconcileError(message, `${action.kind}Failed`, { cause: error });
      }
      deps.crash.afterAction(action.kind);
    }

    const status = computeStatus({ controlPlane, snapshot, action, verdict, ...(world.nodesError ? { nodesError: world.nodesError } : {}), ...(actionStatus ? { actionStatus } : {}) });
    status.conditions = setConditions(status.conditions, [{ type: CONDITION.CertificatesAvailable, status: "True", reason: "Available", message: "" }], new Date(snapshot.now).toISOString(), snapshot.controlPlane.generation);
    await writeStatus(controlPlane, status, deps);
    recordEtcdMetrics(deps.metrics, `${namespace}/${clusterName}`, verdict);

    if (action.kind !== "Wait") return { requeueAfterMs: retryAfterMs ?? AFTER_ACTION_MS, action };
    const recheckAfterMs = Math.min(action.recheckAfterMs, deps.etcdPollIntervalMs);
    return { requeueAfterMs: recheckAfterMs >= deps.etcdPollIntervalMs ? jittered(recheckAfterMs) : recheckAfterMs, action };
  } finally {
    await etcd?.close().catch((error: unknown) => log("warn", `closing the etcd client failed: ${errorText(error)}`));
  }
}

/** The poll interval shortened by up to 10 %, so a poll is never later than the interval promises. */
function jittered(ms: number): number {
  return Math.round(ms * (1 - IDLE_POLL_JITTER * Math.random()));
}

function owningClusterName(controlPlane: QuorumControlPlane): string | undefined {
  const owner = controlPlane.metadata.ownerReferences?.find((reference) => reference.kind === "Cluster" && reference.apiVersion.startsWith("cluster.x-k8s.io/"));
  return owner?.name ?? controlPlane.metadata.labels?.[LABEL_CLUSTER_NAME];
}

async function writeStatus(controlPlane: QuorumControlPlane, status: QuorumControlPlaneStatus, deps: ReconcilerDeps): Promise<void> {
  const patch = mergePatch(controlPlane.status ?? {}, status);
  if (patch === undefined) return;
  deps.metrics?.apiWrites.inc({ verb: "patch-status" });
  await deps.management.patchStatus(controlPlane, patch as Record<string, unknown>);
}

/** Records a problem as the Reconciled condition (and an extra one when given), keeping the rest of status. */
async function writeProblem(controlPlane: QuorumControlPlane, deps: ReconcilerDeps, reason: string, message: string, extraCondition?: string): Promise<void> {
  const now = new Date(deps.clock()).toISOString();
  const generation = controlPlane.metadata.generation ?? 0;
  const updates: ConditionInput[] = [{ type: CONDITION.Reconciled, status: "False", reason, message }];
  if (extraCondition) updates.push({ type: extraCondition, status: "False", reason, message });
  const status: QuorumControlPlaneStatus = { ...(controlPlane.status ?? {}), conditions: setConditions(controlPlane.status?.conditions, updates, now, generation) };
  status.nextAction = { kind: "Wait", message: `blocked: ${message}`, blockedBy: reason };
  await writeStatus(controlPlane, status, deps).catch((error: unknown) => deps.log.warn(`could not write status: ${errorText(error)}`, { object: `${controlPlane.metadata.namespace}/${controlPlane.metadata.name}` }));
}

async function writePaused(controlPlane: QuorumControlPlane, cluster: Cluster, deps: ReconcilerDeps): Promise<void> {
  const now = new Date(deps.clock()).toISOString();
  const message = cluster.spec?.paused ? `Cluster ${cluster.metadata.namespace}/${cluster.metadata.name} has spec.paused: true` : "the QuorumControlPlane has the cluster.x-k8s.io/paused annotation";
  const status: QuorumControlPlaneStatus = {
    ...(controlPlane.status ?? {}),
    conditions: setConditions(controlPlane.status?.conditions, [{ type: CONDITION.Paused, status: "True", reason: "Paused", message }], now, controlPlane.metadata.generation ?? 0),
    nextAction: { kind: "Wait", message: `paused: ${message}; remove the pause to continue`, blockedBy: "Paused" },
  };
  await writeStatus(controlPlane, status, deps);
}

function recordEtcdMetrics(metrics: ControllerMetrics | undefined, cluster: string, verdict: Verdict): void {
  if (!metrics || !verdict.observed) return;
  metrics.etcdVoters.set({ cluster }, verdict.quorum.voters);
  metrics.etcdHealthyVoters.set({ cluster }, verdict.quorum.healthyVoters);
  metrics.etcdFailuresTolerated.set({ cluster }, verdict.quorum.failuresTolerated);
}

function isConflict(error: unknown): boolean {
  return typeof error === "object" && error !== null && "code" in error && (error as { code: unknown }).code === 409;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
