// The cluster's operator, as far as Quorum asks for one. A healthy etcd member that maps to no Machine is
// never removed by Quorum on its own (it may be the live member of a Machine whose address or nodeRef has not
// shown yet); the EtcdMembersMapped condition names it by id and tells the fix. The operator reads the status the
// real controller wrote, and for each member named there that the world knows to be stale (a forgotten VM, a
// re-join after a reset: no Machine stands behind it), follows the fix by listing its id in the
// quorum-remove-etcd-member annotation. A member that does belong to a Machine is left alone: the mapping
// evidence (address, nodeRef) catches up by itself, and removing it by hand would be the operator's mistake.
import { CONDITION } from "../../src/api/constants.ts";
import type { World } from "./world.ts";

/** Lists the stale members the condition names; returns what the operator did, for the trace. */
export function followUnmappedMemberFix(world: World): string | undefined {
  const condition = world.status?.conditions?.find((candidate) => candidate.type === CONDITION.EtcdMembersMapped);
  if (condition?.status !== "False" || condition.reason !== "UnmappedMember") return undefined;
  const named = new Set([...(condition.message ?? "").matchAll(/\(id (\d+)\)/g)].map((match) => match[1]));
  const stale = world.members.filter(
    (member) => named.has(member.id) && member.machine === undefined && !world.spec.removeMemberIds.includes(member.id),
  );
  if (stale.length === 0) return undefined;
  world.spec.removeMemberIds.push(...stale.map((member) => member.id));
  return `operator annotates the QuorumControlPlane to remove stale member(s) ${stale.map((member) => `${member.name || "(unstarted)"}:${member.id}`).join(", ")}`;
}
