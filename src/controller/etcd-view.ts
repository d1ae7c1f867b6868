// One etcd observation round through the etcd port, and what it saw as raw member views. No clock and no memory:
// firstObserved, startedObserved and lastProgress are core/memory.ts's, added in observe.ts.
import type { ObservedMember } from "../core/memory.ts";
import type { EtcdAlarm, EtcdClusterClient, EtcdMember, EtcdMemberStatus } from "../ports/index.ts";

export interface EtcdObservation {
  members: EtcdMember[];
  statuses: EtcdMemberStatus[];
  alarms: EtcdAlarm[];
  /**
   * Set when the leader could not confirm the member list (no leader, or none the answering members could reach):
   * why, and the list is then the answering member's own view, which may miss a member added since.
   */
  unconfirmed?: string;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The adapters' errors say whether only a user can fix them (src/adapters/errors.ts), read structurally: the
 * controller reaches adapters only through ports.
 */
export function needsUser(error: unknown): boolean {
  return (error as { needsUser?: unknown } | null)?.needsUser === true;
}

export type EtcdObservationResult = { ok: true; observation: EtcdObservation } | { ok: false; error: string };

/**
 * How long the confirmed member list may take before a member's own view is asked for as well. A healthy cluster
 * confirms within milliseconds; without a leader the confirmed read waits out its whole deadline, and asking for the
 * own view only after that would make an observation of a cluster whose members do not answer at all take two.
 */
const OWN_VIEW_AFTER_MS = 500;

export interface ObserveOptions {
  /** OWN_VIEW_AFTER_MS unless a test says otherwise. */
  ownViewAfterMs?: number;
}

/**
 * The member list the leader confirms; without a leader, the answering member's own view, with why it is not
 * confirmed (a cluster that lost quorum still shows its members in status). Throws when no member answers either.
 */
async function listMembers(
  client: EtcdClusterClient,
  ownViewAfterMs: number,
): Promise<{ members: EtcdMember[]; unconfirmed?: string }> {
  let ownView: Promise<EtcdMember[]> | undefined;
  const askOwnView = () => (ownView ??= client.listMembers({ serializable: true }));
  // Its answer is used only if the confirmed list fails; a failure is then read from the same promise.
  const early = setTimeout(() => void askOwnView().catch(() => {}), ownViewAfterMs);
  try {
    return { members: await client.listMembers() };
  } catch (linearizable) {
    // An error only a user can fix (a garbage CA Secret, an expired certificate) fails the same way again.
    if (needsUser(linearizable)) throw linearizable;
    return { members: await askOwnView(), unconfirmed: errorMessage(linearizable) };
  } finally {
    clearTimeout(early);
  }
}

/**
 * One observation round: member list, then every member's status in parallel, plus alarms. Never throws:
 * when no endpoint answers, the result says why, for EtcdView.error and the Wait reason.
 */
export async function observeEtcd(
  client: EtcdClusterClient,
  options: ObserveOptions = {},
): Promise<EtcdObservationResult> {
  try {
    const { members, unconfirmed } = await listMembers(client, options.ownViewAfterMs ?? OWN_VIEW_AFTER_MS);
    const [statuses, alarms] = await Promise.all([
      client.memberStatuses(members),
      // A failed alarm read must not hide the member list, nor pass for "no alarm": an unknown alarm blocks
      // disruptive actions like a real one until the next round reads them.
      client.alarms().catch((error: unknown) => [{ memberId: "0", alarm: `UNKNOWN (${errorMessage(error)})` }]),
    ]);
    return { ok: true, observation: { members, statuses, alarms, ...(unconfirmed ? { unconfirmed } : {}) } };
  } catch (error) {
    // The adapter's errors already say what failed and what to do; anything else gets a prefix that says where.
    if (error instanceof Error && typeof (error as { reason?: unknown }).reason === "string")
      return { ok: false, error: error.message };
    return { ok: false, error: `etcd observation failed: ${errorMessage(error)}` };
  }
}

/** The members and alarms of one observation round, raw: the memory of earlier rounds is added by core/memory.ts. */
export interface RawEtcdView {
  observed: boolean;
  error?: string;
  /** The member list was not confirmed by the leader: why (EtcdObservation.unconfirmed). */
  unconfirmed?: string;
  members: ObservedMember[];
  alarms: EtcdAlarm[];
}

export function toEtcdView(result: EtcdObservationResult): RawEtcdView {
  if (!result.ok) return { observed: false, error: result.error, members: [], alarms: [] };
  const { members, statuses, alarms, unconfirmed } = result.observation;
  const statusById = new Map(statuses.map((status) => [status.memberId, status]));
  const views = members.map((member): ObservedMember => {
    const status = statusById.get(member.id);
    const view: ObservedMember = {
      id: member.id,
      name: member.name,
      peerURLs: member.peerURLs,
      clientURLs: member.clientURLs,
      learner: member.learner,
      reachable: status?.reachable ?? false,
      leader: status?.leader ?? false,
      errors: status ? status.errors : ["no status asked"],
    };
    if (status?.raftTerm !== undefined) view.raftTerm = status.raftTerm;
    if (status?.raftIndex !== undefined) view.raftIndex = status.raftIndex;
    if (status?.raftAppliedIndex !== undefined) view.raftAppliedIndex = status.raftAppliedIndex;
    return view;
  });
  return {
    observed: true,
    ...(unconfirmed ? { unconfirmed } : {}),
    members: views,
    alarms: alarms.map((alarm) => ({ ...alarm })),
  };
}
