// A list+watch cache for one resource that keeps itself alive.
//
// client-node's ListWatch stops for good on any error but 410, reports its own stop() as an error, turns a
// throwing handler into an unhandled rejection and never notices a watch that silently went quiet. This one:
// - re-lists and re-watches after any error, with exponential backoff (reset by a successful list);
// - re-lists every `resyncMs` (a watchdog against a watch that stalls without an error) and diffs the
//   result against the cache, so a missed delete or update still reaches the handlers;
// - calls handlers inside try/catch (and catches their promises), logging failures with the object key;
// - stops quietly.
import { backoffDelay, sleep, systemClock, type Clock, type TimerHandle } from "./clock.ts";
import { errorMessage, silentLogger, type Logger } from "./log.ts";
import {
  KubeApiError,
  isGone,
  resourcePath,
  type KubeList,
  type KubeObject,
  type KubeRest,
  type KubeStatus,
  type ResourceRef,
  type WatchEvent,
} from "./rest.ts";

/**
 * Drops metadata.managedFields, which no reconciler reads and which is often the largest part of an object
 * (server-side apply bookkeeping): the Manager caches objects without it, as controller-runtime does.
 */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (!obj.metadata || !("managedFields" in obj.metadata)) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata as T["metadata"] & { managedFields?: unknown };
  return { ...obj, metadata } as T;
}

/** The key of an object in caches and queues: "namespace/name", or "name" for cluster-scoped objects. */
export function objectKey(obj: { metadata: { name: string; namespace?: string } }): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}

/** The I/O an informer needs; `kubeListerWatcher` talks to an API server, tests may pass a fake. */
export interface ListerWatcher<T extends KubeObject> {
  /** Human description for logs and errors, e.g. "configmaps in namespace a (labels app=x)". */
  readonly description: string;
  /**
   * With `transform`, a lister may apply it to each page as it arrives (and say so with `transformed`), so that a list
   * never holds every object as the API server serves it at once: at 1,000 clusters the four informers' re-lists
   * held 32 MB of raw objects together (issue 19). Objects it leaves out are not returned.
   */
  list(
    signal: AbortSignal,
    transform?: (obj: T) => T | undefined,
  ): Promise<{ items: T[]; resourceVersion: string; transformed?: boolean }>;
  /** Resolves when the server ends the watch; rejects on error; resolves when `signal` aborts. */
  watch(resourceVersion: string, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal): Promise<void>;
}

export interface WatchTarget {
  resource: ResourceRef;
  /** Only this namespace; all namespaces when unset (or for cluster-scoped resources). */
  namespace?: string;
  /** `--watch-filter`: e.g. "cluster.x-k8s.io/watch-filter=team-a". */
  labelSelector?: string;
  fieldSelector?: string;
}

export interface KubeListerWatcherOptions {
  /** Asked of the server, which then ends the watch cleanly; a fresh watch follows. Default 5 minutes. */
  watchTimeoutSeconds?: number;
  /** A watch silent this long is treated as broken. Default: watchTimeoutSeconds + 60 s. */
  idleTimeoutMs?: number;
}

export function describeTarget(target: WatchTarget): string {
  const { resource } = target;
  const name = resource.group ? `${resource.plural}.${resource.group}` : resource.plural;
  const scope = resource.namespaced
    ? target.namespace
      ? ` in namespace ${target.namespace}`
      : " in all namespaces"
    : "";
  const filters = [
    target.labelSelector ? `labels ${target.labelSelector}` : "",
    target.fieldSelector ? `fields ${target.fieldSelector}` : "",
  ].filter(Boolean);
  return `${name}${scope}${filters.length ? ` (${filters.join(", ")})` : ""}`;
}

