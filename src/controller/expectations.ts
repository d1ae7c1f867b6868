// Read-your-writes over informer caches. A reconcile reads the QuorumControlPlane, its Cluster and its Machines
// from the caches, which see Quorum's own writes a few milliseconds after they are made. Until they do, a plan
// made from them would repeat the step just taken (a second "created Machine" Event, a conflict). So each write
// records what the cache must show once it has caught up (the object exists; its resourceVersion is no longer
// the one written over), and a reconcile whose cache has not caught up waits for the watch event instead of
// planning. Expectations expire, so a lost event costs a short delay, never a stuck cluster; the decisions stay
// safe on a stale cache anyway (deterministic names, idempotent executors, resourceVersion preconditions).
import type { KubeObject } from "../adapters/kube/rest.ts";

/** How long a write may take to reach the cache before the reconcile goes ahead without it. */
export const EXPECTATION_TIMEOUT_MS = 10_000;

export type ExpectedKind = "QuorumControlPlane" | "Machine";

interface Expectation {
  kind: ExpectedKind;
  /** "namespace/name" of the written object. */
  object: string;
  /** The cache must hold the object with none of these resourceVersions; empty: it must hold it at all. */
  staleResourceVersions: string[];
  /** The version the last write produced, when known: stale once a later write over the same object is made. */
  writtenResourceVersion?: string;
  /**
   * The object may also be gone from the cache: deleted by this write, or by someone else after it (a Machine
   * whose pre-terminate hook was just released is deleted by CAPI right away). Gone, the cache has seen a state
   * later than the write, so there is nothing left to wait for.
   */
  mayBeGone: boolean;
  /** The write deleted it (for the message). */
  deleting: boolean;
  expiresAt: number;
}

export type CacheLookup = (kind: ExpectedKind, object: string) => KubeObject | undefined;

export class Expectations {
  private readonly byKey = new Map<string, Expectation[]>();

  constructor(
    private readonly clock: () => number,
    private readonly timeoutMs: number = EXPECTATION_TIMEOUT_MS,
  ) {}

  /** The object was created (or found to exist): the cache must list it. */
  expectPresent(key: string, kind: ExpectedKind, object: string): void {
    this.add(key, {
      kind,
      object,
      staleResourceVersions: [],
      mayBeGone: false,
      deleting: false,
      expiresAt: this.clock() + this.timeoutMs,
    });
  }

  /**
   * The object was written over version `from` (producing `to`, when the answer told): the cache must show a
   * version that is neither `from` nor one an earlier write of this reconcile produced (or none, when deleting).
   */
  expectChange(
    key: string,
    kind: ExpectedKind,
    object: string,
    from: string | undefined,
    to?: string,
    options: { mayBeGone?: boolean; deleting?: boolean } = {},
  ): void {
    if (from === undefined || from === to) return;
    this.add(key, {
      kind,
      object,
      staleResourceVersions: [from],
      ...(to !== undefined ? { writtenResourceVersion: to } : {}),
      mayBeGone: (options.mayBeGone ?? false) || (options.deleting ?? false),
      deleting: options.deleting ?? false,
      expiresAt: this.clock() + this.timeoutMs,
    });
  }

  /**
   * What the cache does not show yet for `key` ("Machine ns/m-1 (created)"), dropping expectations that are met
   * or expired. Empty: the cache has every write of this key and a plan may be made from it.
   */
  pending(key: string, lookup: CacheLookup): { waitingFor: string[]; retryInMs: number } {
    const now = this.clock();
    const open = (this.byKey.get(key) ?? []).filter(
      (expectation) => expectation.expiresAt > now && !met(expectation, lookup(expectation.kind, expectation.object)),
    );
    if (open.length === 0) this.byKey.delete(key);
    else this.byKey.set(key, open);
    return {
      waitingFor: open.map(
        (expectation) =>
          `${expectation.kind} ${expectation.object} (${expectation.staleResourceVersions.length === 0 ? "created" : expectation.deleting ? "deleted" : "changed"})`,
      ),
      retryInMs: open.length === 0 ? 0 : Math.min(...open.map((expectation) => expectation.expiresAt - now)),
    };
  }

  /** Forgets a key (its object is gone). */
  forget(key: string): void {
    this.byKey.delete(key);
  }

  private add(key: string, expectation: Expectation): void {
    const list = this.byKey.get(key) ?? [];
    const previous = list.find(
      (existing) => existing.kind === expectation.kind && existing.object === expectation.object,
    );
    if (previous) {
      // A second write over the same object: every version before the last write's is stale.
      const stale = new Set([...previous.staleResourceVersions, ...expectation.staleResourceVersions]);
      if (
        previous.writtenResourceVersion !== undefined &&
        previous.writtenResourceVersion !== expectation.writtenResourceVersion
      )
        stale.add(previous.writtenResourceVersion);
      expectation = {
        ...expectation,
        staleResourceVersions: [...stale],
        mayBeGone: previous.mayBeGone || expectation.mayBeGone,
        deleting: previous.deleting || expectation.deleting,
      };
    }
    this.byKey.set(key, [...list.filter((existing) => existing !== previous), expectation]);
  }
}

function met(expectation: Expectation, cached: KubeObject | undefined): boolean {
  if (!cached) return expectation.mayBeGone;
  return !expectation.staleResourceVersions.includes(cached.metadata.resourceVersion ?? "");
}
