// Which Machine an etcd member belongs to, decided from evidence. Real clusters name members after hosts
// (kubeadm uses the node name, e.g. ip-10-0-0-9), Machines go without a nodeRef for as long as no cloud controller
// manager sets the Node's providerID, and a re-joined host or a forgotten VM leaves a stale member with a live
// Machine's name behind. Matching by name alone (and breaking ties by member id) once removed a Machine's own live
// member and kept the stale one (issue 12, bug 2), so the evidence is ranked, strongest first:
//
//   1. address: a peer or client URL host of the member is one of the Machine's addresses (Machine.status.addresses,
//      or the addresses of the Node its nodeRef names);
//   2. node: the member is named after the Machine's Node (member name == nodeRef name), or after a Node tied to the
//      Machine by providerID or by a shared address;
//   3. name: the member is named like the Machine's memberName annotation or the Machine itself.
//
// A member belongs to the Machine with the strongest evidence; a member whose hosts are all outside the addresses a
// Machine reports (when it reports any) is never that Machine's by node or name. When several members claim one Machine, the one with stronger evidence wins;
// claimants with equal evidence are told apart by address only (never by member id): if none of them is at the
// Machine's address, none is that Machine's. Pure: everything comes from the snapshot.
import type { MachineView, MemberView, NodeView, Snapshot } from "./snapshot.ts";

