// Which Machine leaves on a scale-down, where a new one goes, and which Machines are outdated. Deterministic, so
// after a crash the next reconcile picks the same Machine again and finishes the removal it started.
import type { MachineView, MemberView, Snapshot } from "./snapshot.ts";
import type { MemberAssessment, Verdict } from "./assess.ts";
import { formatDuration, formatTime } from "./format.ts";
import { nodeOfMachine } from "./identity.ts";
import { judgesNodeLabel, unlabelledNodes } from "./node-label.ts";
import { nodelessMachines, nodelessWhy } from "./nodeless.ts";
import { componentsDown } from "./serving.ts";

/** Why a Machine no longer matches the spec; empty when it is up to date. */
export function outdatedReasons(snapshot: Snapshot, machine: MachineView): string[] {
  const spec = snapshot.controlPlane;
  // What a malformed Machine runs is unknown: it is reported by name, not rolled out on a guess.
  if (machine.malformed !== undefined) return [];
  const reasons: string[] = [];
  if (machine.version !== spec.version) reasons.push(`version ${machine.version || "(none)"} → ${spec.version}`);
  // A Machine without a recorded hash (adopted, or made by a release that did not record one) is not rolled
  // out just for that: an unexplained rollout of a whole control plane is worse than a stale template.
  if (
    machine.templateHash !== undefined &&
    machine.templateHash !== spec.templateHash &&
    machine.templateHash !== spec.legacyTemplateHash
  )
    reasons.push("machine template changed");
  if (spec.rolloutAfter !== undefined && snapshot.now >= spec.rolloutAfter && machine.created < spec.rolloutAfter)
    reasons.push("created before spec.rollout.after");
  const expiring = certificatesExpiring(snapshot, machine);
  if (expiring) reasons.push(expiring);
  if (reasons.length === 0) {
    const running = staticPodVersion(snapshot, machine);
    if (running !== undefined && running !== spec.version)
      reasons.push(
        `its kube-apiserver static pod runs ${running}, not ${spec.version} (kubeadm join renders static pods from kubeadm-config as it was at the join)`,
      );
  }
  return reasons;
}

/**
 * The version a kubeadm Machine's control plane really runs: its kube-apiserver mirror Pod's image tag. A Machine
 * that joined while kubeadm-config still named another version (created from a stale view of the Machines, or
 * before Quorum synced kubeadm-config) claims spec.version but runs the older pods, and only a new Machine fixes it.
 */
