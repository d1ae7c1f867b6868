// A work queue keyed by "namespace/name", shaped like client-go's rate-limited workqueue:
// - a key is queued at most once (adding it again while it waits is a no-op);
// - a key is processed by one worker at a time; added while it runs, it runs once more afterwards;
// - a failed key is retried with per-key exponential backoff that resets on success;
// - a worker may ask for a delayed re-run (a planner `Wait`); such timed re-runs and backoff retries wait behind
//   keys added by events, so at a thousand idle clusters a poll hardly delays a reaction to a change; but not for
//   ever: while events keep coming, every (EVENTS_PER_TIMED_KEY + 1)-th key taken is a due timed one. A burst of new
//   clusters is a stream of events (every reconcile writes status, every Machine changes), and a cluster waiting on
//   etcd, which only a poll sees, must not wait for the whole burst to end;
// - with a rank (the controller's: its object's creation time), waiting keys run lowest rank first, every fifth
//   take being the first key of the next rank up (waiting-keys.ts): clusters created together converge one after
//   another;
// - keys added before `start` wait, so informers can sync before any reconcile runs.
import { backoffDelay, systemClock, type Clock, type TimerHandle } from "./clock.ts";
import { errorMessage, silentLogger, type Logger } from "./log.ts";
import { WaitingKeys, type KeyRank } from "./waiting-keys.ts";

export interface ReconcileResult {
  /** Run this key again after this many milliseconds (a planner `Wait`). */
  requeueAfterMs?: number;
}

/** Reconciles one key. Throwing means "retry with backoff". `signal` aborts when the queue is stopped at once. */
export type QueueWorker = (key: string, signal: AbortSignal) => Promise<ReconcileResult | void>;

export interface WorkQueueOptions {
  /** Names the queue in log lines. */
  name?: string;
  /** How many different keys may be processed at the same time (`--concurrency`). */
  concurrency?: number;
  /** First retry delay after a failure; doubles with each consecutive failure of the same key. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Among waiting keys, lower ranks run first (see WaitingKeys); without it, the order they were added in. */
  rank?: KeyRank;
}

export interface ShutdownOptions {
  /** Abort the signal of reconciles in flight (leadership lost) instead of letting them finish (SIGTERM). */
  abortInFlight?: boolean;
}

/** Event keys taken in a row while a timed re-run is due, before that timed re-run goes first. */
export const EVENTS_PER_TIMED_KEY = 4;

export const QUEUE_DEFAULTS = {
  concurrency: 1,
  // A failed etcd or API call is usually fixed by time (a member restarting, a conflict clearing): start at 1 s,
  // and never wait longer than 5 minutes so a fixed cause is noticed without a new event.
  backoffBaseMs: 1_000,
  backoffMaxMs: 300_000,
} as const;

export class WorkQueue {
  readonly name: string;
  private readonly concurrency: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;

