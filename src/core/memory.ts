// Per-member memory: what Quorum remembers about each etcd member across reconciles and restarts — when it first
// saw the member (grace periods), when it first saw it started (etcd's 5 s removal window) and, for a learner, its
// applied index and when that last moved (stall detection). It lives in status.etcd.members only: recall() reads
// it back, observe() updates it from one observation at one `now`, persisted() says what status keeps. Pure.
// If status is lost, every clock restarts at the next sighting, which only delays a removal, never hastens one.
import type { EtcdMemberStatus } from "../api/types.ts";
import type { MemberView } from "./snapshot.ts";

export interface MemberMemory {
  firstObserved: number;
  startedObserved?: number;
  lastProgress: number;
  /** A learner's applied index when lastProgress was set (voters' indices are not kept). */
  raftAppliedIndex?: number;
}

/** What one observation says of a member, before memory is added. */
export type ObservedMember = Omit<MemberView, "firstObserved" | "startedObserved" | "lastProgress">;

/** The memory recorded in status, by member id; unparsable times fall back to `now`. */
export function recall(entries: readonly EtcdMemberStatus[] | undefined, now: number): Map<string, MemberMemory> {
  const memory = new Map<string, MemberMemory>();
  for (const entry of entries ?? []) {
    const firstObserved = parseTime(entry.firstObserved) ?? now;
    // A started member recorded before startedObserved existed counts as started when it was first observed.
    const startedObserved = parseTime(entry.startedObserved) ?? (entry.name !== "" ? firstObserved : undefined);
    memory.set(entry.id, {
      firstObserved,
      ...(startedObserved !== undefined ? { startedObserved } : {}),
      lastProgress: parseTime(entry.lastProgress) ?? now,
      ...(entry.raftAppliedIndex !== undefined ? { raftAppliedIndex: entry.raftAppliedIndex } : {}),
    });
  }
  return memory;
}

/**
 * The members of one observation with their memory: firstObserved is kept or set to `now`; startedObserved is kept
 * or set to `now` the first time the member is seen with a name (started); lastProgress moves to `now` whenever the
 * applied index moved (or the member is new).
 */
export function observe(members: readonly ObservedMember[], memory: ReadonlyMap<string, MemberMemory>, now: number): MemberView[] {
  return members.map((member) => {
    const before = memory.get(member.id);
    const applied = member.raftAppliedIndex;
    const progressed = before === undefined || (applied !== undefined && applied !== before.raftAppliedIndex);
    const startedObserved = before?.startedObserved ?? (member.name !== "" ? now : undefined);
    return {
      ...member,
      firstObserved: before?.firstObserved ?? now,
      ...(startedObserved !== undefined ? { startedObserved } : {}),
      lastProgress: progressed ? now : before.lastProgress,
    };
  });
}

/** What status keeps of one member's memory; status.ts writes the times as RFC 3339. */
export interface PersistedMemory {
  firstObserved: number;
  startedObserved?: number;
  /** Learners only: voters' indices move all the time, and keeping them would make an idle cluster write. */
  learnerProgress?: { raftAppliedIndex: number; lastProgress: number };
}

export function persisted(member: MemberView): PersistedMemory {
  return {
    firstObserved: member.firstObserved,
    ...(member.startedObserved !== undefined ? { startedObserved: member.startedObserved } : {}),
    ...(member.learner && member.raftAppliedIndex !== undefined ? { learnerProgress: { raftAppliedIndex: member.raftAppliedIndex, lastProgress: member.lastProgress } } : {}),
  };
}

function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const parsed = Date.parse(text);
  return Number.isNaN(parsed) ? undefined : parsed;
}