function staticPodVersion(snapshot: Snapshot, machine: MachineView): string | undefined {
  const components = snapshot.workloadSteps?.components;
  if (!components) return undefined;
  const node = nodeOfMachine(machine, snapshot.nodes);
  if (!node) return undefined;
  const image = components.find(
    (component) => component.node === node.name && component.component === "kube-apiserver",
  )?.image;
  const tag = image?.split("@")[0].match(/:([^:/]+)$/)?.[1];
  // Image tags spell a version's "+" as "_".
  return tag?.replace(/_/g, "+");
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Why the Machine's certificates need it replaced, when they do: they expire within
 * spec.rollout.before.certificatesExpiryDays (KCP's ShouldRolloutBefore). Only for a known expiry. A Machine whose
 * certificates were issued for no longer than that notice (expiry - created) is not replaced for it: its replacement
 * would get certificates just as short-lived and be replaced in turn, forever (certificatesExpiryDays 400 against
 * kubeadm's 365-day certificates, which KCP's webhook lets through unless the template sets the validity).
 */
export function certificatesExpiring(snapshot: Snapshot, machine: MachineView): string | undefined {
  const days = snapshot.controlPlane.certificatesExpiryDays;
  const expiry = machine.certificatesExpiry;
  if (days === undefined || expiry === undefined) return undefined;
  const notice = days * DAY_MS;
  if (snapshot.now + notice <= expiry) return undefined;
  if (expiry - machine.created <= notice) return undefined;
  return `certificates expire ${formatTime(expiry)}, within spec.rollout.before.certificatesExpiryDays (${days})`;
}

export function isUpToDate(snapshot: Snapshot, machine: MachineView): boolean {
  return outdatedReasons(snapshot, machine).length === 0;
}

/** Machines not being deleted: the ones that count towards spec.replicas. */
export function activeMachines(snapshot: Snapshot): MachineView[] {
  return snapshot.machines.filter((machine) => machine.deleting === undefined);
}

function machinesPerDomain(machines: MachineView[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const machine of machines)
    counts.set(machine.failureDomain ?? "", (counts.get(machine.failureDomain ?? "") ?? 0) + 1);
  return counts;
}

/** The failure domain for a new Machine: the one with the fewest active Machines, then by name. */
export function chooseFailureDomain(snapshot: Snapshot): string | undefined {
  const domains = [...snapshot.cluster.failureDomains].sort();
  if (domains.length === 0) return undefined;
  const counts = machinesPerDomain(activeMachines(snapshot));
  return domains.reduce((best, domain) => ((counts.get(domain) ?? 0) < (counts.get(best) ?? 0) ? domain : best));
}

export interface ScaleDownChoice {
  machine: string;
  /** Why this one, for the reason: "its etcd member is already gone", "outdated (version v1.30.1 → v1.31.0)". */
  why: string;
}

/**
 * A Machine with no member counts as "member already gone" unless it may be joining or is the new Machine a
 * replacement is waiting for: up to date, still inside its join grace period, and wanted because outdated Machines
 * remain to replace, or because another Machine is to be remediated (the surge of a one-replica control plane whose
 * only voter is on it: taken for gone, the replacement was deleted as soon as it was created, and created again,
 * forever; sim seed 2754155871).
 */
export function memberAlreadyGone(snapshot: Snapshot, verdict: Verdict, machine: MachineView): boolean {
  const info = verdict.machines.find((candidate) => candidate.name === machine.name);
  if (!info || info.memberId !== undefined) return false;
  if (snapshot.controlPlane.deleting || info.class === "member-lost") return true;
  if (machine.markedForDeletion || machine.remediationRequested || machine.failed) return true;
  if (mayBeJoining(snapshot, machine)) return false;
  if (!isUpToDate(snapshot, machine)) return true;
  const replacementPending = activeMachines(snapshot).some(
    (other) => other !== machine && (!isUpToDate(snapshot, other) || other.remediationRequested || other.failed),
  );
  return !replacementPending;
}

/**
 * Its VM runs (infrastructure ready) and it is younger than memberJoinGracePeriod: its kubeadm join may be adding its
 * member right now. Deleted as "member already gone", the join went on until CAPI took the infrastructure, which waits
 * for every pre-terminate hook, and could add the member after Quorum looked: a voter that never starts costs a
 * one-voter control plane its quorum (a simulated world where another controller's hook held the VM, seed 190899511).
 * A scale-down waits for it to join or for the grace period to end instead, as KCP's preflight waits for a Machine
 * without a Node.
 */
function mayBeJoining(snapshot: Snapshot, machine: MachineView): boolean {
  return machine.infrastructureReady && withinJoinGrace(snapshot, machine);
}

/**
 * A deleting Machine that shows no member, whose join may still add one: it is inside its join grace, its VM runs (or
 * another controller's pre-terminate hook keeps CAPI from cancelling its provisioning), and its join has not been seen
 * past the etcd phase (no Node; a kubeadm Node without the control-plane label, which kubeadm join sets after its etcd
 * phase). Released, its hook lets CAPI take the VM only once every other hook is gone too, and the join runs until
 * then: a member it adds then is never started (sim seeds 415644426 and 4053796313: a user deleted a booting or a
 * provisioning Machine of a one-voter control plane, another controller's hook held it, its join added a voter that
 * never started, and quorum was lost). Held, the join finishes and the member is removed as any deleting Machine's. A
 * Machine whose member Quorum removed (memberRemoved) got past its etcd phase whatever its Node shows: a half-joined
 * kubeadm Node lacks the label (the kubeadm e2e scenario held such a Machine's hook for the whole grace period).
 * While the workload API cannot be read its Node is unknown, so the join may be adding its member (sim seed 888991025:
 * the hook went while the API server was down, the join then added a voter that never started next to the one voter,
 * and quorum was lost for good).
 */
export function joinMayAddMember(snapshot: Snapshot, machine: MachineView): boolean {
  if (snapshot.controlPlane.deleting || machine.failed || machine.memberRemoved) return false;
  if (!withinJoinGrace(snapshot, machine)) return false;
  // Machines that run etcd only have no Node, and no workload API to ask for one.
  if (!snapshot.workload?.expected) return false;
  if (!machine.infrastructureReady && (machine.otherPreTerminateHooks ?? []).length === 0) return false;
  if (!snapshot.workload.readable) return true;
  const node = nodeOfMachine(machine, snapshot.nodes);
  if (!node) return true;
  return judgesNodeLabel(snapshot) && !node.controlPlaneLabel;
}

function withinJoinGrace(snapshot: Snapshot, machine: MachineView): boolean {
  return snapshot.now - machine.created < snapshot.controlPlane.etcd.memberJoinGracePeriodMs;
}

function unhealthy(verdict: Verdict, machine: MachineView): boolean {
  if (machine.failed) return true;
  const info = verdict.machines.find((candidate) => candidate.name === machine.name);
  if (!info || info.class === "member-lost") return true;
  const member =
    info.memberId === undefined ? undefined : verdict.members.find((candidate) => candidate.id === info.memberId);
  return member !== undefined && !member.healthy;
}

/**
 * The Machine's member is a started voter that is dead (unreachable or erroring). Not a joiner that has not started
 * yet: that one is still coming up, and taking its Machine would only restart the join.
 */
export function hasDeadVoter(verdict: Verdict, machine: MachineView): boolean {
  const info = verdict.machines.find((candidate) => candidate.name === machine.name);
  const member =
    info?.memberId === undefined ? undefined : verdict.members.find((candidate) => candidate.id === info.memberId);
  return member !== undefined && member.class === "unhealthy-voter";
}

/**
 * The Machine to remove next, preferring to finish work: its member already gone, then marked for deletion or
 * remediation (or failed; unless its voter is healthy and another is dead), then one whose voter is dead, then
 * unhealthy (its member, or its control-plane components or Node: src/core/serving.ts) and outdated, then outdated,
 * then one whose kubeadm join did not label its Node or that never got a Node, then in the failure domain with the
 * most Machines, then the oldest; ties by name. The dead voter goes before any healthy one because removing it never
 * costs quorum, while the strict policy refuses every healthy removal as long as it lives: a scale-down 3 -> 1 that
 * picked a healthy Machine first waited forever (issue 12, bug 3).
 */
export function selectMachineForScaleDown(snapshot: Snapshot, verdict: Verdict): ScaleDownChoice | undefined {
  const candidates = activeMachines(snapshot);
  if (candidates.length === 0) return undefined;
  const perDomain = machinesPerDomain(candidates);
  // A marked Machine whose voter is healthy cannot leave while another voter is dead (the strict policy): the dead
  // voter's Machine goes first then, or the scale-down would wait on the marked one forever.
  // During a rollout an up-to-date Machine whose voter is down is the one the rollout keeps: its member is expected
  // back (e2e member-down: removing the new Machine's briefly killed member stalled the rollout for the join grace).
  // Only while the Machine is younger than memberJoinGracePeriod: every healthy removal waits on a dead voter, so a
  // new Machine that died for good (its VM gone, CAPI not calling it failed, no MachineHealthCheck) would hold the
  // rollout forever (sim seed 2374954399, 2026-12-05).
  const rollingOut = candidates.some((machine) => !isUpToDate(snapshot, machine));
  const keptByRollout = (machine: MachineView) =>
    rollingOut &&
    isUpToDate(snapshot, machine) &&
    snapshot.now - machine.created < snapshot.controlPlane.etcd.memberJoinGracePeriodMs;
  const goesFirstAsDead = (machine: MachineView) => hasDeadVoter(verdict, machine) && !keptByRollout(machine);
  const someDeadVoter = candidates.some(goesFirstAsDead);
  const facts = candidates.map((machine) => {
    const outdated = outdatedReasons(snapshot, machine);
    const sick = unhealthy(verdict, machine);
    return { machine, outdated, sick, down: componentsDown(snapshot, machine) };
  });
  // A kubeadm join that stopped before mark-control-plane (src/core/node-label.ts) left a Node workloads may run on,
  // and a Machine that never got a Node (src/core/nodeless.ts) holds every other voter's removal while it stays: of
  // Machines otherwise alike, such a one goes first, as a user would pick it.
  const halfJoins = new Map(
    unlabelledNodes(snapshot).map(({ machine, node }) => [
      machine,
      `its kubeadm join did not label Node ${node} control-plane`,
    ]),
  );
  for (const found of nodelessMachines(snapshot, verdict.members)) halfJoins.set(found.machine, nodelessWhy(found));
  // An outdated Machine whose API server is down leaves without waiting on anyone (servingGate), while no other
  // healthy voter may leave as long as it stays.
  const apiServerDownOutdated = facts.filter(
    ({ outdated, sick, down }) => outdated.length > 0 && !sick && down.apiServerDown,
  );
  const ranked = facts.map(({ machine, outdated, sick, down: seen }) => {
    const gone = memberAlreadyGone(snapshot, verdict, machine);
    const deadVoter = goesFirstAsDead(machine);
    // A marked Machine whose healthy voter could only leave once such a Machine is gone waits behind it.
    const heldByDownMachine =
      !sick && !seen.apiServerDown && apiServerDownOutdated.some((other) => other.machine !== machine);
    const marked =
      (machine.markedForDeletion || machine.remediationRequested || machine.failed) &&
      (deadVoter || !someDeadVoter) &&
      !heldByDownMachine;
    // Outdated and its control plane down (a template whose API server cannot start, fixed by a newer one): it goes
    // before the outdated Machines that serve, since no voter may leave while it stays (servingGate); those whose API
    // server is down first, since their own removal waits on nobody.
    const down = outdated.length > 0 && !sick ? seen : { components: [], apiServerDown: false };
    const domainCount = perDomain.get(machine.failureDomain ?? "") ?? 0;
    const halfJoined = halfJoins.get(machine.name);
    const key: (number | string)[] = [
      gone ? 0 : 1,
      marked ? 0 : 1,
      // A Machine Quorum cannot read goes last: what it runs is unknown.
      machine.malformed !== undefined ? 1 : 0,
      deadVoter ? 0 : 1,
      outdated.length === 0
        ? 2
        : sick || down.apiServerDown
          ? 0
          : down.components.length > 0 || down.nodeNotReady !== undefined
            ? 1
            : 2,
      outdated.length > 0 ? 0 : 1,
      halfJoined !== undefined ? 0 : 1,
      -domainCount,
      machine.created,
      machine.name,
    ];
    let why: string;
    if (gone) why = "its etcd member is already gone";
    else if (marked && machine.markedForDeletion) why = "it is marked for deletion";
    else if (marked && machine.remediationRequested) why = "remediation was requested for it";
    else if (marked) why = "its infrastructure failed for good";
    else if (deadVoter) why = "its etcd member is a dead voter: removing it never costs quorum";
    else if (sick && outdated.length > 0) why = `it is unhealthy and outdated (${outdated.join(", ")})`;
    else if (down.components.length > 0)
      why = `its control plane is down (${down.components.join("; ")}) and it is outdated (${outdated.join(", ")})`;
    else if (down.nodeNotReady !== undefined)
      why = `its Node ${down.nodeNotReady} is not Ready and it is outdated (${outdated.join(", ")})`;
    else if (halfJoined !== undefined)
      why = `${halfJoined}${outdated.length > 0 ? ` and it is outdated (${outdated.join(", ")})` : ""}`;
    else if (outdated.length > 0) why = `it is outdated (${outdated.join(", ")})`;
    else if (domainCount > 1 && snapshot.cluster.failureDomains.length > 0)
      why = `failure domain ${machine.failureDomain ?? "(none)"} has the most Machines (${domainCount}) and it is the oldest there`;
    else why = "it is the oldest";
    return { machine, key, why };
  });
  ranked.sort((a, b) => compareKeys(a.key, b.key));
  return { machine: ranked[0].machine.name, why: ranked[0].why };
}

/**
 * etcd (3.4 to 3.7, strict reconfig check on) refuses to remove a voter with "etcdserver: unhealthy cluster"
 * unless the member handling the request has been connected to a quorum of the voters for its HealthInterval, 5 s
 * (mayRemoveMember -> numConnectedSince). Quorum sends the removal to the leader, so a leader that started seconds
 * ago makes the removal wait out that window.
 */
export const ETCD_HEALTH_INTERVAL_MS = 5_000;

/**
 * How long a member must have been observed (firstObserved: when it was added, before its etcd process started and
 * opened its peer connections; the other 5 s cover that gap) before the leadership choice counts it as settled.
 * Erring long costs at most one more leadership move later (about 0.4 s). The removal itself then waits on
 * removalWindow, which counts from when the member was seen started.
 */
export const LEADERSHIP_SETTLE_MS = ETCD_HEALTH_INTERVAL_MS + 5_000;

/** etcd's removal window still closed: how long until it opens, and the members it waits on. */
export interface RemovalWindow {
  waitMs: number;
  /** The voters that must still age, and how long ago each was seen started. */
  waiting: { id: string; ageMs: number }[];
  /** Voters other than the leader that must have been connected for ETCD_HEALTH_INTERVAL_MS. */
  needed: number;
}

/**
 * Whether etcd would refuse removing voter `memberId` right now with "unhealthy cluster", and for how long.
 * etcd's check (mayRemoveMember): the member serving the call, which is the leader for Quorum, counts itself and
 * every voter whose peer connection to it is ETCD_HEALTH_INTERVAL_MS old, and refuses unless that count minus the
 * leaving voter still reaches a quorum of the voters that stay. A connection is at least as old as Quorum's first
 * sight of the member started (startedObserved), so the estimate errs towards waiting a little long, never short.
 * Undefined when etcd accepts now, and when waiting cannot help (too few reachable voters: the health check and
 * etcd's own refusal speak then); a leaving member that is not reachable is removed at once (etcd skips the check).
 */
export function removalWindow(snapshot: Snapshot, memberId: string): RemovalWindow | undefined {
  return windowCountedFrom(snapshot, memberId, (member) => member.startedObserved);
}

/**
 * Whether etcd may accept a removal that removalWindow holds back, so that Quorum asks once instead of waiting: it
 * would accept if the voters it waits on had been connected since they were first listed (firstObserved), and etcd has
 * not refused removing this member since the youngest voter was seen started (removalRefused, from status). A member
 * is connected before it first answers, sometimes by seconds: etcd serves clients only once a new member's name is
 * published through raft, and a joiner that receives the leader's snapshot can lose that proposal and answer only
 * after etcd's 7 s request timeout (etcd-io/etcd#8608; 4 to 7 of 14 joins in step benchmarks on 2026-12-04). A refusal
 * costs one call and is recorded; then the removal waits out removalWindow.
 */
export function removalMayBeOpen(snapshot: Snapshot, memberId: string): boolean {
  const leaving = snapshot.etcd.members.find((member) => member.id === memberId);
  if (!leaving) return false;
  const youngest = Math.max(
    ...snapshot.etcd.members.filter((member) => !member.learner).map((member) => member.startedObserved ?? 0),
  );
  if (leaving.removalRefused !== undefined && leaving.removalRefused >= youngest) return false;
  return (
    windowCountedFrom(snapshot, memberId, (member) =>
      member.startedObserved === undefined ? undefined : Math.min(member.startedObserved, member.firstObserved),
    ) === undefined
  );
}

/** removalWindow with each member's peer connections counted from `since` (undefined: not started). */
function windowCountedFrom(
  snapshot: Snapshot,
  memberId: string,
  since: (member: MemberView) => number | undefined,
): RemovalWindow | undefined {
  const members = snapshot.etcd.members;
  const leaving = members.find((member) => member.id === memberId);
  const leader = members.find((member) => member.leader);
  if (!leaving || leaving.learner || !leaving.reachable || !leader) return undefined;
  const voters = members.filter((member) => !member.learner);
  const needed = Math.floor((voters.length - 1) / 2) + 1;
  // A peer connection is no older than either end: a leader that (re)started a moment ago has only young
  // connections, however long the other voters have run (found by the simulator's etcd, seed 1416916206).
  const leaderSince = since(leader);
  const leaderAge = leaderSince === undefined ? 0 : snapshot.now - leaderSince;
  const ages = voters
    .flatMap((member) => {
      const memberSince = since(member);
      return member.id !== leader.id && member.reachable && memberSince !== undefined
        ? [{ member, age: Math.min(leaderAge, snapshot.now - memberSince) }]
        : [];
    })
    .sort((a, b) => b.age - a.age);
  if (ages.length < needed || ages[needed - 1].age >= ETCD_HEALTH_INTERVAL_MS) return undefined;
  const waiting = ages.slice(0, needed).filter(({ age }) => age < ETCD_HEALTH_INTERVAL_MS);
  const leaderYoung = leaderAge < ETCD_HEALTH_INTERVAL_MS ? [{ id: leader.id, ageMs: leaderAge }] : [];
  return {
    waitMs: ETCD_HEALTH_INTERVAL_MS - ages[needed - 1].age,
    waiting: [
      ...leaderYoung,
      ...waiting
        .filter(({ member }) => snapshot.now - (since(member) ?? snapshot.now) < ETCD_HEALTH_INTERVAL_MS)
        .map(({ member, age }) => ({ id: member.id, ageMs: age })),
    ],
    needed,
  };
}

export interface LeadershipTarget {
  member: MemberAssessment;
  /** Why this one, for the reason: "up to date and a member for 1h". */
  why: string;
}

/**
 * The member to hand etcd leadership to before the leader `leavingMemberId` is removed: a healthy voter, never a
 * learner, a ghost or the leaving member. `leavingMachines` are Machines about to go (the leaving member's, the next
 * scale-down choice). Preference, each a tie-break of the one before:
 *   1. its Machine stays (not deleting, not leaving): else leadership moves again soon;
 *   2. settled: observed for LEADERSHIP_SETTLE_MS, so etcd accepts the removal at once instead of refusing it
 *      for up to 5 s; a settled outdated member beats an unsettled up-to-date one, because the second move that
 *      costs later is shorter than the refusals it saves now;
 *   3. its Machine is up to date, so a rollout does not have to move leadership again;
 *   4. among unsettled members, the one observed longest (closest to settling);
 *   5. the Machine created last (a rollout or scale-down removes the oldest first, so it leaves last);
 *   6. member id.
 * Undefined when no other healthy voter exists: the leader is then removed as it is and etcd elects another.
 */
export function selectLeadershipTarget(
  snapshot: Snapshot,
  verdict: Verdict,
  leavingMemberId: string,
  leavingMachines: readonly string[] = [],
): LeadershipTarget | undefined {
  const machineOf = (member: MemberAssessment) =>
    member.machine === undefined ? undefined : snapshot.machines.find((machine) => machine.name === member.machine);
  const observedFor = (member: MemberAssessment) => {
    const raw = snapshot.etcd.members.find((candidate) => candidate.id === member.id);
    return snapshot.now - (raw?.firstObserved ?? snapshot.now);
  };
  const ranked = verdict.members
    .filter(
      (member) =>
        member.id !== leavingMemberId && member.class === "healthy-voter" && member.healthy && !member.learner,
    )
    .map((member) => {
      const machine = machineOf(member);
      const stays = machine !== undefined && machine.deleting === undefined && !leavingMachines.includes(machine.name);
      const upToDate = machine !== undefined && isUpToDate(snapshot, machine);
      const age = observedFor(member);
      const settled = age >= LEADERSHIP_SETTLE_MS;
      const key: (number | string)[] = [
        stays ? 0 : 1,
        settled ? 0 : 1,
        upToDate ? 0 : 1,
        settled ? 0 : -age,
        -(machine?.created ?? Number.NEGATIVE_INFINITY),
        member.id,
      ];
      const state = `${upToDate ? "up to date" : "outdated"} and a member for ${formatDuration(age)}`;
      const why = settled
        ? state
        : `${state}: no settled voter stays, so etcd may refuse the removal until its peer connections are ${formatDuration(ETCD_HEALTH_INTERVAL_MS)} old`;
      return { member, key, why };
    })
    .sort((a, b) => compareKeys(a.key, b.key));
  return ranked[0] ? { member: ranked[0].member, why: ranked[0].why } : undefined;
}

function compareKeys(a: (number | string)[], b: (number | string)[]): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i] < b[i]) return -1;
    if (a[i] > b[i]) return 1;
  }
  return 0;
}