export function kubeListerWatcher<T extends KubeObject>(
  rest: KubeRest,
  target: WatchTarget,
  options: KubeListerWatcherOptions = {},
): ListerWatcher<T> {
  const path = resourcePath(target.resource, target.namespace);
  const selectors = { labelSelector: target.labelSelector, fieldSelector: target.fieldSelector };
  const watchTimeoutSeconds = options.watchTimeoutSeconds ?? 300;
  const idleTimeoutMs = options.idleTimeoutMs ?? (watchTimeoutSeconds + 60) * 1000;
  return {
    description: describeTarget(target),
    async list(signal, transform) {
      const items: T[] = [];
      let continueToken: string | undefined;
      let resourceVersion: string;
      // Paged so a management cluster with thousands of Machines does not produce one huge response.
      do {
        const page = await rest.get<KubeList<T>>(path, {
          query: { ...selectors, limit: 500, continue: continueToken },
          signal,
        });
        for (const item of page.items ?? []) {
          const kept = transform ? transform(item) : item;
          if (kept !== undefined) items.push(kept);
        }
        continueToken = page.metadata?.continue || undefined;
        resourceVersion = page.metadata?.resourceVersion ?? "";
      } while (continueToken);
      return { items, resourceVersion, transformed: transform !== undefined };
    },
    watch(resourceVersion, onEvent, signal) {
      return rest.watch<T>(
        path,
        { ...selectors, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: watchTimeoutSeconds },
        onEvent,
        signal,
        idleTimeoutMs,
      );
    },
  };
}

export interface InformerHandlers<T> {
  add?(obj: T): unknown;
  update?(obj: T, old: T): unknown;
  delete?(obj: T): unknown;
}

export interface InformerOptions<T extends KubeObject = KubeObject> {
  /**
   * Shapes each listed or watched object before it is cached and handed to handlers, e.g. to drop fields
   * nobody reads from a large resource. Returning undefined keeps the object out of the cache, as if it did
   * not exist (one that was cached and no longer passes is removed, with a delete event).
   */
  transform?: (obj: T) => T | undefined;
  /** Re-list this often even when the watch looks healthy. Default 10 minutes. */
  resyncMs?: number;
  /** Restart delays after errors: base * 2^(n-1), capped. Defaults 500 ms and 30 s. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** A watch that ends cleanly sooner than this counts as a failure (prevents a hot re-watch loop). */
  minWatchMs?: number;
  clock?: Clock;
  logger?: Logger;
}

export const INFORMER_DEFAULTS = {
  resyncMs: 10 * 60_000,
  backoffBaseMs: 500,
  backoffMaxMs: 30_000,
  minWatchMs: 1_000,
} as const;

export interface InformerStats {
  /** Successful lists, the initial one included. */
  lists: number;
  /** Errors that led to a restart with backoff. */
  failures: number;
  /** Re-lists forced by the watchdog. */
  resyncs: number;
}

class WatchdogResync extends Error {}

export class Informer<T extends KubeObject> {
  readonly description: string;
  readonly stats: InformerStats = { lists: 0, failures: 0, resyncs: 0 };
  private readonly source: ListerWatcher<T>;
  private readonly resyncMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly minWatchMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly transform: ((obj: T) => T | undefined) | undefined;
  private readonly cache = new Map<string, T>();
  /** The same objects by namespace, so listing one namespace does not walk every object. */
  private readonly byNamespace = new Map<string, Map<string, T>>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly stopController = new AbortController();
  private readonly syncWaiters = new Set<{ resolve: () => void; reject: (err: unknown) => void }>();
  private started = false;
  private synced = false;
  private loop: Promise<void> | undefined;

  constructor(source: ListerWatcher<T>, options: InformerOptions<T> = {}) {
    this.source = source;
    this.description = source.description;
    this.resyncMs = options.resyncMs ?? INFORMER_DEFAULTS.resyncMs;
    this.backoffBaseMs = options.backoffBaseMs ?? INFORMER_DEFAULTS.backoffBaseMs;
    this.backoffMaxMs = options.backoffMaxMs ?? INFORMER_DEFAULTS.backoffMaxMs;
    this.minWatchMs = options.minWatchMs ?? INFORMER_DEFAULTS.minWatchMs;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.transform = options.transform;
  }

