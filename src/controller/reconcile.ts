// One reconcile of one QuorumControlPlane: gate → observe → plan → execute one action → write status (only if
// changed). It reaches the world only through src/ports; the planner alone decides what to do (pause and deletion
// included), and every status write comes from statusFor().
// Nothing is carried between reconciles in memory: the next one re-derives its step from the sources of truth,
// which is what makes a crash between any two calls harmless.
import type { Cluster, Machine } from "../api/capi.ts";
import { CONDITION, FINALIZER, KIND, LABEL_CLUSTER_NAME, PAUSED_ANNOTATION } from "../api/constants.ts";
import { claimMachines, namesControlPlane, owningClusterName, type ForeignMachine } from "../api/ownership.ts";
import type { QuorumControlPlane, QuorumControlPlaneStatus } from "../api/types.ts";
import { isDisruptive, type Action } from "../core/actions.ts";
import type { Decision } from "../core/plan.ts";
import type { Snapshot } from "../core/snapshot.ts";
import type { CrashInjector } from "./crash.ts";
import { execute, UnsupportedTemplateError, type ExecutionResult } from "./execute.ts";
import { mergePatch } from "./merge-patch.ts";
import type { ControllerMetrics } from "./metrics.ts";
import { observe } from "./observe.ts";
import {
  isConflict,
  retryLaterOf,
  type Clock,
  type EtcdClusterClient,
  type Logger,
  type ManagementApi,
  type TemplateReader,
  type WorkloadAccess,
} from "../ports/index.ts";
import { buildSnapshot } from "./snapshot-builder.ts";
import { statusFor, type Problem, type StatusRequest } from "./status.ts";
import { keepTemplatesOwned, type OwnedTemplates } from "./template-owners.ts";
import { keepMachineConditions, type MachineConditionsResult } from "./machine-conditions.ts";
import { keepMachinesInPlace, type InPlaceResult } from "./in-place.ts";
import { recordExpiries } from "./certificates-expiry.ts";

export type Planner = (snapshot: Snapshot) => Decision;

export interface ReconcilerDeps {
  management: ManagementApi;
  workload: WorkloadAccess;
  planner: Planner;
  clock: Clock;
  log: Logger;
  crash: CrashInjector;
  metrics?: ControllerMetrics;
  /** How often a cluster's etcd is re-read while anything is in progress or unhealthy (there is no membership watch). */
  etcdPollIntervalMs: number;
  /** How often a settled cluster's etcd is re-read (nothing to do, every member healthy); default etcdPollIntervalMs. */
  etcdIdlePollIntervalMs?: number;
  /** Templates recently seen owned by their Cluster (not read again); without it they are read on every reconcile. */
  ownedTemplates?: OwnedTemplates;
}

export interface ReconcileResult {
  /** Reconcile again after this long (etcd poll, or a Wait's recheck); undefined: only on the next event. */
  requeueAfterMs?: number;
  action?: Action;
}

