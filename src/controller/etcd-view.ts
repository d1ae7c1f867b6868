// One etcd observation round through the etcd port, and its conversion into the Snapshot's EtcdView. The clock and
// the previous view come in as arguments, because firstObserved/lastProgress (grace periods, learner stall
// detection) must survive between reconciles and after a restart they are rebuilt from status (see observe.ts).
import type { EtcdView, MemberView } from "../core/snapshot.ts";
import type { EtcdAlarm, EtcdClusterClient, EtcdMember, EtcdMemberStatus } from "../ports/index.ts";

export interface EtcdObservation {
  members: EtcdMember[];
  statuses: EtcdMemberStatus[];
  alarms: EtcdAlarm[];
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export type EtcdObservationResult = { ok: true; observation: EtcdObservation } | { ok: false; error: string };

/**
 * One observation round: member list, then every member's status in parallel, plus alarms. Never throws:
 * when no endpoint answers, the result says why, for EtcdView.error and the Wait reason.
 */
export async function observeEtcd(client: EtcdClusterClient): Promise<EtcdObservationResult> {
  try {
    const members = await client.listMembers();
    const [statuses, alarms] = await Promise.all([
      client.memberStatuses(members),
      // A failed alarm read must not hide the member list, nor pass for "no alarm": an unknown alarm blocks
      // disruptive actions like a real one until the next round reads them.
      client.alarms().catch((error: unknown) => [{ memberId: "0", alarm: `UNKNOWN (${errorMessage(error)})` }]),
    ]);
    return { ok: true, observation: { members, statuses, alarms } };
  } catch (error) {
    // The adapter's errors already say what failed and what to do; anything else gets a prefix that says where.
    if (error instanceof Error && typeof (error as { reason?: unknown }).reason === "string") return { ok: false, error: error.message };
    return { ok: false, error: `etcd observation failed: ${errorMessage(error)}` };
  }
}

/** Kept from `previous` once set; set to `now` the first time the member is seen with a name (started). */
function startedObserved(name: string, before: MemberView | undefined, now: number): Pick<MemberView, "startedObserved"> {
  const at = before?.startedObserved ?? (name !== "" ? now : undefined);
  return at === undefined ? {} : { startedObserved: at };
}

/**
 * firstObserved comes from `previous` when the member was seen before, else `now` (startedObserved likewise, from
 * its first sighting with a name); lastProgress moves to
 * `now` whenever raftAppliedIndex moved (or the member is new).
 */
export function toEtcdView(result: EtcdObservationResult, now: number, previous?: EtcdView): EtcdView {
  if (!result.ok) return { observed: false, error: result.error, members: [], alarms: [] };
  const { members, statuses, alarms } = result.observation;
  const statusById = new Map(statuses.map((status) => [status.memberId, status]));
  const previousById = new Map((previous?.members ?? []).map((member) => [member.id, member]));
  const views = members.map((member): MemberView => {
    const status = statusById.get(member.id);
    const before = previousById.get(member.id);
    const applied = status?.raftAppliedIndex;
    const progressed = before === undefined || (applied !== undefined && applied !== before.raftAppliedIndex);
    const view: MemberView = {
      id: member.id,
      name: member.name,
      peerURLs: member.peerURLs,
      clientURLs: member.clientURLs,
      learner: member.learner,
      reachable: status?.reachable ?? false,
      leader: status?.leader ?? false,
      errors: status ? status.errors : ["no status asked"],
      firstObserved: before?.firstObserved ?? now,
      ...startedObserved(member.name, before, now),
      lastProgress: progressed ? now : before.lastProgress,
    };
    if (status?.raftTerm !== undefined) view.raftTerm = status.raftTerm;
    if (status?.raftIndex !== undefined) view.raftIndex = status.raftIndex;
    if (applied !== undefined) view.raftAppliedIndex = applied;
    return view;
  });
  return { observed: true, members: views, alarms: alarms.map((alarm) => ({ ...alarm })) };
}