  /**
   * Registers handlers. Only before `start`: a handler added later would miss the objects already listed,
   * which is how k3s's leader-elected controllers ended up running without ever receiving an event.
   */
  addHandlers(handlers: InformerHandlers<T>): void {
    if (this.started) {
      throw new Error(
        `informer for ${this.description}: handlers must be registered before start(), ` +
          "otherwise they miss every object listed before them",
      );
    }
    this.handlers.push(handlers);
  }

  get isStarted(): boolean {
    return this.started;
  }

  start(): void {
    if (this.started) throw new Error(`informer for ${this.description}: already started`);
    if (this.stopController.signal.aborted)
      throw new Error(`informer for ${this.description}: cannot restart after stop()`);
    this.started = true;
    this.loop = this.run();
  }

  /** Stops watching and resolves once the loop has ended. Emits no error and calls no handler afterwards. */
  async stop(): Promise<void> {
    if (!this.stopController.signal.aborted) this.stopController.abort();
    const stopped = new Error(`informer for ${this.description} stopped before its cache synced`);
    for (const waiter of this.syncWaiters) waiter.reject(stopped);
    this.syncWaiters.clear();
    await this.loop;
  }

  /** True once the first list has been applied to the cache. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once synced; rejects if `signal` aborts or the informer stops first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.stopController.signal.aborted) {
      return Promise.reject(new Error(`informer for ${this.description} is stopped`));
    }
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        this.syncWaiters.delete(waiter);
        reject(signal?.reason);
      };
      const waiter = {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject: (err: unknown) => {
          signal?.removeEventListener("abort", onAbort);
          reject(err);
        },
      };
      this.syncWaiters.add(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Objects in the cache, optionally of one namespace. */
  list(namespace?: string): T[] {
    if (namespace === undefined) return [...this.cache.values()];
    return [...(this.byNamespace.get(namespace)?.values() ?? [])];
  }

  /** One object by key ("namespace/name" or "name"). */
  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  private async run(): Promise<void> {
    const stopSignal = this.stopController.signal;
    let attempt = 0;
    while (!stopSignal.aborted) {
      const cycle = new AbortController();
      const onStop = () => cycle.abort();
      stopSignal.addEventListener("abort", onStop, { once: true });
      const watchdog: TimerHandle = this.clock.setTimeout(() => cycle.abort(new WatchdogResync()), this.resyncMs);
      try {
        const listed = await this.source.list(cycle.signal, (obj) => this.shapeListed(obj));
        if (cycle.signal.aborted) throw cycle.signal.reason;
        this.replace(listed.items, listed.transformed === true);
        this.stats.lists++;
        attempt = 0;
        this.markSynced();
        await this.watchUntilBroken(listed.resourceVersion, cycle.signal);
      } catch (err) {
        if (stopSignal.aborted) break;
        if (cycle.signal.reason instanceof WatchdogResync) {
          this.stats.resyncs++;
          this.logger.debug("informer re-listing on schedule", { informer: this.description });
          continue;
        }
        if (isGone(err)) {
          // Expected after long disconnects or etcd compaction: a fresh list is the documented remedy.
          this.logger.info("informer resource version expired; re-listing", { informer: this.description });
          continue;
        }
        attempt++;
        this.stats.failures++;
        const retryInMs = backoffDelay(attempt, this.backoffBaseMs, this.backoffMaxMs);
        this.logger.warn("informer failed; restarting", {
          informer: this.description,
          attempt,
          retryInMs,
          error: errorMessage(err),
        });
        try {
          await sleep(this.clock, retryInMs, stopSignal);
        } catch {
          break;
        }
      } finally {
        this.clock.clearTimeout(watchdog);
        stopSignal.removeEventListener("abort", onStop);
      }
    }
    this.synced = false;
  }