  /** Keys added by events, processed first. */
  private readonly ready: WaitingKeys;
  /** Keys whose timed re-run (poll, backoff) came due; an event moves a key from here to `ready`. */
  private readonly readyLater: WaitingKeys;
  /** Event keys taken in a row while a timed re-run was due (see EVENTS_PER_TIMED_KEY). */
  private eventsWhileTimedWaited = 0;
  private readonly processing = new Set<string>();
  /** Keys added while being processed: they run again when the current run ends. */
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, { at: number; handle: TimerHandle }>();
  private readonly failures = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abortController = new AbortController();
  private worker: QueueWorker | undefined;
  private shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.name = options.name ?? "queue";
    this.concurrency = options.concurrency ?? QUEUE_DEFAULTS.concurrency;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw new Error(`work queue ${this.name}: concurrency must be a positive integer (got ${this.concurrency})`);
    }
    this.backoffBaseMs = options.backoffBaseMs ?? QUEUE_DEFAULTS.backoffBaseMs;
    this.backoffMaxMs = options.backoffMaxMs ?? QUEUE_DEFAULTS.backoffMaxMs;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.ready = new WaitingKeys(options.rank);
    this.readyLater = new WaitingKeys(options.rank);
  }

  /** Keys waiting to be processed now (not counting delayed ones or those in flight). */
  get depth(): number {
    return this.ready.size + this.readyLater.size;
  }

  /** Keys waiting for a delayed re-run or a backoff retry. */
  get delayedCount(): number {
    return this.delayed.size;
  }

  /** Keys being reconciled right now. */
  get inFlightCount(): number {
    return this.processing.size;
  }

  /** How many times in a row this key has failed (0 after a success). */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  get isShutDown(): boolean {
    return this.shuttingDown;
  }

  add(key: string): void {
    this.enqueue(key, false);
  }

  private enqueue(key: string, timed: boolean): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.ready.has(key)) return;
    if (timed) {
      if (!this.readyLater.add(key)) return;
    } else {
      this.readyLater.delete(key);
      this.ready.add(key);
    }
    this.dispatch();
  }

  /** Adds `key` after `delayMs`. An earlier pending re-run of the same key wins over a later one. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = this.clock.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending) {
      if (pending.at <= at) return;
      this.clock.clearTimeout(pending.handle);
    }
    const handle = this.clock.setTimeout(() => {
      this.delayed.delete(key);
      this.enqueue(key, true);
    }, delayMs);
    this.delayed.set(key, { at, handle });
  }

  /** Starts `concurrency` workers on the keys queued so far and all later ones. */
  start(worker: QueueWorker): void {
    if (this.shuttingDown) throw new Error(`work queue ${this.name}: cannot start after shutdown`);
    if (this.worker) throw new Error(`work queue ${this.name}: already started`);
    this.worker = worker;
    this.dispatch();
  }

  /**
   * Stops taking new work, drops queued and delayed keys, and resolves once every reconcile in flight has
   * returned. With `abortInFlight` their signal aborts first, so a reconcile that honours it stops at once.
   */
  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    this.shuttingDown = true;
    for (const { handle } of this.delayed.values()) this.clock.clearTimeout(handle);
    this.delayed.clear();
    this.ready.clear();
    this.readyLater.clear();
    this.dirty.clear();
    if (options.abortInFlight && !this.abortController.signal.aborted) {
      this.abortController.abort(new Error(`work queue ${this.name} shut down`));
    }
    await Promise.all([...this.inFlight]);
  }

  private dispatch(): void {
    const worker = this.worker;
    if (!worker || this.shuttingDown) return;
    while (this.processing.size < this.concurrency) {
      const key = this.next();
      if (key === undefined) break;
      // The run about to start decides the key's next schedule itself (requeue, backoff or nothing),
      // so an older pending re-run would only repeat it.
      const pending = this.delayed.get(key);
      if (pending) {
        this.clock.clearTimeout(pending.handle);
        this.delayed.delete(key);
      }
      this.processing.add(key);
      const run: Promise<void> = this.process(worker, key).finally(() => this.inFlight.delete(run));
      this.inFlight.add(run);
    }
  }

  private next(): string | undefined {
    const timedWaiting = this.readyLater.size > 0;
    if (!timedWaiting || this.eventsWhileTimedWaited < EVENTS_PER_TIMED_KEY) {
      const event = this.ready.take();
      if (event !== undefined) {
        this.eventsWhileTimedWaited = timedWaiting ? this.eventsWhileTimedWaited + 1 : 0;
        return event;
      }
    }
    this.eventsWhileTimedWaited = 0;
    return this.readyLater.take() ?? this.ready.take();
  }

  private async process(worker: QueueWorker, key: string): Promise<void> {
    let result: ReconcileResult | void = undefined;
    let failure: unknown = undefined;
    let failed = false;
    try {
      result = await worker(key, this.abortController.signal);
    } catch (err) {
      failed = true;
      failure = err;
    }
    this.processing.delete(key);
    if (this.shuttingDown) return;

    if (failed) {
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      const retryInMs = backoffDelay(attempt, this.backoffBaseMs, this.backoffMaxMs);
      this.logger.error("reconcile failed; will retry", {
        queue: this.name,
        key,
        attempt,
        retryInMs,
        error: errorMessage(failure),
      });
      this.addAfter(key, retryInMs);
    } else {
      this.failures.delete(key);
      const requeueAfterMs = result?.requeueAfterMs;
      if (requeueAfterMs !== undefined && requeueAfterMs >= 0) this.addAfter(key, requeueAfterMs);
    }
    if (this.dirty.delete(key)) this.add(key);
    this.dispatch();
  }
}
