// Leader election on a coordination.k8s.io/v1 Lease, following client-go's leaderelection package:
// - a candidate takes the Lease when it is free (no holder) or expired; expiry is judged by when *this*
//   process saw the holder's record change, plus the record's leaseDurationSeconds, both on this process's
//   monotonic clock, so neither skew between machines nor a wall-clock step here can make a live holder look
//   expired (the renewTime in the record is wall time, written for humans and never compared);
// - every write carries the resourceVersion it read, so of two candidates racing for one expired Lease
//   exactly one wins (the other gets 409 Conflict);
// - the holder renews every retryPeriod; if no renewal has succeeded within renewDeadline (counted from when
//   the last successful renewal was *sent*, on the monotonic clock), or the Lease names someone else, it stops
//   leading at once. As
//   renewDeadline < leaseDuration, its workers stop before any other process may consider the Lease expired;
// - on graceful shutdown the holder clears holderIdentity so a successor takes over within one retryPeriod.
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { V1MicroTime } from "@kubernetes/client-node";
import { sleep, systemClock, type Clock, type TimerHandle } from "./clock.ts";
import { errorMessage, silentLogger, type Logger } from "./log.ts";
import { isAlreadyExists, isConflict, isNotFound, resourcePath, type KubeRest, type ResourceRef } from "./rest.ts";

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** MicroTime: RFC 3339 with exactly 6 fractional digits; the API server rejects other precisions. */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** Storage for one Lease; `kubeLeaseClient` talks to the API server, unit tests use an in-memory fake. */
export interface LeaseClient {
  /** e.g. "Lease kube-system/quorum-controller". */
  readonly description: string;
  /** The Lease, or undefined when it does not exist. */
  get(signal: AbortSignal): Promise<Lease | undefined>;
  /** Creates the Lease; fails with AlreadyExists when another candidate created it first. */
  create(spec: LeaseSpec, signal: AbortSignal): Promise<Lease>;
  /** Replaces the Lease; fails with Conflict unless `lease.metadata.resourceVersion` is still current. */
  replace(lease: Lease, signal: AbortSignal): Promise<Lease>;
}

export const LEASE_RESOURCE: ResourceRef = {
  group: "coordination.k8s.io",
  version: "v1",
  plural: "leases",
  namespaced: true,
};

export function kubeLeaseClient(
  rest: KubeRest,
  namespace: string,
  name: string,
  requestTimeoutMs = 10_000,
): LeaseClient {
  const objectPath = resourcePath(LEASE_RESOURCE, namespace, name);
  return {
    description: `Lease ${namespace}/${name}`,
    async get(signal) {
      try {
        return await rest.get<Lease>(objectPath, { signal, timeoutMs: requestTimeoutMs });
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    create(spec, signal) {
      const body: Lease = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name, namespace }, spec };
      return rest.request<Lease>("POST", resourcePath(LEASE_RESOURCE, namespace), {
        body,
        signal,
        timeoutMs: requestTimeoutMs,
      });
    },
    replace(lease, signal) {
      return rest.request<Lease>("PUT", objectPath, { body: lease, signal, timeoutMs: requestTimeoutMs });
    },
  };
}

/** A MicroTime string (6 fractional digits), as Lease renewTime/acquireTime require. */
export function microTime(ms: number): string {
  return new V1MicroTime(ms).toISOString();
}

/** A unique identity per process, like client-go's "<hostname>_<uuid>". */
export function defaultIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

export interface LeaderElectionTimings {
  /** How long others wait after the last renewal they saw before taking over. client-go: 15 s. */
  leaseDurationMs: number;
  /** The holder gives up if it could not renew for this long. client-go: 10 s. Must be < leaseDurationMs. */
  renewDeadlineMs: number;
  /** Pause between attempts to acquire or renew. client-go: 2 s. */
  retryPeriodMs: number;
}

export const CLIENT_GO_TIMINGS: LeaderElectionTimings = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

export interface LeaderElectorOptions extends Partial<LeaderElectionTimings> {
  lease: LeaseClient;
  identity: string;
  /** Called when this process becomes leader; `signal` aborts the moment it stops being leader. */
  onStartedLeading(signal: AbortSignal): unknown;
  /**
   * Called at once when leadership ends (lost or shut down). Campaigning resumes, and a graceful release
   * happens, only after the returned promise settles, so stop every worker before returning.
   */
  onStoppedLeading(reason: string): unknown;
  /** Called when the observed holder changes (undefined: nobody holds the Lease). */
  onNewLeader?(identity: string | undefined): void;
  clock?: Clock;
  logger?: Logger;
}