  /** Watches from `resourceVersion`, re-watching after clean server-side ends, until an error or abort. */
  private async watchUntilBroken(resourceVersion: string, signal: AbortSignal): Promise<void> {
    let lastVersion = resourceVersion;
    while (!signal.aborted) {
      const startedAt = this.clock.now();
      let streamError: unknown;
      await this.source.watch(
        lastVersion,
        (event) => {
          if (streamError !== undefined || signal.aborted) return;
          if (event.type === "ERROR") {
            const status = event.object as KubeStatus;
            streamError = new KubeApiError("WATCH", this.description, status.code ?? 500, status, "");
            throw streamError;
          }
          const obj = event.object as T;
          const version = obj.metadata?.resourceVersion;
          if (event.type !== "BOOKMARK") this.apply(event.type, obj);
          if (version) lastVersion = version;
        },
        signal,
      );
      if (signal.aborted) throw signal.reason;
      if (streamError !== undefined) throw streamError;
      const lastedMs = this.clock.now() - startedAt;
      if (lastedMs < this.minWatchMs) {
        throw new Error(`watch of ${this.description} was closed by the API server after ${lastedMs} ms`);
      }
    }
    throw signal.reason;
  }

  /**
   * A listed object as the cache would hold it: the cached object itself when the list shows the version already
   * cached, so a re-list (every resyncMs, all informers together) holds a second copy only of what changed, and does
   * not transform it again. At 2,000 clusters the re-list raised the controller's RSS by 58 MB (issue 19).
   */
  private shapeListed(obj: T): T | undefined {
    const cached = this.cache.get(objectKey(obj));
    const version = obj.metadata?.resourceVersion;
    if (cached && version && cached.metadata.resourceVersion === version) return cached;
    return this.transform ? this.transform(obj) : obj;
  }

  private apply(type: "ADDED" | "MODIFIED" | "DELETED", received: T, transformed = false): void {
    const key = objectKey(received);
    const old = this.cache.get(key);
    const obj = this.transform && !transformed ? this.transform(received) : received;
    if (type === "DELETED" || obj === undefined) {
      const gone = obj ?? old;
      // An object the transform leaves out and that was never cached: nothing changed for the handlers.
      if (gone === undefined) return;
      this.remove(key, gone);
      this.notify("delete", gone, old);
      return;
    }
    this.store(key, obj);
    if (!old) this.notify("add", obj, undefined);
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.notify("update", obj, old);
  }

  /**
   * Makes the cache equal to a fresh list, telling handlers about every difference. `transformed`: the lister applied
   * the transform already (and left out what it drops, which is then deleted here as not listed).
   */
  private replace(items: T[], transformed: boolean): void {
    const seen = new Set<string>();
    for (const obj of items) {
      seen.add(objectKey(obj));
      this.apply("MODIFIED", obj, transformed);
    }
    for (const [key, old] of [...this.cache]) {
      if (!seen.has(key)) {
        this.remove(key, old);
        this.notify("delete", old, old);
      }
    }
  }

  private store(key: string, obj: T): void {
    this.cache.set(key, obj);
    const namespace = obj.metadata.namespace ?? "";
    let objects = this.byNamespace.get(namespace);
    if (!objects) this.byNamespace.set(namespace, (objects = new Map()));
    objects.set(key, obj);
  }

  private remove(key: string, obj: T): void {
    this.cache.delete(key);
    const namespace = obj.metadata.namespace ?? "";
    const objects = this.byNamespace.get(namespace);
    objects?.delete(key);
    if (objects?.size === 0) this.byNamespace.delete(namespace);
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const waiter of this.syncWaiters) waiter.resolve();
    this.syncWaiters.clear();
  }

  private notify(kind: "add" | "update" | "delete", obj: T, old: T | undefined): void {
    if (this.stopController.signal.aborted) return;
    for (const handler of this.handlers) {
      try {
        let result: unknown;
        if (kind === "add") result = handler.add?.(obj);
        else if (kind === "update") result = handler.update?.(obj, old as T);
        else result = handler.delete?.(obj);
        if (result instanceof Promise) result.catch((err: unknown) => this.handlerFailed(kind, obj, err));
      } catch (err) {
        this.handlerFailed(kind, obj, err);
      }
    }
  }

  private handlerFailed(kind: string, obj: T, err: unknown): void {
    this.logger.error("informer event handler failed", {
      informer: this.description,
      event: kind,
      key: objectKey(obj),
      error: errorMessage(err),
    });
  }
}