/** A reconcile error that has already been written to status as a condition; the queue backs off and retries. */
export class ReconcileError extends Error {
  constructor(
    message: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
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
/**
 * etcd's "not yet" (src/ports/etcd.ts) is asked again after its own hint, at least 1 s, then after as long as the
 * refusals have lasted (so the delays double: 1, 1, 2, 4, 8, 16 s), never later than 30 s. The removal window
 * usually opens within 5 s; a refusal that outlasts it (a member bouncing, a leader flapping) must not cost a
 * status round and a write every second forever. The state is the Reconciled condition itself (reason
 * <Action>Deferred since lastTransitionTime), so nothing is kept in memory and a restart at worst starts over.
 */
export const REFUSAL_BACKOFF = { firstMs: 1_000, maxMs: 30_000 } as const;

export async function reconcile(
  namespace: string,
  name: string,
  deps: ReconcilerDeps,
  triggeredAt?: number,
): Promise<ReconcileResult> {
  const controlPlane = await deps.management.getControlPlane(namespace, name);
  if (!controlPlane) return {};
  // The one clock reading of this reconcile: the snapshot, the status and the Events all use it.
  const now = deps.clock();
  const log: Log = (level, message, meta = {}) => deps.log[level](message, { object: `${namespace}/${name}`, ...meta });
  const write: Write = (request) => writeStatus(controlPlane, statusFor({ controlPlane, now, ...request }), deps);

  const passed = await gate(controlPlane, deps, log, write);
  if ("result" in passed) return passed.result;
  const { cluster, clusterName, machines, foreign } = passed;
  const templates = await templatesOwned(controlPlane, cluster, deps, log);
  let etcd: EtcdClusterClient | undefined;
  try {
    // Observe.
    const template = bootstrapTemplateReader(controlPlane, deps);
    const world = await observe(controlPlane, cluster, machines, deps.workload, now, template);
    etcd = world.etcd;
    for (const problem of world.certificatesErrors ?? [])
      log("info", `certificates expiry unknown, so it rolls nothing out: ${problem}`);
    let snapshot: Snapshot;
    try {
      snapshot = buildSnapshot({ ...world.observation, foreignMachines: foreign });
    } catch (error) {
      await write({ problem: { reason: "InvalidSpec", message: errorText(error) } }).catch(warnStatus(log));
      throw new ReconcileError(errorText(error), "InvalidSpec", { cause: error });
    }
    // Plan: the planner alone decides, pause and deletion included.
    const { action, assessment: verdict } = deps.planner(snapshot);
    log(action.kind === "Wait" ? "debug" : "info", `next action: ${action.kind}: ${action.reason}`, {
      action: action.kind,
    });

    // Execute.
    const outcome =
      action.kind === "Wait"
        ? undefined
        : await act(
            action,
            { controlPlane, cluster, clusterName, machines, snapshot, etcd: () => etcd, now, template },
            deps,
            log,
          );
    if (outcome?.kind === "done") {
      deps.metrics?.actions.inc({ kind: action.kind });
      if (triggeredAt !== undefined)
        deps.metrics?.stepLatency.observe({ kind: action.kind }, Math.max(0, deps.clock() - triggeredAt) / 1000);
      deps.crash.afterAction(action.kind);
    }

    // Metadata and deletion timeouts reach the Machines in place, only while no action is under way: these patches
    // change the Machines' resourceVersions, which an action's preconditions were taken from.
    const inPlace =
      action.kind === "Wait" ? await machinesInPlace(controlPlane, cluster, machines, snapshot, deps, log) : undefined;
    // The certificates expiry read this reconcile is recorded on its Machine likewise, and not on one just patched.
    const expiriesRecorded =
      action.kind === "Wait" && (inPlace?.updated.length ?? 0) === 0
        ? await expiriesOnMachines(
            controlPlane,
            cluster,
            machines,
            snapshot,
            world.observation.certificatesExpiries,
            deps,
            log,
          )
        : 0;
    // The Machines' UpToDate and OwnerRemediated conditions, likewise, and not on Machines just patched in place
    // (their resourceVersions moved; the next reconcile writes them).
    const conditions =
      action.kind === "Wait" && (inPlace?.updated.length ?? 0) === 0 && expiriesRecorded === 0
        ? await machineConditions(controlPlane, cluster, machines, snapshot, action, deps, log)
        : undefined;

    // Status: what this reconcile observed, whatever the action met.
    const actionStatus = outcome?.kind === "done" ? outcome.result.statusUpdate : undefined;
    const problem =
      outcome?.kind === "deferred" || outcome?.kind === "failed"
        ? outcome.problem
        : (templates?.problem ?? inPlace?.problem ?? conditions?.problem);
    const observed = {
      snapshot: outcome?.kind === "deferred" ? withRemovalRefused(snapshot, outcome.refusedRemoval) : snapshot,
      action,
      verdict,
      ...(world.nodesError ? { nodesError: world.nodesError } : {}),
      ...(world.nodesErrorReason ? { nodesErrorReason: world.nodesErrorReason } : {}),
      ...(actionStatus ? { actionStatus } : {}),
    };
    const written = write({ observed, ...(problem ? { problem } : {}) });
    if (outcome?.kind === "failed") {
      await written.catch(warnStatus(log));
      throw new ReconcileError(outcome.problem.message, outcome.problem.reason, { cause: outcome.error });
    }
    await written;
    if (verdict.observed)
      deps.metrics?.recordEtcd(`${namespace}/${name}`, `${namespace}/${clusterName}`, verdict.quorum);
    const pollIntervalMs =
      action.kind === "Wait" && action.settled
        ? (deps.etcdIdlePollIntervalMs ?? deps.etcdPollIntervalMs)
        : deps.etcdPollIntervalMs;
    return { requeueAfterMs: requeueAfter(action, outcome, pollIntervalMs), action };
  } finally {
    await etcd?.close().catch((error: unknown) => log("warn", `closing the etcd client failed: ${errorText(error)}`));
  }
}

type Log = (level: "info" | "warn" | "error" | "debug", message: string, meta?: Record<string, unknown>) => void;
type Write = (request: Omit<StatusRequest, "controlPlane" | "now">) => Promise<void>;

/**
 * What must hold before observing: an owning Cluster that exists, Quorum's finalizer, and either (for a
 * QuorumControlPlane being deleted) Machines left to care for or (for any other) the cluster's certificates.
 * Otherwise the reconcile ends here. While paused, neither the finalizer nor the certificates are written.
 */
async function gate(
  controlPlane: QuorumControlPlane,
  deps: ReconcilerDeps,
  log: Log,
  write: Write,
): Promise<
  | { result: ReconcileResult }
  | { cluster: Cluster; clusterName: string; machines: Machine[]; foreign: ForeignMachine[] }
> {
  const namespace = controlPlane.metadata.namespace ?? "default";
  const name = controlPlane.metadata.name;
  const key = `${KIND} ${namespace}/${name}`;
  const clusterName = owningClusterName(controlPlane);
  if (!clusterName) {
    await write({
      problem: {
        reason: "WaitingForCluster",
        message: `${key} has no owning Cluster yet: set spec.controlPlaneRef of a Cluster to this object (CAPI then adds the owner reference)`,
      },
    }).catch(warnStatus(log));
    return { result: { requeueAfterMs: 30_000 } };
  }
  const cluster = await deps.management.getCluster(namespace, clusterName);
  if (!cluster) {
    await write({
      problem: {
        reason: "ClusterNotFound",
        message: `Cluster ${namespace}/${clusterName} that owns ${key} was not found: create it or fix the ${LABEL_CLUSTER_NAME} label`,
      },
    }).catch(warnStatus(log));
    return { result: { requeueAfterMs: 30_000 } };
  }
  // Paused, the control plane gets no write but its status, as KCP does. `clusterctl move` creates the objects in
  // the target paused, the QuorumControlPlane before the Secrets it owns: ensuring certificates there would mint a
  // second CA for a running cluster in the gap (the planner waits on the pause; observing etcd writes nothing).
  const paused = cluster.spec?.paused === true || controlPlane.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined;
  const finalizers = controlPlane.metadata.finalizers ?? [];
  if (!controlPlane.metadata.deletionTimestamp && !paused && !finalizers.includes(FINALIZER)) {
    // Without it, deleting the QuorumControlPlane would orphan Machines whose members are still voters.
    deps.metrics?.apiWrites.inc({ verb: "patch-finalizers" });
    await deps.management.setFinalizers(controlPlane, [...finalizers, FINALIZER]);
    return { result: { requeueAfterMs: 0 } };
  }
  // Ours are only the Machines whose controller is this object and whose spec.clusterName is our Cluster; the rest are
  // reported and shown to the planner as other claimants (src/api/ownership.ts).
  const { owned: machines, foreign } = claimMachines(
    await deps.management.listControlPlaneMachines(namespace, name, clusterName),
    controlPlane,
    clusterName,
  );
  if (controlPlane.metadata.deletionTimestamp) {
    if (machines.length === 0) {
      await deps.management.setFinalizers(
        controlPlane,
        finalizers.filter((finalizer) => finalizer !== FINALIZER),
      );
      await deps.workload.forget(namespace, clusterName);
      log("info", "all Machines are gone; released the finalizer");
      return { result: {} };
    }
    // Deletion comes before any certificate work and creates no Secret: in a namespace being deleted the Secrets
    // are gone and creates are Forbidden, and a garbage CA must not keep the finalizer. etcd is still read with the
    // existing etcd CA when it can be; when it cannot, the planner lets the Machines go (src/core/deletion.ts).
    return { cluster, clusterName, machines, foreign };
  }
  if (paused) return { cluster, clusterName, machines, foreign };
  try {
    // A QuorumControlPlane the Cluster does not name must not create or rewrite the Cluster's Secrets (it would take
    // over the kubeconfig Secret of the control plane that does run the Cluster); the planner says why it waits.
    if (namesControlPlane(cluster.spec?.controlPlaneRef, name))
      await deps.workload.ensureCertificates(controlPlane, cluster, bootstrapTemplateReader(controlPlane, deps));
  } catch (error) {
    const message = errorText(error);
    await write({
      problem: { reason: "CertificatesUnavailable", message, condition: CONDITION.CertificatesAvailable },
    }).catch(warnStatus(log));
    throw new ReconcileError(message, "CertificatesUnavailable", { cause: error });
  }
  return { cluster, clusterName, machines, foreign };
}

/**
 * The Cluster owner reference on the referenced templates (clusterctl move carries only what the Cluster owns), for
 * a control plane that is not being deleted and that its Cluster names (another one must not touch them).
 */
async function templatesOwned(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  deps: ReconcilerDeps,
  log: Log,
): Promise<{ problem?: Problem } | undefined> {
  if (controlPlane.metadata.deletionTimestamp) return undefined;
  if (!namesControlPlane(cluster.spec?.controlPlaneRef, controlPlane.metadata.name)) return undefined;
  const result = await keepTemplatesOwned(controlPlane, cluster, deps.management, deps.ownedTemplates);
  for (const template of result.adopted) {
    deps.metrics?.apiWrites.inc({ verb: "patch-owner-references" });
    log("info", `${template} is now owned by Cluster ${cluster.metadata.name}, so clusterctl move carries it`);
  }
  if (result.problem) log("warn", result.problem.message, { reason: result.problem.reason });
  return result;
}

/** spec.machineTemplate's in-place fields on the Machines, for a control plane that is not being deleted and that its Cluster names. */
async function machinesInPlace(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: readonly Machine[],
  snapshot: Snapshot,
  deps: ReconcilerDeps,
  log: Log,
): Promise<InPlaceResult | undefined> {
  if (controlPlane.metadata.deletionTimestamp) return undefined;
  if (!namesControlPlane(cluster.spec?.controlPlaneRef, controlPlane.metadata.name)) return undefined;
  const { templateHash, legacyTemplateHash = templateHash } = snapshot.controlPlane;
  const result = await keepMachinesInPlace(controlPlane, cluster, machines, deps.management, {
    templateHash,
    legacyTemplateHash,
  });
  for (const updated of result.updated) {
    deps.metrics?.apiWrites.inc({ verb: "patch-in-place" });
    log("info", `updated in place from spec.machineTemplate, no rollout: ${updated}`);
  }
  if (result.problem) log("warn", result.problem.message, { reason: result.problem.reason });
  return result;
}

/** The certificates expiry read this reconcile, recorded on the Machines (src/controller/certificates-expiry.ts). */
async function expiriesOnMachines(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: readonly Machine[],
  snapshot: Snapshot,
  expiries: Record<string, number> | undefined,
  deps: ReconcilerDeps,
  log: Log,
): Promise<number> {
  if (!expiries || !namesControlPlane(cluster.spec?.controlPlaneRef, controlPlane.metadata.name)) return 0;
  const { recorded, problem } = await recordExpiries(controlPlane, machines, snapshot, expiries, deps.management);
  for (const line of recorded) {
    deps.metrics?.apiWrites.inc({ verb: "patch-annotations" });
    log("info", `recorded ${line}`);
  }
  if (problem) log("warn", problem);
  return recorded.length + (problem ? 1 : 0);
}

/** The conditions Quorum owns on its Machines, with the same guards as the in-place fields. */
async function machineConditions(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: readonly Machine[],
  snapshot: Snapshot,
  action: Action,
  deps: ReconcilerDeps,
  log: Log,
): Promise<MachineConditionsResult | undefined> {
  if (controlPlane.metadata.deletionTimestamp || snapshot.cluster.paused || snapshot.controlPlane.paused)
    return undefined;
  if (!namesControlPlane(cluster.spec?.controlPlaneRef, controlPlane.metadata.name)) return undefined;
  const result = await keepMachineConditions(
    snapshot.controlPlane.namespace,
    machines,
    snapshot,
    action,
    deps.management,
  );
  for (const updated of result.updated) {
    deps.metrics?.apiWrites.inc({ verb: "patch-machine-conditions" });
    log("debug", `Machine conditions: ${updated}`);
  }
  if (result.problem) log("warn", result.problem.message, { reason: result.problem.reason });
  return result;
}

/** When to look again: at once after an action, soon after a conflict or etcd's refusal, else the Wait's recheck. */
function requeueAfter(action: Action, outcome: Outcome | undefined, pollIntervalMs: number): number {
  if (outcome?.kind === "conflict") return AFTER_CONFLICT_MS;
  if (outcome?.kind === "deferred") return outcome.retryAfterMs;
  if (outcome?.kind === "done") return outcome.result.retryAfterMs ?? AFTER_ACTION_MS;
  if (action.kind !== "Wait") return AFTER_ACTION_MS;
  // A settled cluster is looked at by the poll alone: the planner's own idle recheck (a minute) must not cut a
  // longer --etcd-idle-poll-interval short, as it did until 2026-12-03 (every settled cluster was read every 60 s).
  if (action.settled) return jittered(pollIntervalMs);
  const recheckAfterMs = Math.min(action.recheckAfterMs, pollIntervalMs);
  return recheckAfterMs >= pollIntervalMs ? jittered(recheckAfterMs) : recheckAfterMs;
}

/** How the one action went: done, or met a conflict, a refusal etcd will lift by itself, or a failure. */
type Outcome =
  | { kind: "done"; result: ExecutionResult }
  | { kind: "conflict" }
  /** refusedRemoval: etcd refused removing this member ("unhealthy cluster"), recorded in its status memory. */
  | { kind: "deferred"; problem: Problem; retryAfterMs: number; refusedRemoval?: string }
  | { kind: "failed"; problem: Problem; error: unknown };

interface ActContext {
  controlPlane: QuorumControlPlane;
  cluster: Cluster;
  clusterName: string;
  machines: Machine[];
  snapshot: Snapshot;
  etcd: () => EtcdClusterClient | undefined;
  now: number;
  template: TemplateReader;
}

/** The bootstrap config template, read at most once per reconcile and only when a workload step needs its contents. */
function bootstrapTemplateReader(controlPlane: QuorumControlPlane, deps: ReconcilerDeps): TemplateReader {
  let read: ReturnType<TemplateReader> | undefined;
  const namespace = controlPlane.metadata.namespace ?? "default";
  return () =>
    (read ??= deps.management.getReferenced(
      controlPlane.spec.machineTemplate.spec.bootstrapConfigTemplateRef,
      namespace,
      `${KIND} ${namespace}/${controlPlane.metadata.name} spec.machineTemplate.spec.bootstrapConfigTemplateRef`,
    ));
}

async function act(action: Action, context: ActContext, deps: ReconcilerDeps, log: Log): Promise<Outcome> {
  const { controlPlane } = context;
  const event = (type: "Normal" | "Warning", reason: string, message: string) =>
    deps.management
      .event(controlPlane, type, reason, message, new Date(context.now))
      .catch((error: unknown) => log("warn", `could not record an Event: ${errorText(error)}`));
  try {
    const result = await execute(action, {
      controlPlane,
      clusterName: context.clusterName,
      machines: context.machines,
      snapshot: context.snapshot,
      management: deps.management,
      etcd: async () => context.etcd() ?? (await deps.workload.etcd(controlPlane, context.cluster, [])),
      prepareWorkload: (step) => deps.workload.prepareWorkload(controlPlane, context.cluster, step, context.template),
      clock: deps.clock,
    });
    if (result.deferred) {
      const message = `${action.kind} deferred: ${result.message}`;
      log("info", message, { action: action.kind });
      return {
        kind: "deferred",
        problem: { reason: `${action.kind}Deferred`, message },
        retryAfterMs: result.retryAfterMs ?? REFUSAL_BACKOFF.firstMs,
      };
    }
    log("info", result.message, { action: action.kind, ...result.logMeta });
    // A deletion that gave up on etcd says which members it leaves there, where users look for what went wrong.
    const left = "membersLeft" in action ? action.membersLeft : undefined;
    if (left && left.length > 0)
      await event("Warning", "EtcdMembersNotRemoved", `${result.message} — ${action.reason}`);
    else await event("Normal", action.kind, `${result.message} — ${action.reason}`);
    return { kind: "done", result };
  } catch (error) {
    // A conflict means the decision was made on an object that changed meanwhile (a stale cache): look
    // again soon rather than report a failure; the next plan sees the change.
    if (isConflict(error)) {
      log("debug", `${action.kind} hit a conflict; re-planning`, { action: action.kind });
      return { kind: "conflict" };
    }
    // etcd said "not yet" (a removal before its 5 s health window opened, which is every rollout right after
    // leadership moved to the member that just joined; a call that met a leader change): assess judged the step
    // safe, so wait and ask again with backoff instead of reporting a failure (found by the e2e suite).
    const notYet = retryLaterOf(error);
    if (notYet) {
      const reason = `${action.kind}Deferred`;
      const retryAfterMs = refusalBackoff(controlPlane, reason, context.now, notYet.retryAfterMs);
      const message = `${action.kind} deferred: ${notYet.message}; asking again in ${Math.round(retryAfterMs / 1000)}s`;
      log("info", message, { action: action.kind, refusal: notYet.refusal });
      const refusedRemoval =
        notYet.refusal === "removal-window" && "memberId" in action && typeof action.memberId === "string"
          ? { refusedRemoval: action.memberId }
          : {};
      return { kind: "deferred", problem: { reason, message }, retryAfterMs, ...refusedRemoval };
    }
    const message = `${action.kind} failed: ${errorText(error)}`;
    const reason = error instanceof UnsupportedTemplateError ? error.reason : `${action.kind}Failed`;
    if (isDisruptive(action)) await event("Warning", reason, message);
    return { kind: "failed", problem: { reason, message }, error };
  }
}

/** The snapshot as status records it after etcd refused removing `memberId` now (removalMayBeOpen asks early once). */
function withRemovalRefused(snapshot: Snapshot, memberId: string | undefined): Snapshot {
  if (memberId === undefined) return snapshot;
  const members = snapshot.etcd.members.map((member) =>
    member.id === memberId ? { ...member, removalRefused: snapshot.now } : member,
  );
  return { ...snapshot, etcd: { ...snapshot.etcd, members } };
}

/** How long to wait after etcd's "not yet": see REFUSAL_BACKOFF. */
export function refusalBackoff(controlPlane: QuorumControlPlane, reason: string, now: number, hintMs: number): number {
  const reconciled = controlPlane.status?.conditions?.find((condition) => condition.type === CONDITION.Reconciled);
  const since =
    reconciled?.status === "False" && reconciled.reason === reason
      ? now - Date.parse(reconciled.lastTransitionTime ?? "")
      : 0;
  const waited = Number.isFinite(since) ? Math.max(0, since) : 0;
  return Math.min(REFUSAL_BACKOFF.maxMs, Math.max(REFUSAL_BACKOFF.firstMs, hintMs, waited));
}

/** The poll interval shortened by up to 10 %, so a poll is never later than the interval promises. */
function jittered(ms: number): number {
  return Math.round(ms * (1 - IDLE_POLL_JITTER * Math.random()));
}

async function writeStatus(
  controlPlane: QuorumControlPlane,
  status: QuorumControlPlaneStatus,
  deps: ReconcilerDeps,
): Promise<void> {
  const patch = mergePatch(controlPlane.status ?? {}, status);
  if (patch === undefined) return;
  deps.metrics?.apiWrites.inc({ verb: "patch-status" });
  await deps.management.patchStatus(controlPlane, patch as Record<string, unknown>);
}

function warnStatus(log: Log): (error: unknown) => void {
  return (error) => log("warn", `could not write status: ${errorText(error)}`);
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
