// One etcd client per workload cluster, kept between reconciles: a fresh client per reconcile paid a TLS
// handshake per member every round (healthy round p95 52 ms fresh vs 20 ms kept, issue 7).
//
// The controller still "opens" a client per reconcile and closes it in a finally block; what it gets is a
// lease on the kept client, and closing the lease hands the client back. The kept client is replaced (the old
// one closed) when the cluster's endpoint set, its credentials (client certificate renewed, etcd CA rotated) or the
// way etcd is reached change (spec.etcd.access switched between Direct and APIServerProxy), closed by forget() when the cluster is gone, closed after sitting unused for idleCloseMs (a
// cluster no longer reconciled, e.g. after losing leadership, holds no connections), and closed by closeAll()
// at shutdown. A member that stops answering is the client's business (client.ts): its connection is rebuilt
// on the next call, so a kept client never makes a later round slower than a fresh one.
//
// The work queue never runs two reconciles of one cluster at once, but leases are counted anyway: a client
// replaced or forgotten while leased is closed only when its last lease is returned.
import { errorMessage, type Logger } from "../kube/log.ts";
import { normalizeEndpoint } from "./endpoints.ts";
import type {
  AddMemberOptions,
  EtcdAlarm,
  EtcdClientCredentials,
  EtcdClientOptions,
  EtcdClusterClient,
  EtcdClusterClientFactory,
  EtcdMember,
  EtcdMemberStatus,
  ListMembersOptions,
  PromoteResult,
} from "./types.ts";

/** Long enough to outlast any requeue of a cluster being watched (the etcd poll interval defaults to 10 s). */
export const DEFAULT_ETCD_IDLE_CLOSE_MS = 2 * 60 * 1000;

export interface EtcdClientPoolOptions {
  factory: EtcdClusterClientFactory;
  /** A client nobody leased for this long is closed (default 2 minutes). */
  idleCloseMs?: number;
  /** Where failures to close a client are reported (nobody else would see them). */
  log: Logger;
  /** Milliseconds, for idle accounting; replaced by tests. */
  now?: () => number;
  /** Runs closeIdle() periodically; tests turn it off and call closeIdle() themselves. */
  idleSweep?: boolean;
}

interface PooledClient {
  readonly key: string;
  readonly client: EtcdClusterClient;
  /** Sorted, normalised endpoints the client was opened with. */
  readonly endpointSet: string;
  readonly credentials: EtcdClientCredentials | undefined;
  /** The tunnel factory's identity; "" for direct dialling. */
  readonly access: string;
  leases: number;
  lastReleasedAt: number;
  /** Out of the pool (replaced or forgotten); closed when its last lease is returned. */
  retired: boolean;
  closed: boolean;
}

