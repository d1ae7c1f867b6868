// Runs controllers: informers feed work queues, workers reconcile keys, all under one leader-election term.
//
// The order inside a term is the point of this file (DESIGN.md, lesson 3: k3s registered handlers after its
// informers had started on one lease path and ran controllers that never received an event):
//   1. register every handler on fresh informers, 2. start the informers, 3. wait until all caches synced,
//   4. start the workers.
// Losing the lease stops the workers at once (their signal aborts), then the informers. A graceful stop
// drains the workers while the lease is still held and renewed, then releases it.
//
// A term also ends when its caches have not synced within `cacheSyncTimeoutMs` (controller-runtime: 2 minutes):
// a leader that can never start its workers must not hold the Lease for ever. Both ways of losing a term call
// `onLostLeadership`, which the controller process wires to exit (README, "Leadership"): a reconcile in flight
// may be between two port calls, and only ending the process stops its next one for certain.
import { systemClock, type Clock } from "./clock.ts";
import { errorMessage, silentLogger, type Logger } from "./log.ts";
import {
  describeTarget,
  Informer,
  kubeListerWatcher,
  objectKey,
  stripManagedFields,
  type InformerOptions,
  type ListerWatcher,
  type WatchTarget,
} from "./informer.ts";
import {
  CLIENT_GO_TIMINGS,
  defaultIdentity,
  kubeLeaseClient,
  LeaderElector,
  type LeaderElectionTimings,
  type LeaseClient,
} from "./leader.ts";
import { WorkQueue, type ReconcileResult, type WorkQueueOptions } from "./queue.ts";
import type { KubeObject, KubeRest } from "./rest.ts";

/** Read access to the caches of the current term, for reconcilers and key mappers. */
export interface CacheReader {
  /** The synced informer of a watched target (throws if no controller watches it). */
  informer<T extends KubeObject>(target: WatchTarget): Informer<T>;
}

export interface WatchSpec {
  target: WatchTarget;
  /**
   * The queue keys an event on this object should reconcile (e.g. a Machine maps to its owning control
   * plane). Default: the object's own key. Called for add, update and delete.
   */
  keysFor?(obj: KubeObject, caches: CacheReader): string[];
  /**
   * Shapes each object before the informer caches it (InformerOptions.transform), e.g. keeps only the fields the
   * controller reads. Default: drop metadata.managedFields. Controllers watching the same target must pass the same
   * function, as they share one cache.
   */
  transform?: (obj: KubeObject) => KubeObject | undefined;
}

export interface ReconcileContext extends CacheReader {
  /** Aborts when this process stops leading or shuts down: stop acting as soon as it does. */
  signal: AbortSignal;
}

export interface Controller {
  /** Names the controller's queue in logs and metrics. */
  name: string;
  watches: WatchSpec[];
  /** Throw to retry with backoff; return requeueAfterMs to be called again after a wait. */
  reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult | void>;
  /**
   * Of the keys waiting, lower ranks are reconciled first (every fifth turn goes to the next rank up).
   * Unset: the order the keys were queued in; undefined for a key ranks it after every number.
   */
  rank?(key: string, caches: CacheReader): number | undefined;
  /**
   * In a graceful stop, after the workers stopped and while the lease is still held: finish what the controller sends
   * in the background (Events). Awaited for DRAIN_BACKGROUND_MS at most.
   */
  drain?(): Promise<void>;
}

/** How long a graceful stop waits for the controllers' background sends (drain) before it goes on. */
export const DRAIN_BACKGROUND_MS = 5_000;

export type ManagerEventType =
  | "campaigning"
  | "started-leading"
  | "handlers-registered"
  | "starting-informers"
  | "caches-synced"
  | "starting-workers"
  | "stopped-leading"
  | "workers-stopped"
  | "informers-stopped"
  | "stopped";

export interface ManagerEvent {
  type: ManagerEventType;
  /** Leadership term, counted from 1 in this process (0 before the first). */
  term: number;
  detail?: string;
}

