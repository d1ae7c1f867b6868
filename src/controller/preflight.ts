// The last look before a removal. The plan rests on an etcd observation that is a few hundred milliseconds old by the
// time the removal is sent; a voter that stopped answering in between (a member SIGKILLed while Quorum planned,
// found by the e2e member-down scenario) would make the removal spend fault tolerance the plan never agreed to.
// So right before removing a member, every other voter that answered in the snapshot is asked again; if one no
// longer answers, the removal waits and the next reconcile plans on what is true now.
import { answersAsHealthy } from "../core/assess.ts";
import type { Snapshot } from "../core/snapshot.ts";
import type { EtcdClusterClient } from "../ports/index.ts";

export interface Preflight {
  /** Voters that were healthy in the snapshot and do not answer now (names, or ids of unnamed members). */
  lost: string[];
  /** When the confirming status round ended (epoch ms), for the log. */
  confirmedAt: number;
}

/** Re-asks every voter (but `removedId`) that was healthy in the snapshot; reports the ones that went away. */
export async function confirmVotersStillHealthy(
  etcd: EtcdClusterClient,
  snapshot: Snapshot,
  removedId: string,
  clock: () => number,
): Promise<Preflight> {
  const healthyBefore = snapshot.etcd.members.filter(
    (member) => member.id !== removedId && !member.learner && answersAsHealthy(member),
  );
  if (healthyBefore.length === 0) return { lost: [], confirmedAt: clock() };
  const statuses = await etcd.memberStatuses(
    healthyBefore.map(({ id, name, peerURLs, clientURLs, learner }) => ({ id, name, peerURLs, clientURLs, learner })),
  );
  const answered = new Set(
    statuses.filter((status) => status.reachable && status.errors.length === 0).map((status) => status.memberId),
  );
  return {
    lost: healthyBefore.filter((member) => !answered.has(member.id)).map((member) => member.name || member.id),
    confirmedAt: clock(),
  };
}