type AttemptResult = "acquired" | "held-by-other" | "conflict";

class LeadershipEnded extends Error {}

export class LeaderElector {
  readonly identity: string;
  private readonly client: LeaseClient;
  private readonly timings: LeaderElectionTimings;
  private readonly options: LeaderElectorOptions;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly stopController = new AbortController();
  private releaseOnStop = true;
  private loop: Promise<void> | undefined;
  private leading = false;
  /** The last Lease record seen, serialised, and when this process first saw it (local monotonic clock). */
  private observedRecord = "";
  private observedAt = 0;
  private observedHolder: string | undefined = undefined;
  private lastLease: Lease | undefined;
  /** Ends the current term; set while leading. */
  private endCurrentTerm: ((reason: string) => void) | undefined;

  constructor(options: LeaderElectorOptions) {
    this.options = options;
    this.identity = options.identity;
    this.client = options.lease;
    this.timings = {
      leaseDurationMs: options.leaseDurationMs ?? CLIENT_GO_TIMINGS.leaseDurationMs,
      renewDeadlineMs: options.renewDeadlineMs ?? CLIENT_GO_TIMINGS.renewDeadlineMs,
      retryPeriodMs: options.retryPeriodMs ?? CLIENT_GO_TIMINGS.retryPeriodMs,
    };
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = this.timings;
    if (!(renewDeadlineMs < leaseDurationMs)) {
      throw new Error(
        `leader election for ${this.client.description}: renew deadline (${renewDeadlineMs} ms) must be shorter ` +
          `than the lease duration (${leaseDurationMs} ms), or a stalled leader could still act after others take over`,
      );
    }
    if (!(retryPeriodMs < renewDeadlineMs)) {
      throw new Error(
        `leader election for ${this.client.description}: retry period (${retryPeriodMs} ms) must be shorter ` +
          `than the renew deadline (${renewDeadlineMs} ms), or the leader could not renew in time`,
      );
    }
    if (leaseDurationMs % 1000 !== 0) {
      throw new Error(
        `leader election for ${this.client.description}: lease duration must be whole seconds ` +
          `(got ${leaseDurationMs} ms): the Lease stores leaseDurationSeconds`,
      );
    }
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Gives up the current term as if the Lease had been lost (the holder cannot do its work, e.g. its caches never
   * synced): onStoppedLeading runs, then campaigning resumes. No-op when not leading.
   */
  resign(reason: string): void {
    this.endCurrentTerm?.(reason);
  }

  /** Campaigns, leads, and campaigns again after losing the Lease, until `stop`. */
  start(): void {
    if (this.loop) throw new Error(`leader elector for ${this.client.description}: already started`);
    this.loop = this.run();
  }

  /**
   * Stops campaigning. A leader stops leading (onStoppedLeading) and then, with `release` (the default),
   * clears holderIdentity so another candidate takes over without waiting for expiry.
   */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.releaseOnStop = options.release ?? true;
    if (!this.stopController.signal.aborted) this.stopController.abort(new LeadershipEnded("shutting down"));
    await this.loop;
  }

  private async run(): Promise<void> {
    const stop = this.stopController.signal;
    while (!stop.aborted) {
      const acquiredAt = await this.campaign();
      if (acquiredAt === undefined) break;
      await this.lead(acquiredAt);
    }
  }

  /** Tries until the Lease is ours; returns when the winning attempt was sent, or undefined when stopped. */
  private async campaign(): Promise<number | undefined> {
    const stop = this.stopController.signal;
    this.logger.info("leader election: campaigning", { lease: this.client.description, identity: this.identity });
    let retriedConflict = false;
    while (!stop.aborted) {
      const sentAt = this.clock.monotonic();
      try {
        const result = await this.withTimeout(stop, this.timings.renewDeadlineMs, (signal) =>
          this.tryAcquireOrRenew(signal),
        );
        if (result === "acquired") return sentAt;
        // Someone wrote the Lease between our read and write: read it again at once, but only once in a row,
        // so a Lease that changes constantly cannot spin this loop.
        retriedConflict = result === "conflict" && !retriedConflict;
        if (retriedConflict) continue;
      } catch (err) {
        if (stop.aborted) break;
        this.logger.warn("leader election: could not read or write the lease; retrying", {
          lease: this.client.description,
          error: errorMessage(err),
        });
      }
      try {
        await sleep(this.clock, this.timings.retryPeriodMs, stop);
      } catch {
        break;
      }
    }
    return undefined;
  }