export interface LeaderElectionConfig extends Partial<LeaderElectionTimings> {
  namespace: string;
  name: string;
  /** Default: "<hostname>_<uuid>". */
  identity?: string;
  /** Replaces the API-server-backed Lease (tests). */
  client?: LeaseClient;
}

export interface ManagerOptions {
  controllers: Controller[];
  /** Talks to the API server; needed unless `listerWatcherFor` and a Lease client are given. */
  rest?: KubeRest;
  /** Builds each informer's list/watch source (default: the API server through `rest`). */
  listerWatcherFor?: (target: WatchTarget) => ListerWatcher<KubeObject>;
  /** Omit to run without leader election (a single replica, or tests). */
  leaderElection?: LeaderElectionConfig;
  informer?: InformerOptions;
  /** Concurrency and backoff of every controller's queue (`--concurrency`). */
  queue?: Omit<WorkQueueOptions, "name" | "logger" | "clock">;
  logger?: Logger;
  /** Time for the elector, queues and informers (tests drive it by hand). */
  clock?: Clock;
  /**
   * Called synchronously, before anything else happens, when a term ends other than by `stop()`: the Lease was lost
   * (renew deadline passed, another holder) or the caches did not sync in time. The controller process exits here,
   * as controller-runtime does. Without it the manager stops the term's workers and informers and campaigns again.
   */
  onLostLeadership?: (reason: string) => void;
  /** A term whose caches have not all synced this long after it began is given up. Default: 2 minutes. */
  cacheSyncTimeoutMs?: number;
  /** Sees every lifecycle step in order; for logs, probes and the tests that assert the order. */
  onEvent?: (event: ManagerEvent) => void;
}

/** controller-runtime's default CacheSyncTimeout. */
export const DEFAULT_CACHE_SYNC_TIMEOUT_MS = 120_000;

interface Term {
  number: number;
  informers: Map<string, Informer<KubeObject>>;
  queues: Map<string, WorkQueue>;
  synced: boolean;
  ending: Promise<void> | undefined;
}

/** Identifies a watch target: controllers watching the same target share one informer. */
export function targetKey(target: WatchTarget): string {
  const r = target.resource;
  return [
    r.group,
    r.version,
    r.plural,
    target.namespace ?? "",
    target.labelSelector ?? "",
    target.fieldSelector ?? "",
  ].join("|");
}

export class Manager {
  private readonly options: ManagerOptions;
  private readonly logger: Logger;
  private readonly elector: LeaderElector | undefined;
  private termCount = 0;
  private term: Term | undefined;
  private termStarting: Promise<void> | undefined;
  private started = false;
  private stopping: Promise<void> | undefined;
  /** Without leader election, the one term runs until stop() aborts this. */
  private readonly soloTerm = new AbortController();

  constructor(options: ManagerOptions) {
    this.options = options;
    this.logger = options.logger ?? silentLogger;
    const names = new Set<string>();
    for (const controller of options.controllers) {
      if (names.has(controller.name))
        throw new Error(`two controllers are named ${controller.name}: names must be unique`);
      names.add(controller.name);
    }
    const transforms = new Map<string, WatchSpec["transform"]>();
    for (const watch of options.controllers.flatMap((controller) => controller.watches)) {
      const key = targetKey(watch.target);
      if (transforms.has(key) && transforms.get(key) !== watch.transform)
        throw new Error(
          `two watches of ${describeTarget(watch.target)} pass different transforms: they share one cache, so pass the same`,
        );
      transforms.set(key, watch.transform);
    }
    if (!options.rest && !options.listerWatcherFor) {
      throw new Error("manager: pass `rest` (an API server client) or `listerWatcherFor`");
    }
    const le = options.leaderElection;
    if (le) {
      const client = le.client ?? (options.rest ? kubeLeaseClient(options.rest, le.namespace, le.name) : undefined);
      if (!client) throw new Error("manager: leader election needs `rest` or a Lease client");
      this.elector = new LeaderElector({
        lease: client,
        identity: le.identity ?? defaultIdentity(),
        leaseDurationMs: le.leaseDurationMs ?? CLIENT_GO_TIMINGS.leaseDurationMs,
        renewDeadlineMs: le.renewDeadlineMs ?? CLIENT_GO_TIMINGS.renewDeadlineMs,
        retryPeriodMs: le.retryPeriodMs ?? CLIENT_GO_TIMINGS.retryPeriodMs,
        logger: this.logger,
        clock: options.clock,
        onStartedLeading: (signal) => this.beginTerm(signal),
        onStoppedLeading: (reason) => this.endTerm(reason),
      });
    }
  }