export class EtcdClientPool {
  private readonly kept = new Map<string, PooledClient>();
  private readonly idleCloseMs: number;
  private readonly now: () => number;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: EtcdClientPoolOptions) {
    this.idleCloseMs = options.idleCloseMs ?? DEFAULT_ETCD_IDLE_CLOSE_MS;
    if (!(this.idleCloseMs > 0))
      throw new Error(`etcd client pool: idleCloseMs must be positive (got ${options.idleCloseMs})`);
    this.now = options.now ?? Date.now;
  }

  /**
   * A lease on the kept client of `key` (namespace/cluster), opening or replacing it when needed. The caller
   * must close() the lease when its reconcile ends; that returns the client to the pool and closes nothing.
   */
  async acquire(key: string, clientOptions: EtcdClientOptions): Promise<EtcdClusterClient> {
    const endpointSet = endpointSetOf(clientOptions.endpoints);
    const access = clientOptions.tunnel?.identity ?? "";
    const current = this.kept.get(key);
    let entry = current;
    if (
      !entry ||
      entry.endpointSet !== endpointSet ||
      entry.access !== access ||
      !sameCredentials(entry.credentials, clientOptions.credentials)
    ) {
      // Opened before the old one is retired, so a factory that throws leaves the working client in place.
      const client = this.options.factory(clientOptions);
      if (current) this.retire(current);
      entry = {
        key,
        client,
        endpointSet,
        credentials: clientOptions.credentials,
        access,
        leases: 0,
        lastReleasedAt: this.now(),
        retired: false,
        closed: false,
      };
      this.kept.set(key, entry);
      this.startSweeping();
    }
    const leased = entry;
    leased.leases++;
    const lease = new EtcdClientLease(leased.client, `etcd client of cluster ${key}`, () => this.release(leased));
    if (current && current !== leased && current.leases === 0)
      await this.closeClient(current, "its endpoints, credentials or access mode changed");
    return lease;
  }

  /** Closes the kept client of a cluster that is gone (at once, or when its current lease is returned). */
  async forget(key: string): Promise<void> {
    const entry = this.kept.get(key);
    if (!entry) return;
    this.retire(entry);
    if (entry.leases === 0) await this.closeClient(entry, "its cluster is gone");
  }

  /** Closes every kept client nobody leased for idleCloseMs; returns how many it closed. */
  async closeIdle(): Promise<number> {
    const idleSince = this.now() - this.idleCloseMs;
    const idle = [...this.kept.values()].filter((entry) => entry.leases === 0 && entry.lastReleasedAt <= idleSince);
    for (const entry of idle) this.retire(entry);
    await Promise.all(
      idle.map((entry) => this.closeClient(entry, `it was unused for ${Math.round(this.idleCloseMs / 1000)} s`)),
    );
    return idle.length;
  }

  /**
   * Closes every kept client, leased or not (process shutdown, or leadership lost: nothing should be talking to
   * etcd any more). A later acquire() opens a new client.
   */
  async closeAll(): Promise<void> {
    const all = [...this.kept.values()];
    for (const entry of all) this.retire(entry);
    await Promise.all(
      all.map((entry) => this.closeClient(entry, "every etcd client was closed (shutdown or lost leadership)")),
    );
  }

  /** Clusters with a kept client. */
  get size(): number {
    return this.kept.size;
  }

  private release(entry: PooledClient): void {
    entry.leases--;
    entry.lastReleasedAt = this.now();
    if (entry.retired && entry.leases === 0) void this.closeClient(entry, "it was replaced or its cluster is gone");
  }

  private retire(entry: PooledClient): void {
    entry.retired = true;
    if (this.kept.get(entry.key) === entry) this.kept.delete(entry.key);
    if (this.kept.size === 0) this.stopSweeping();
  }

  /** Never throws: a client that fails to close is logged once and dropped, it must not fail a reconcile. */
  private async closeClient(entry: PooledClient, why: string): Promise<void> {
    if (entry.closed) return;
    entry.closed = true;
    try {
      await entry.client.close();
    } catch (error) {
      this.options.log.warn(`closing the etcd client of cluster ${entry.key} (${why}) failed: ${errorMessage(error)}`, {
        object: entry.key,
      });
    }
  }

  private startSweeping(): void {
    if (this.sweepTimer || this.options.idleSweep === false) return;
    this.sweepTimer = setInterval(() => void this.closeIdle(), Math.max(1000, Math.round(this.idleCloseMs / 4)));
    // Kept clients are a cache: they must never keep the process alive.
    this.sweepTimer.unref();
  }

  private stopSweeping(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }
}

/** What the controller holds for one reconcile: the kept client, until close() hands it back. */
class EtcdClientLease implements EtcdClusterClient {
  private released = false;

  constructor(
    private readonly client: EtcdClusterClient,
    private readonly context: string,
    private readonly onRelease: () => void,
  ) {}

  async listMembers(options?: ListMembersOptions): Promise<EtcdMember[]> {
    return this.use().listMembers(options);
  }

  async memberStatuses(members?: EtcdMember[]): Promise<EtcdMemberStatus[]> {
    return this.use().memberStatuses(members);
  }

  async alarms(): Promise<EtcdAlarm[]> {
    return this.use().alarms();
  }

  async addMember(peerURLs: string[], options: AddMemberOptions): Promise<EtcdMember> {
    return this.use().addMember(peerURLs, options);
  }

  async promoteLearner(memberId: string): Promise<PromoteResult> {
    return this.use().promoteLearner(memberId);
  }

  async removeMember(memberId: string): Promise<{ removed: boolean }> {
    return this.use().removeMember(memberId);
  }

  async moveLeader(toMemberId: string): Promise<void> {
    return this.use().moveLeader(toMemberId);
  }

  /** Returns the client to the pool; its connections stay open for the next reconcile. Safe to call twice. */
  async close(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.onRelease();
  }

  private use(): EtcdClusterClient {
    // A lease kept past its reconcile could talk through a client that has since been replaced or closed.
    if (this.released)
      throw new Error(`${this.context}: used after close(); ask WorkloadAccess.etcd() for a new one in each reconcile`);
    return this.client;
  }
}

function endpointSetOf(endpoints: readonly string[]): string {
  return [...new Set(endpoints.map(normalizeEndpoint))].sort().join(",");
}

function sameCredentials(a: EtcdClientCredentials | undefined, b: EtcdClientCredentials | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return a.caPem === b.caPem && a.certPem === b.certPem && a.keyPem === b.keyPem;
}
