// The etcd port: the narrow "workload etcd" interface the controller talks to. The real implementation
// (src/adapters/etcd/client.ts) speaks to etcd over mTLS; the simulator's world implements the same interface, so
// the real reconcile() runs unchanged against both. Member IDs are decimal strings (etcd's uint64 does not fit in a JS number).

/** One entry of etcd's member list. */
export interface EtcdMember {
  id: string;
  /** Empty while an added member has not started yet. */
  name: string;
  peerURLs: string[];
  /** Empty while an added member has not started yet. */
  clientURLs: string[];
  learner: boolean;
}

/** What one member said about itself in a status call (or why it said nothing). */
export interface EtcdMemberStatus {
  memberId: string;
  /** The client URL the status call went to; absent for a member with no client URLs. */
  endpoint?: string;
  /** The member answered within the per-call deadline. */
  reachable: boolean;
  /** The member reports itself as the raft leader. */
  leader: boolean;
  /** The leader this member believes in ("0" when it knows none). */
  leaderId?: string;
  raftTerm?: number;
  raftIndex?: number;
  raftAppliedIndex?: number;
  dbSize?: number;
  dbSizeInUse?: number;
  version?: string;
  learner?: boolean;
  /** Errors the member reported (e.g. "etcdserver: no leader", alarms), or why it did not answer. */
  errors: string[];
}

export interface EtcdAlarm {
  memberId: string;
  /** "NOSPACE" or "CORRUPT". */
  alarm: string;
}

export type PromoteResult = { promoted: true } | { promoted: false; reason: "not caught up" };

export interface AddMemberOptions {
  /** Join as a non-voting learner (promote later), which cannot cost quorum while it catches up. */
  learner: boolean;
}

export interface ListMembersOptions {
  /**
   * Take the answering member's own view (etcd's serializable read) instead of one the leader confirms is current.
   * It answers without a leader, but a member cut off from the leader, or a moment behind it, may list a member
   * that was removed or miss one that was added.
   */
  serializable?: boolean;
}

export interface EtcdClusterClient {
  /**
   * The member list, from any member that answers first: linearizable unless asked otherwise (the leader confirms it
   * is current, as etcd's own client and KCP read it), so it fails without a leader. Throws EndpointUnreachableError
   * when no member answers.
   */
  listMembers(options?: ListMembersOptions): Promise<EtcdMember[]>;
  /**
   * Status of every member, asked in parallel with one deadline each, so the whole round takes at most about
   * one deadline however many members are dead or frozen. Never throws for an unreachable member: it is
   * reported with reachable=false and the reason in errors. Uses `members` when given, else lists them.
   */
  memberStatuses(members?: EtcdMember[]): Promise<EtcdMemberStatus[]>;
  /** Active alarms, cluster-wide. */
  alarms(): Promise<EtcdAlarm[]>;
  /**
   * Adds a member. Idempotent: when a member with the same peer URLs already exists (a crash after the add),
   * that member is returned.
   */
  addMember(peerURLs: string[], options: AddMemberOptions): Promise<EtcdMember>;
  /** Promotes a learner. "Not caught up yet" is a normal answer; a member that is already a voter is success. */
  promoteLearner(memberId: string): Promise<PromoteResult>;
  /** Removes a member. Idempotent: a member that is already gone is success ({ removed: false }). */
  removeMember(memberId: string): Promise<{ removed: boolean }>;
  /** Makes `toMemberId` the leader (asked of the current leader, as etcd requires). No-op when it already is. */
  moveLeader(toMemberId: string): Promise<void>;
  /** Closes every connection this client opened, or, for a handle of a pooled client, hands it back. Safe to call twice. */
  close(): Promise<void>;
}

/** Refusals etcd lifts by itself, which the controller waits out instead of reporting as failures. */
export type EtcdRefusal =
  /** "unhealthy cluster": a voter removal before enough voters have been connected to the leader for 5 s. */
  | "removal-window"
  /** "not leader" / "leader changed": the call reached a member that no longer leads; the next round finds the leader. */
  | "not-leader"
  /** "no leader": an election is in progress (or quorum is lost; the planner sees that from the member list). */
  | "no-leader";

/**
 * etcd said "not yet": retry after `retryAfterMs`. Thrown by the etcd port (the adapter and the simulator's world)
 * for refusals it can classify; the controller reads it with {@link retryLaterOf}, never by matching etcd's words.
 */
export class EtcdRetryLaterError extends Error {
  readonly retryLater = true;
  constructor(
    /** What was asked, e.g. "member remove 123". */
    readonly operation: string,
    readonly refusal: EtcdRefusal,
    /** The soonest a retry can succeed (etcd's own windows); the controller may wait longer (backoff). */
    readonly retryAfterMs: number,
    /** etcd's own words, for the status a user reads. */
    readonly etcdMessage: string,
    options?: { cause?: unknown },
  ) {
    super(`etcd ${operation}: not yet (${refusal}): ${etcdMessage}`, options);
    this.name = "EtcdRetryLaterError";
  }
}

/** The typed "not yet" of an etcd call, structurally (an error from another copy of this module counts too). */
export function retryLaterOf(
  error: unknown,
): Pick<EtcdRetryLaterError, "operation" | "refusal" | "retryAfterMs" | "etcdMessage" | "message"> | undefined {
  if (typeof error !== "object" || error === null || (error as { retryLater?: unknown }).retryLater !== true)
    return undefined;
  const candidate = error as EtcdRetryLaterError;
  return typeof candidate.retryAfterMs === "number" && typeof candidate.refusal === "string" ? candidate : undefined;
}

/** Classifies etcd's refusal text once, where it is received (the adapter; the simulator raises the typed error itself). */
export function classifyRefusal(etcdMessage: string): { refusal: EtcdRefusal; retryAfterMs: number } | undefined {
  // etcd's messages (etcdserver/api/v3rpc/rpctypes); gRPC prefixes a code, so they are matched as substrings.
  if (etcdMessage.includes("etcdserver: unhealthy cluster")) return { refusal: "removal-window", retryAfterMs: 1_000 };
  if (etcdMessage.includes("etcdserver: not leader") || etcdMessage.includes("etcdserver: leader changed"))
    return { refusal: "not-leader", retryAfterMs: 500 };
  if (etcdMessage.includes("etcdserver: no leader")) return { refusal: "no-leader", retryAfterMs: 1_000 };
  return undefined;
}