  /** This process's leader-election identity (undefined without leader election). */
  get identity(): string | undefined {
    return this.elector?.identity;
  }

  /** True while this process holds the lease (always true without leader election once started). */
  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.started && !this.stopping;
  }

  /** For /readyz: leading with every cache synced, or a healthy standby. */
  isReady(): boolean {
    if (!this.started || this.stopping) return false;
    if (this.elector && !this.elector.isLeader()) return true;
    return this.term?.synced ?? false;
  }

  /** Keys waiting per controller queue (0 when not leading), for the queue-depth metric. */
  queueDepths(): Record<string, number> {
    const depths: Record<string, number> = {};
    for (const controller of this.options.controllers)
      depths[controller.name] = this.term?.queues.get(controller.name)?.depth ?? 0;
    return depths;
  }

  /**
   * Reconciles `key` of controller `controller` now, for what no watched object shows (an etcd connection that
   * closed). False, and nothing queued, when this process is not leading with synced caches, or no such controller:
   * the next term's first reconcile of every key covers it.
   */
  enqueue(controller: string, key: string): boolean {
    const term = this.term;
    const queue = term?.synced && !term.ending ? term.queues.get(controller) : undefined;
    if (!queue) return false;
    queue.add(key);
    return true;
  }

  start(): void {
    if (this.started) throw new Error("manager already started");
    this.started = true;
    if (this.elector) {
      this.emit({ type: "campaigning", term: this.termCount, detail: this.elector.identity });
      this.elector.start();
    } else {
      this.beginTerm(this.soloTerm.signal);
    }
  }

  /**
   * Graceful shutdown: takes no new work, lets reconciles in flight finish and stops the informers while
   * still holding (and renewing) the lease, then releases it so a standby takes over at once.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.endTerm("shutting down", { drain: true });
      if (this.elector) {
        await this.elector.stop({ release: true });
      } else {
        // A term still being set up when stop() came has no `term` to drain yet: abort it and wait.
        this.soloTerm.abort();
        await this.termStarting;
        await this.endTerm("shutting down");
      }
      this.options.rest?.close();
      this.emit({ type: "stopped", term: this.termCount });
    })();
    return this.stopping;
  }

  /** SIGTERM/SIGINT → graceful stop → exit(0). Returns a function that removes the handlers. */
  stopOnSignals(
    signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT"],
    exit: (code: number) => void = process.exit,
  ): () => void {
    const handler = (signal: NodeJS.Signals) => {
      this.logger.info("received signal; shutting down gracefully", { signal });
      this.stop().then(
        () => exit(0),
        (err: unknown) => {
          this.logger.error("graceful shutdown failed", { error: errorMessage(err) });
          exit(1);
        },
      );
    };
    for (const signal of signals) process.on(signal, handler);
    return () => {
      for (const signal of signals) process.off(signal, handler);
    };
  }

  private beginTerm(signal: AbortSignal): void {
    // Registered here, synchronously, so no lifecycle step or reconcile can run between the loss and the call.
    signal.addEventListener("abort", () => this.lostLeadership(reasonOf(signal)), { once: true });
    this.termStarting = this.runTerm(signal).catch((err: unknown) => {
      this.logger.error("controller manager could not start its controllers", { error: errorMessage(err) });
    });
  }

  private async runTerm(signal: AbortSignal): Promise<void> {
    // A previous term must be fully down before a new one builds informers and queues.
    await this.term?.ending;
    if (this.stopping) return;
    const term: Term = {
      number: ++this.termCount,
      informers: new Map(),
      queues: new Map(),
      synced: false,
      ending: undefined,
    };
    this.term = term;
    this.emit({ type: "started-leading", term: term.number });
    // Stop the workers the instant leadership ends, not after the elector's callback chain gets to it.
    if (signal.aborted) {
      await this.endTerm("stopped leading while starting");
      return;
    }
    signal.addEventListener("abort", () => void this.endTerm("stopped leading"), { once: true });
    const caches = this.cacheReader(term);

    // 1. Every handler, on fresh informers, before anything is listed.
    for (const controller of this.options.controllers) {
      const queue = new WorkQueue({
        ...this.options.queue,
        name: controller.name,
        logger: this.logger,
        clock: this.options.clock,
        ...(controller.rank ? { rank: (key: string) => controller.rank?.(key, caches) } : {}),
      });
      term.queues.set(controller.name, queue);
      for (const watch of controller.watches) {
        const informer = this.informerFor(term, watch);
        const enqueue = (obj: KubeObject) => {
          const keys = watch.keysFor ? watch.keysFor(obj, caches) : [objectKey(obj)];
          for (const key of keys) queue.add(key);
        };
        informer.addHandlers({ add: enqueue, update: enqueue, delete: enqueue });
      }
    }
    this.emit({ type: "handlers-registered", term: term.number, detail: `${term.queues.size} controllers` });
    if (signal.aborted || term.ending) return;

    // 2. Informers. Announced first, as each one begins listing inside start().
    this.emit({
      type: "starting-informers",
      term: term.number,
      detail: [...term.informers.values()].map((i) => i.description).join("; "),
    });
    for (const informer of term.informers.values()) informer.start();

    // 3. Every cache synced, so the first reconcile sees the whole world, not a partial list.
    if (!(await this.waitForCaches(term, signal))) return;
    if (signal.aborted || term.ending) return;
    term.synced = true;
    this.emit({ type: "caches-synced", term: term.number });

    // 4. Workers. Announced first, as a worker may call reconcile inside start().
    this.emit({ type: "starting-workers", term: term.number });
    for (const controller of this.options.controllers) {
      const queue = term.queues.get(controller.name) as WorkQueue;
      queue.start((key, queueSignal) => controller.reconcile(key, { ...caches, signal: queueSignal }));
    }
  }

  /** True once every cache of the term synced; false when the term ended first or gave up waiting. */
  private async waitForCaches(term: Term, signal: AbortSignal): Promise<boolean> {
    const clock = this.options.clock ?? systemClock;
    const timeoutMs = this.options.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS;
    const waiting = new AbortController();
    const onEnd = () => waiting.abort(signal.reason);
    signal.addEventListener("abort", onEnd, { once: true });
    let timedOut = false;
    const timer = clock.setTimeout(() => {
      timedOut = true;
      waiting.abort(new Error(`caches did not sync within ${timeoutMs} ms`));
    }, timeoutMs);
    try {
      await Promise.all([...term.informers.values()].map((informer) => informer.waitForSync(waiting.signal)));
      return true;
    } catch (err) {
      if (signal.aborted || term.ending) return false;
      if (!timedOut) throw err;
      const unsynced = [...term.informers.values()].filter((informer) => !informer.hasSynced());
      const reason =
        `caches not synced within ${timeoutMs} ms (${unsynced.map((informer) => informer.description).join("; ")}): ` +
        "giving up leadership so that a replica that can reach the API server leads";
      this.logger.error("manager: cache sync timed out", { term: term.number, reason });
      // With an elector, resigning aborts the term's signal, which reports the loss (beginTerm).
      if (this.elector) this.elector.resign(reason);
      else this.lostLeadership(reason);
      await this.endTerm(reason);
      return false;
    } finally {
      clock.clearTimeout(timer);
      signal.removeEventListener("abort", onEnd);
    }
  }

  private lostLeadership(reason: string): void {
    if (this.stopping || !this.options.onLostLeadership) return;
    try {
      this.options.onLostLeadership(reason);
    } catch (err) {
      this.logger.error("manager: onLostLeadership failed", { reason, error: errorMessage(err) });
    }
  }

  /**
   * Stops the current term's workers, then its informers. Safe to call repeatedly. With `drain` (graceful
   * shutdown while the lease is still held and renewed) reconciles in flight may finish; otherwise, and as
   * soon as leadership is lost even during a drain, their signal aborts.
   */
  private endTerm(reason: string, options: { drain?: boolean } = {}): Promise<void> {
    const term = this.term;
    if (!term) return Promise.resolve();
    const abortInFlight = !options.drain;
    if (term.ending) {
      if (abortInFlight) for (const queue of term.queues.values()) void queue.shutdown({ abortInFlight: true });
      return term.ending;
    }
    term.ending = (async () => {
      this.emit({ type: "stopped-leading", term: term.number, detail: reason });
      await Promise.all([...term.queues.values()].map((queue) => queue.shutdown({ abortInFlight })));
      this.emit({ type: "workers-stopped", term: term.number });
      if (options.drain) await this.drainControllers();
      await Promise.all([...term.informers.values()].map((informer) => informer.stop()));
      this.emit({ type: "informers-stopped", term: term.number });
    })();
    return term.ending;
  }

  /** Each controller's drain(), for DRAIN_BACKGROUND_MS at most; a failure is logged, never thrown. */
  private async drainControllers(): Promise<void> {
    const clock = this.options.clock ?? systemClock;
    let timer: unknown;
    const drained = Promise.all(
      this.options.controllers.map((controller) =>
        controller.drain?.().catch((err: unknown) =>
          this.logger.warn("manager: a controller's drain failed", {
            controller: controller.name,
            error: errorMessage(err),
          }),
        ),
      ),
    );
    const timedOut = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, DRAIN_BACKGROUND_MS)));
    await Promise.race([drained, timedOut]);
    clock.clearTimeout(timer);
  }

  private informerFor(term: Term, { target, transform }: WatchSpec): Informer<KubeObject> {
    const key = targetKey(target);
    let informer = term.informers.get(key);
    if (!informer) {
      const source = this.options.listerWatcherFor
        ? this.options.listerWatcherFor(target)
        : kubeListerWatcher<KubeObject>(this.options.rest as KubeRest, target);
      informer = new Informer(source, {
        transform: transform ?? stripManagedFields,
        ...this.options.informer,
        logger: this.options.informer?.logger ?? this.logger,
        clock: this.options.informer?.clock ?? this.options.clock,
      });
      term.informers.set(key, informer);
    }
    return informer;
  }

  private cacheReader(term: Term): CacheReader {
    return {
      informer: <T extends KubeObject>(target: WatchTarget): Informer<T> => {
        const informer = term.informers.get(targetKey(target));
        if (!informer) {
          throw new Error(
            `no controller watches ${describeTarget(target)}: add it to a controller's watches to read it from the cache`,
          );
        }
        return informer as unknown as Informer<T>;
      },
    };
  }

  private emit(event: ManagerEvent): void {
    this.logger.info(`manager: ${event.type}`, { term: event.term, ...(event.detail ? { detail: event.detail } : {}) });
    try {
      this.options.onEvent?.(event);
    } catch (err) {
      this.logger.error("manager event hook failed", { event: event.type, error: errorMessage(err) });
    }
  }
}

function reasonOf(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? "leadership ended");
}