  private async lead(acquiredAt: number): Promise<void> {
    const stop = this.stopController.signal;
    const term = new AbortController();
    const endTerm = (reason: string) => {
      if (term.signal.aborted) return;
      // Logged before the abort: a listener of the term's signal may end the process (the controller does).
      this.logger.warn("leader election: stopped leading", {
        lease: this.client.description,
        identity: this.identity,
        reason,
      });
      term.abort(new LeadershipEnded(reason));
    };
    this.endCurrentTerm = endTerm;
    const onStop = () => endTerm("shutting down");
    stop.addEventListener("abort", onStop, { once: true });

    let deadlineTimer: TimerHandle | undefined;
    const armDeadline = (lastRenewSentAt: number) => {
      if (deadlineTimer !== undefined) this.clock.clearTimeout(deadlineTimer);
      const remaining = lastRenewSentAt + this.timings.renewDeadlineMs - this.clock.monotonic();
      deadlineTimer = this.clock.setTimeout(
        () => endTerm(`could not renew ${this.client.description} within ${this.timings.renewDeadlineMs} ms`),
        Math.max(0, remaining),
      );
    };

    this.leading = true;
    armDeadline(acquiredAt);
    this.logger.info("leader election: became leader", { lease: this.client.description, identity: this.identity });
    this.invoke("onStartedLeading", () => this.options.onStartedLeading(term.signal));

    const ended = new Promise<void>((resolve) =>
      term.signal.addEventListener("abort", () => resolve(), { once: true }),
    );
    const renewing = this.renewUntilEnded(term, armDeadline, endTerm);

    await ended;
    this.leading = false;
    this.endCurrentTerm = undefined;
    if (deadlineTimer !== undefined) this.clock.clearTimeout(deadlineTimer);
    stop.removeEventListener("abort", onStop);
    const reason = (term.signal.reason as Error).message;
    await this.invokeAndWait("onStoppedLeading", () => this.options.onStoppedLeading(reason));
    // Only after our own renewals have ended may we clear the Lease, or a late renewal could re-take it.
    await renewing;
    if (stop.aborted && this.releaseOnStop) await this.release();
  }

  private async renewUntilEnded(
    term: AbortController,
    armDeadline: (sentAt: number) => void,
    endTerm: (reason: string) => void,
  ): Promise<void> {
    let retryAtOnce = false;
    while (!term.signal.aborted) {
      if (!retryAtOnce) {
        try {
          await sleep(this.clock, this.timings.retryPeriodMs, term.signal);
        } catch {
          return;
        }
      }
      const retriedAtOnce: boolean = retryAtOnce;
      retryAtOnce = false;
      const sentAt = this.clock.monotonic();
      try {
        const result = await this.withTimeout(term.signal, this.timings.renewDeadlineMs, (signal) =>
          this.tryAcquireOrRenew(signal),
        );
        if (term.signal.aborted) return;
        if (result === "acquired") armDeadline(sentAt);
        else if (result === "held-by-other")
          endTerm(`${this.client.description} is now held by ${this.observedHolder}`);
        // 409: someone wrote the Lease; read it again now to learn who (once in a row, as in campaign()).
        else retryAtOnce = !retriedAtOnce;
      } catch (err) {
        if (term.signal.aborted) return;
        this.logger.warn("leader election: renewal failed; retrying", {
          lease: this.client.description,
          error: errorMessage(err),
        });
      }
    }
  }