/** Host part of a peer URL ("https://10.0.0.1:2380" -> "10.0.0.1", "https://[::1]:2380" -> "::1"). */
export function peerHost(url: string): string | undefined {
  const match = /^[a-z][a-z0-9+.-]*:\/\/(\[[^\]]+\]|[^:/?#]+)/i.exec(url);
  if (!match) return undefined;
  return match[1].startsWith("[") ? match[1].slice(1, -1) : match[1];
}

/** An IPv4 or IPv6 address rather than a DNS name. */
function isIPLiteral(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(":");
}

/** Every host a member advertises, peer URLs first. */
export function memberHosts(member: MemberView): string[] {
  const hosts = [...member.peerURLs, ...member.clientURLs]
    .map(peerHost)
    .filter((host): host is string => host !== undefined);
  return [...new Set(hosts)];
}

/** The Node a Machine stands behind: by nodeRef name, else by providerID. */
export function nodeOfMachine(machine: MachineView, nodes: NodeView[]): NodeView | undefined {
  if (machine.nodeName !== undefined) return nodes.find((node) => node.name === machine.nodeName);
  if (!machine.providerID) return undefined;
  return nodes.find((node) => node.providerID === machine.providerID);
}

/** The addresses a Machine is known by: its own, and its Node's. */
export function machineHosts(machine: MachineView, nodes: NodeView[]): string[] {
  return [...new Set([...machine.addresses, ...(nodeOfMachine(machine, nodes)?.addresses ?? [])])];
}

/**
 * The evidence tying `member` to `machine`, as [address, node, name] flags (0 = holds, 1 = does not), so that
 * comparing two keys element by element puts the stronger evidence first. Undefined when nothing ties them.
 */
type EvidenceKey = [number, number, number];

function evidence(member: MemberView, machine: MachineView, nodes: NodeView[]): EvidenceKey | undefined {
  const hosts = memberHosts(member);
  const known = machineHosts(machine, nodes);
  const address = hosts.some((host) => known.includes(host));
  // Addresses on both sides that do not meet say the member runs elsewhere: its name (or Node name) is then no
  // evidence. A stale member with a live Machine's name at an unknown address otherwise inherits that Machine once
  // its own member is gone, and Quorum would hand etcd leadership to it (sim seed 478950346). A member of a
  // Machine that reports only some of its addresses stays unmapped until they show: safe, and said in status.
  // Only IP literals can disagree: a Machine known by a DNS name may still be the host of a member's IP.
  const hostIPs = hosts.filter(isIPLiteral);
  const knownIPs = known.filter(isIPLiteral);
  if (hostIPs.length > 0 && knownIPs.length > 0 && !address) return undefined;
  // An unstarted member has no name yet: its peer URL is all that ties it to the Machine that added it.
  const named = member.name !== "";
  const node =
    named &&
    (member.name === machine.nodeName ||
      nodes.some(
        (candidate) =>
          candidate.name === member.name &&
          ((Boolean(candidate.providerID) && candidate.providerID === machine.providerID) ||
            candidate.addresses.some((host) => machine.addresses.includes(host))),
      ));
  const name = named && (member.name === machine.memberName || member.name === machine.name);
  if (!address && !node && !name) return undefined;
  return [address ? 0 : 1, node ? 0 : 1, name ? 0 : 1];
}

function compareKeys(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/** Among members at the same address, a started voter that answers is the live one (etcd refuses duplicate peer URLs). */
function liveness(member: MemberView): [number, number, number] {
  return [member.name !== "" ? 0 : 1, member.learner ? 1 : 0, member.reachable ? 0 : 1];
}

/** The single best of `items` by `key`; undefined when the best is shared (ambiguous evidence maps to nothing). */
function uniqueBest<T>(items: T[], key: (item: T) => readonly number[]): T | undefined {
  const sorted = [...items].sort((a, b) => compareKeys(key(a), key(b)));
  if (sorted.length === 0) return undefined;
  if (sorted.length > 1 && compareKeys(key(sorted[0]), key(sorted[1])) === 0) return undefined;
  return sorted[0];
}

/**
 * member id -> Machine name, one member per Machine, by the precedence above. A member left out maps to no Machine:
 * it is `unmapped` while it is started and healthy, and a ghost once its grace period is over otherwise.
 */
export function mapMembersToMachines(snapshot: Snapshot): Map<string, string> {
  const claims = new Map<string, { member: MemberView; key: EvidenceKey }[]>();
  for (const member of snapshot.etcd.members) {
    const ties = snapshot.machines.flatMap((machine) => {
      const key = evidence(member, machine, snapshot.nodes);
      return key ? [{ machine, key }] : [];
    });
    // Equal evidence for two Machines (a reused address, two Machines named alike) says nothing: map to neither.
    const best = uniqueBest(ties, (tie) => tie.key);
    if (best) claims.set(best.machine.name, [...(claims.get(best.machine.name) ?? []), { member, key: best.key }]);
  }
  const result = new Map<string, string>();
  for (const [machine, claimants] of claims) {
    const sorted = [...claimants].sort((a, b) => compareKeys(a.key, b.key));
    const top = sorted.filter((claim) => compareKeys(claim.key, sorted[0].key) === 0);
    // Same evidence: at the Machine's address the live member wins; by node or name alone none can be told apart.
    const winner =
      top.length === 1 ? top[0] : top[0].key[0] === 0 ? uniqueBest(top, (claim) => liveness(claim.member)) : undefined;
    if (winner) result.set(winner.member.id, machine);
  }
  return result;
}

/**
 * The Machines that could host a member mapping to none: every Machine without a member of its own. Kept wide on
 * purpose: a Machine's addresses may be partial or not reported yet, so "no evidence" is not evidence of absence.
 */
export function candidateHosts(snapshot: Snapshot, mapping: Map<string, string>): string[] {
  const taken = new Set(mapping.values());
  return snapshot.machines
    .map((machine) => machine.name)
    .filter((name) => !taken.has(name))
    .sort();
}

/**
 * Whether an entry of the quorum-remove-etcd-member annotation names member `id` (decimal, as status.etcd.members
 * shows it). Users copy ids from there or from `etcdctl member list`, which prints hex: both are accepted.
 */
export function namesMemberId(entry: string, id: string): boolean {
  const text = entry.trim().toLowerCase();
  if (text === "") return false;
  if (text === id) return true;
  const hex = text.startsWith("0x") ? text.slice(2) : text;
  if (!/^[0-9a-f]{1,16}$/.test(hex) || !/^[0-9]+$/.test(id)) return false;
  return BigInt(`0x${hex}`) === BigInt(id);
}
