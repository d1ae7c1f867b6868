// Per-member memory: what Quorum remembers about each etcd member across reconciles and restarts — when it first
// saw the member (grace periods), when it first saw it started (etcd's 5 s removal window) and, for a learner, its
// applied index and when that last moved (stall detection). It lives in status.etcd.members only: recall() reads
// it back, observe() updates it from one observation at one `now`, persisted() says what status keeps. Pure.
// startedObserved is when Quorum first saw the member answering without a gap since: an outage it saw restarts it.
// removalRefused is when etcd last refused removing the member ("unhealthy cluster"): Quorum asks early only once.
// downObserved is when Quorum first saw the member not answering, without an answer since: how long a Machine's member
// has been down before status offers the Machine as lost (machineLostAfter).
// If status is lost, every clock restarts at the next sighting, which only delays a removal, never hastens one.
import type { EtcdMemberStatus } from "../api/types.ts";
import type { MemberView } from "./snapshot.ts";

export interface MemberMemory {
  firstObserved: number;
  startedObserved?: number;
  removalRefused?: number;
  downObserved?: number;
  lastProgress: number;
  /** A learner's applied index when lastProgress was set (voters' indices are not kept). */
  raftAppliedIndex?: number;
}

/** What one observation says of a member, before memory is added. */
export type ObservedMember = Omit<
  MemberView,
  "firstObserved" | "startedObserved" | "removalRefused" | "downObserved" | "lastProgress"
>;

/** The memory recorded in status, by member id; unparsable times fall back to `now`. */
export function recall(entries: readonly EtcdMemberStatus[] | undefined, now: number): Map<string, MemberMemory> {
  const memory = new Map<string, MemberMemory>();
  for (const entry of entries ?? []) {
    const firstObserved = parseTime(entry.firstObserved) ?? now;
    // A healthy started member recorded before startedObserved existed counts as started when first observed; one
    // recorded unhealthy has no connection age to trust until it is seen answering again.
    const startedObserved =
      parseTime(entry.startedObserved) ?? (entry.name !== "" && entry.healthy ? firstObserved : undefined);
    const removalRefused = parseTime(entry.removalRefused);
    const downObserved = parseTime(entry.downSince);
    memory.set(entry.id, {
      firstObserved,
      ...(startedObserved !== undefined ? { startedObserved } : {}),
      ...(removalRefused !== undefined ? { removalRefused } : {}),
      ...(downObserved !== undefined ? { downObserved } : {}),
      lastProgress: parseTime(entry.lastProgress) ?? now,
      ...(entry.raftAppliedIndex !== undefined ? { raftAppliedIndex: entry.raftAppliedIndex } : {}),
    });
  }
  return memory;
}

/**
 * The members of one observation with their memory: firstObserved is kept or set to `now`; startedObserved is kept
 * or set to `now` the first time the member is seen with a name (started); downObserved is kept or set to `now` while
 * the member does not answer, and dropped when it does; lastProgress moves to `now` whenever the applied index moved
 * (or the member is new).
 */
export function observe(
  members: readonly ObservedMember[],
  memory: ReadonlyMap<string, MemberMemory>,
  now: number,
): MemberView[] {
  return members.map((member) => {
    const before = memory.get(member.id);
    const applied = member.raftAppliedIndex;
    const progressed = before === undefined || (applied !== undefined && applied !== before.raftAppliedIndex);
    // Seen answering without a gap since then: an outage restarts the member's peer connections, and etcd counts
    // their age when it decides whether to refuse a removal (removalWindow in selection.ts).
    const startedObserved = !member.reachable
      ? undefined
      : (before?.startedObserved ?? (member.name !== "" ? now : undefined));
    const downObserved = member.reachable ? undefined : (before?.downObserved ?? now);
    return {
      ...member,
      firstObserved: before?.firstObserved ?? now,
      ...(startedObserved !== undefined ? { startedObserved } : {}),
      ...(before?.removalRefused !== undefined ? { removalRefused: before.removalRefused } : {}),
      ...(downObserved !== undefined ? { downObserved } : {}),
      lastProgress: progressed ? now : before.lastProgress,
    };
  });
}

/** What status keeps of one member's memory; status.ts writes the times as RFC 3339. */
export interface PersistedMemory {
  firstObserved: number;
  startedObserved?: number;
  removalRefused?: number;
  downObserved?: number;
  /** Learners only: voters' indices move all the time, and keeping them would make an idle cluster write. */
  learnerProgress?: { raftAppliedIndex: number; lastProgress: number };
}

export function persisted(member: MemberView): PersistedMemory {
  return {
    firstObserved: member.firstObserved,
    ...(member.startedObserved !== undefined ? { startedObserved: member.startedObserved } : {}),
    ...(member.removalRefused !== undefined ? { removalRefused: member.removalRefused } : {}),
    ...(member.downObserved !== undefined ? { downObserved: member.downObserved } : {}),
    ...(member.learner && member.raftAppliedIndex !== undefined
      ? { learnerProgress: { raftAppliedIndex: member.raftAppliedIndex, lastProgress: member.lastProgress } }
      : {}),
  };
}

/**
 * The member entries status keeps when the member list could not be read: who was there and when Quorum first saw
 * them stay, but nobody counts as healthy, and no connection age is trusted (any member may have restarted).
 */
export function unobserved(entries: readonly EtcdMemberStatus[]): EtcdMemberStatus[] {
  return entries.map(({ startedObserved: _dropped, ...entry }) => ({ ...entry, healthy: false, leader: false }));
}

function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const parsed = Date.parse(text);
  return Number.isNaN(parsed) ? undefined : parsed;
}