  /** One read-modify-write of the Lease, like client-go's tryAcquireOrRenew. */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<AttemptResult> {
    const now = this.clock.now();
    const mine = (previous: LeaseSpec | undefined, holdingAlready: boolean): LeaseSpec => ({
      holderIdentity: this.identity,
      leaseDurationSeconds: this.timings.leaseDurationMs / 1000,
      acquireTime: holdingAlready && previous?.acquireTime ? previous.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (previous?.leaseTransitions ?? 0) + (holdingAlready ? 0 : 1),
    });

    const current = await this.client.get(signal);
    if (!current) {
      try {
        const created = await this.client.create({ ...mine(undefined, false), leaseTransitions: 0 }, signal);
        this.observe(created);
        return "acquired";
      } catch (err) {
        if (isAlreadyExists(err)) return "conflict";
        throw err;
      }
    }
    this.observe(current);
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity || undefined;
    if (holder !== undefined && holder !== this.identity && !this.observedExpired(spec)) return "held-by-other";
    // A Lease naming us that we do not hold (we restarted, or someone handed it to us) is taken over as a new
    // acquisition; one we hold is renewed.
    const holdingAlready = holder === this.identity && this.leading;
    try {
      const updated = await this.client.replace({ ...current, spec: mine(spec, holdingAlready) }, signal);
      this.observe(updated);
      return "acquired";
    } catch (err) {
      if (isConflict(err)) return "conflict";
      throw err;
    }
  }

  /** Gives the Lease up so a successor need not wait for it to expire. */
  private async release(): Promise<void> {
    const timeout = AbortSignal.timeout(this.timings.renewDeadlineMs);
    try {
      const current = await this.client.get(timeout);
      if (!current || current.spec?.holderIdentity !== this.identity) return;
      const now = microTime(this.clock.now());
      await this.client.replace(
        {
          ...current,
          spec: {
            ...current.spec,
            holderIdentity: undefined,
            leaseDurationSeconds: 1,
            acquireTime: now,
            renewTime: now,
          },
        },
        timeout,
      );
      this.logger.info("leader election: released the lease", {
        lease: this.client.description,
        identity: this.identity,
      });
    } catch (err) {
      this.logger.warn("leader election: could not release the lease; a successor will wait for it to expire", {
        lease: this.client.description,
        error: errorMessage(err),
      });
    }
  }

  private observe(lease: Lease): void {
    this.lastLease = lease;
    const spec = lease.spec ?? {};
    const record = JSON.stringify([
      spec.holderIdentity ?? "",
      spec.renewTime ?? "",
      spec.acquireTime ?? "",
      spec.leaseDurationSeconds ?? 0,
      spec.leaseTransitions ?? 0,
    ]);
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAt = this.clock.monotonic();
    }
    const holder = spec.holderIdentity || undefined;
    if (holder !== this.observedHolder) {
      this.observedHolder = holder;
      this.logger.info("leader election: lease holder changed", {
        lease: this.client.description,
        holder: holder ?? "(none)",
      });
      if (this.options.onNewLeader) this.invoke("onNewLeader", () => this.options.onNewLeader?.(holder));
    }
  }

  private observedExpired(spec: LeaseSpec): boolean {
    const durationMs = (spec.leaseDurationSeconds ?? this.timings.leaseDurationMs / 1000) * 1000;
    return this.clock.monotonic() >= this.observedAt + durationMs;
  }

  /** The holder this process last saw in the Lease (undefined: none). */
  get observedLeader(): string | undefined {
    return this.observedHolder;
  }

  /** The Lease as last read or written by this process. */
  get lastObservedLease(): Lease | undefined {
    return this.lastLease;
  }

  private async withTimeout<T>(parent: AbortSignal, ms: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(parent.reason);
    if (parent.aborted) onAbort();
    else parent.addEventListener("abort", onAbort, { once: true });
    const timer = this.clock.setTimeout(() => controller.abort(new Error(`no answer within ${ms} ms`)), ms);
    try {
      return await fn(controller.signal);
    } finally {
      this.clock.clearTimeout(timer);
      parent.removeEventListener("abort", onAbort);
    }
  }

  private invoke(name: string, fn: () => unknown): void {
    try {
      const result = fn();
      if (result instanceof Promise) result.catch((err: unknown) => this.callbackFailed(name, err));
    } catch (err) {
      this.callbackFailed(name, err);
    }
  }

  private async invokeAndWait(name: string, fn: () => unknown): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.callbackFailed(name, err);
    }
  }

  private callbackFailed(name: string, err: unknown): void {
    this.logger.error(`leader election: ${name} failed`, { lease: this.client.description, error: errorMessage(err) });
  }
}
