// The etcd health check, told which operation is planned. It answers "is the cluster healthy *for this
// operation*", not "is it 1:1 right now": KCP's 1:1 check wedged forever after a crash between removing a
// member and deleting its Machine, and k3s's check ignored members that map to no node (ghosts), so a cluster
// that looked healthy could not survive one more failure. Pure: everything comes from the snapshot.
import { REMOVE_MEMBER_ANNOTATION } from "../api/constants.ts";
import type { EtcdMemberStatus, EtcdQuorumStatus } from "../api/types.ts";
import type { MemberView, Snapshot } from "./snapshot.ts";
import { formatDuration, formatTime } from "./format.ts";
import { candidateHosts, mapMembersToMachines, namesMemberId, peerHost } from "./identity.ts";

/** The operation the planner is about to take; assess projects the voter set after it. */
export type PlannedOp =
  /** No operation: the assessment for status. */
  | { kind: "Observe" }
  /** A new Machine whose member may join as a voter that is unhealthy until proven. */
  | { kind: "CreateMachine" }
  | { kind: "PromoteLearner"; memberId: string }
  | { kind: "RemoveMember"; memberId: string }
  | { kind: "RemoveGhost"; memberId: string }
  /** Also Remediate: both take the Machine away. */
  | { kind: "DeleteMachine"; machine: string }
  | { kind: "ReleaseHook"; machine: string };

/**
 * unmapped: started and healthy, but maps to no Machine (a Machine without addresses or nodeRef yet, a live member
 * Quorum does not manage). It is never a ghost, whatever its age: removing it could take a live control plane down.
 * ghost: maps to no Machine past the ghost grace period and is not healthy (never started, unreachable, erroring, a
 * stalled learner): removed automatically once that is safe.
 */
export type MemberClass =
  "healthy-voter" | "unhealthy-voter" | "joining-learner" | "unstarted-joiner" | "unmapped" | "ghost";
export type MachineClass = "joined" | "provisioning" | "deleting-with-member" | "deleting-member-gone" | "member-lost";

export interface MemberAssessment {
  id: string;
  /** "" for a member that was added but never started. */
  name: string;
  /** The Machine this member belongs to; undefined when it maps to none (a ghost once its grace period is over). */
  machine?: string;
  node?: string;
  learner: boolean;
  /** Started, answered its status call within the deadline and reported no error. */
  healthy: boolean;
  leader: boolean;
  class: MemberClass;
  /** A learner or unstarted member past its promotion/stall/join deadline: evict it. */
  stalled: boolean;
  /** A learner's applied index as a fraction of the leader's (0..1); undefined when either is unknown. */
  catchUp?: number;
  /** Why it is unhealthy, alarms included. */
  error?: string;
  /** One word or phrase for status: leader, voter, learner 84% caught up, unstarted, ghost, unmapped... */
  state: string;
  /** Human reference: "member m-2" or "unstarted member 1234 (machine m-4)". */
  label: string;
  /** For a member that maps to no Machine: the Machines without a member, any of which could be its host. */
  candidates?: string[];
}

export interface MachineAssessment {
  name: string;
  class: MachineClass;
  /** The member that belongs to this Machine, if any. */
  memberId?: string;
  /** Why the Machine is in its class, for reasons ("never joined etcd within 10m"). */
  detail: string;
}

export interface QuorumNumbers {
  voters: number;
  healthyVoters: number;
  quorumSize: number;
  failuresTolerated: number;
}

export interface Blocker {
  /** What blocks, named: "member m-2 (machine m-2)", "machine m-4", "alarm NOSPACE". */
  subject: string;
  /** Why, in words a user reads in status. */
  why: string;
}

export interface Verdict {
  op: PlannedOp;
  /** The member list was read; without it nothing about etcd is known. */
  observed: boolean;
  members: MemberAssessment[];
  machines: MachineAssessment[];
  /** The voters as they are now. */
  quorum: QuorumNumbers;
  /** Healthy voters are a quorum now, so a membership change can commit at all. */
  hasQuorum: boolean;
  /** The voters after the planned operation, joiners counted as unhealthy until proven. */
  projected: QuorumNumbers & { voterLabels: string[] };
  /** healthy projected voters >= floor(projected/2)+1 */
  keepsQuorum: boolean;
  /** No other unhealthy voter, no ghost, no unproven joiner, no alarm, nothing else deleting without our hook. */
  strict: boolean;
  /** Everything that stops the planned operation; empty when allowed. */
  blockers: Blocker[];
  /** The go/no-go for the planned operation. */
  allowed: boolean;
  /** One line on the outcome: "removing member m-3 leaves 2 of 2 voters healthy (quorum 2)". */
  summary: string;
}

/** etcd's own promotion rule: a learner may be promoted once its log is within 90% of the leader's. */
export const LEARNER_READY_FRACTION = 0.9;

export function quorumSize(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

function numbers(voters: number, healthyVoters: number): QuorumNumbers {
  const size = quorumSize(voters);
  return {
    voters,
    healthyVoters,
    quorumSize: size,
    failuresTolerated: voters === 0 ? 0 : Math.max(0, healthyVoters - size),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Mapping members to Machines

// The evidence and its precedence live in identity.ts; re-exported here for callers that know only assess.
export { mapMembersToMachines, peerHost };

// ---------------------------------------------------------------------------------------------------------------
// Classification

function describeMember(member: MemberView, machine: string | undefined): string {
  const base = member.name !== "" ? `member ${member.name}` : `unstarted member ${member.id}`;
  return machine !== undefined && machine !== member.name ? `${base} (machine ${machine})` : base;
}

/** A member that has started and answered its status call without errors in this observation. */
export function answersAsHealthy(member: MemberView): boolean {
  return member.name !== "" && member.reachable && member.errors.length === 0;
}

function classifyMembers(snapshot: Snapshot, mapping: Map<string, string>): MemberAssessment[] {
  const candidates = candidateHosts(snapshot, mapping);
  const { now } = snapshot;
  const settings = snapshot.controlPlane.etcd;
  const leader = snapshot.etcd.members.find((member) => member.leader && !member.learner);
  const alarmsByMember = new Map<string, string[]>();
  for (const alarm of snapshot.etcd.alarms)
    alarmsByMember.set(alarm.memberId, [...(alarmsByMember.get(alarm.memberId) ?? []), alarm.alarm]);

  return [...snapshot.etcd.members]
    .sort((a, b) => (a.name === b.name ? (a.id < b.id ? -1 : 1) : a.name < b.name ? -1 : 1))
    .map((member): MemberAssessment => {
      const machineName = mapping.get(member.id);
      const machine =
        machineName === undefined ? undefined : snapshot.machines.find((candidate) => candidate.name === machineName);
      const started = member.name !== "";
      const healthy = answersAsHealthy(member);
      const alarms = alarmsByMember.get(member.id) ?? [];
      const problems = [
        ...(!started ? ["not started"] : !member.reachable ? ["unreachable"] : []),
        ...member.errors,
        ...alarms.map((alarm) => `alarm ${alarm}`),
      ];
      const unmappedFor = now - member.firstObserved;

      let catchUp: number | undefined;
      if (member.learner && leader?.raftAppliedIndex !== undefined && member.raftAppliedIndex !== undefined) {
        catchUp = leader.raftAppliedIndex <= 0 ? 1 : Math.min(1, member.raftAppliedIndex / leader.raftAppliedIndex);
      }
      const learnerStalled =
        member.learner &&
        (now - member.lastProgress > settings.learnerStallMs ||
          now - member.firstObserved > settings.learnerPromotionTimeoutMs);
      const unstartedStalled = !started && now - member.firstObserved > settings.memberJoinGracePeriodMs;
      const stalled = learnerStalled || unstartedStalled;
      // A healthy member is never a ghost: grace periods measure how long Quorum failed to find its Machine, not
      // whether it is alive (issue 12, bug 1: a fresh cluster's only member, named after its host, was remediated).
      const unmapped = machineName === undefined && healthy && !stalled;
      const ghost = machineName === undefined && !unmapped && unmappedFor >= settings.ghostGracePeriodMs;

      let memberClass: MemberClass;
      if (ghost) memberClass = "ghost";
      else if (unmapped) memberClass = "unmapped";
      else if (!started) memberClass = "unstarted-joiner";
      else if (member.learner) memberClass = "joining-learner";
      else memberClass = healthy ? "healthy-voter" : "unhealthy-voter";

      let state: string;
      if (ghost) state = `ghost: maps to no Machine for ${formatDuration(unmappedFor)}`;
      else if (!started) state = stalled ? "unstarted past its join grace period" : "unstarted";
      else if (member.learner)
        state = stalled
          ? "learner, stalled"
          : catchUp === undefined
            ? "learner"
            : `learner, ${Math.floor(catchUp * 100)}% caught up`;
      else state = member.leader ? "leader" : "voter";
      if (unmapped)
        state = `unmapped ${state}: maps to no Machine (${candidates.length > 0 ? `candidates: ${machineList(candidates, ", ")}` : "no Machine without a member could host it"})`;
      else if (!ghost && machineName === undefined)
        state += `, maps to no Machine yet (ghost in ${formatDuration(settings.ghostGracePeriodMs - unmappedFor)})`;
      if (machine?.deleting !== undefined) state += ", machine deleting";

      const node = machine?.nodeName ?? snapshot.nodes.find((candidate) => candidate.name === member.name)?.name;
      return {
        id: member.id,
        name: member.name,
        ...(machineName !== undefined ? { machine: machineName } : {}),
        ...(node !== undefined ? { node } : {}),
        learner: member.learner,
        healthy,
        leader: member.leader,
        class: memberClass,
        stalled,
        ...(catchUp !== undefined ? { catchUp } : {}),
        ...(problems.length > 0 ? { error: problems.join("; ") } : {}),
        state,
        label: describeMember(member, machineName),
        ...(machineName === undefined ? { candidates } : {}),
      };
    });
}

function classifyMachines(snapshot: Snapshot, members: MemberAssessment[]): MachineAssessment[] {
  const byMachine = new Map<string, MemberAssessment>();
  for (const member of members) if (member.machine !== undefined) byMachine.set(member.machine, member);
  const joinGrace = snapshot.controlPlane.etcd.memberJoinGracePeriodMs;
  return [...snapshot.machines]
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((machine): MachineAssessment => {
      const member = byMachine.get(machine.name);
      const memberId = member ? { memberId: member.id } : {};
      if (machine.deleting !== undefined) {
        return member
          ? {
              name: machine.name,
              class: "deleting-with-member",
              ...memberId,
              detail: `deleting; its ${member.label} is still in etcd`,
            }
          : { name: machine.name, class: "deleting-member-gone", detail: "deleting; its etcd member is gone" };
      }
      if (member) {
        if (!member.learner && member.name !== "")
          return { name: machine.name, class: "joined", ...memberId, detail: `joined as ${member.label}` };
        return {
          name: machine.name,
          class: "provisioning",
          ...memberId,
          detail: member.name === "" ? `its member was added and has not started` : `its member is a learner`,
        };
      }
      const age = snapshot.now - machine.created;
      if (age < joinGrace) {
        const stage = !machine.infrastructureReady
          ? "infrastructure not ready"
          : !machine.bootstrapReady
            ? "bootstrap data not ready"
            : "waiting for its etcd member to join";
        return { name: machine.name, class: "provisioning", detail: `provisioning (${stage})` };
      }
      return {
        name: machine.name,
        class: "member-lost",
        detail: `has had no etcd member for ${formatDuration(age)} (join grace period ${formatDuration(joinGrace)})`,
      };
    });
}

// ---------------------------------------------------------------------------------------------------------------
// The verdict

interface ProjectedVoter {
  /** Member id; joiners that have no member yet get a placeholder. */
  id: string;
  label: string;
  healthy: boolean;
}

/** `mapMembers` is a seam for the simulator's planted bugs (a name-only mapping); production uses the default. */
export function assess(
  snapshot: Snapshot,
  op: PlannedOp,
  mapMembers: (snapshot: Snapshot) => Map<string, string> = mapMembersToMachines,
): Verdict {
  const observed = snapshot.etcd.observed;
  const mapping = mapMembers(snapshot);
  const members = classifyMembers(snapshot, mapping);
  const machines = classifyMachines(snapshot, members);
  const voters = members.filter((member) => !member.learner);
  const quorum = numbers(voters.length, voters.filter((member) => member.healthy).length);
  const hasQuorum = observed && voters.length > 0 && quorum.healthyVoters >= quorum.quorumSize;
  const machineByName = new Map(snapshot.machines.map((machine) => [machine.name, machine]));
  const memberById = new Map(members.map((member) => [member.id, member]));

  const blockers: Blocker[] = [];
  const finish = (
    projectedVoters: ProjectedVoter[],
    keepsQuorum: boolean,
    strict: boolean,
    allowed: boolean,
    summary: string,
  ): Verdict => {
    const projected = numbers(projectedVoters.length, projectedVoters.filter((voter) => voter.healthy).length);
    return {
      op,
      observed,
      members,
      machines,
      quorum,
      hasQuorum,
      projected: { ...projected, voterLabels: projectedVoters.map((voter) => voter.label) },
      keepsQuorum,
      strict,
      blockers: allowed ? [] : blockers,
      allowed,
      summary,
    };
  };
  const current: ProjectedVoter[] = voters.map((member) => ({
    id: member.id,
    label: member.label,
    healthy: member.healthy,
  }));

  // The very first Machine is created before etcd exists, whether observe() reports that as "not observed" or
  // as an empty member list (it does the latter when there is no Machine to ask): nothing else is safe then.
  if (op.kind === "CreateMachine" && snapshot.machines.length === 0 && snapshot.etcd.members.length === 0) {
    return finish([], true, true, true, "no Machines and no etcd yet: the first Machine starts the cluster");
  }
  if (!observed) {
    const cause = snapshot.etcd.error ?? "no etcd endpoint answered";
    blockers.push({ subject: "etcd", why: `the member list could not be read: ${cause}` });
    return finish(current, false, false, false, `etcd not observed: ${cause}`);
  }

  const machineClass = (name: string): MachineAssessment | undefined =>
    machines.find((machine) => machine.name === name);
  // Joiners in flight may add a voter at any moment (older kubeadm joins as a voter; EtcdLearnerMode promotes
  // itself): in the worst case each is a voter that has not proven itself yet.
  const joinerVoters = (exceptMachine?: string, exceptMember?: string): ProjectedVoter[] => {
    const result: ProjectedVoter[] = [];
    for (const machine of machines) {
      if (machine.class !== "provisioning" || machine.name === exceptMachine) continue;
      const member = machine.memberId === undefined ? undefined : memberById.get(machine.memberId);
      if (member && !member.learner) continue; // an unstarted voter is already counted as an unhealthy voter
      if (member && member.id === exceptMember) continue;
      result.push({
        id: member ? member.id : `joiner:${machine.name}`,
        label: member ? `${member.label} once promoted` : `the member machine ${machine.name} will add`,
        healthy: false,
      });
    }
    return result;
  };

  /**
   * The stricter policy for voluntary disruption; targets are excluded from their own blockers. A removal is also
   * blocked by a member that maps to no Machine yet; when the target is itself a ghost, other ghosts and unmapped
   * members do not block it, since each would otherwise block the other forever.
   */
  const strictBlockers = (
    exceptMember?: string,
    exceptMachine?: string,
    removal: "voter" | "unmapped" | "ghost" | "none" = "none",
  ): Blocker[] => {
    const removingGhost = removal === "ghost";
    const found: Blocker[] = [];
    for (const member of members) {
      if (member.id === exceptMember) continue;
      if (member.class === "ghost") {
        if (!removingGhost)
          found.push({
            subject: member.label,
            why: `is a ghost: it maps to no Machine (${member.state.replace(/^ghost: /, "")})`,
          });
      } else if (!member.learner && !member.healthy)
        found.push({
          subject: member.label,
          why: `is an unhealthy voter (${member.error ?? "unhealthy"})${hasQuorum ? downVoterFix(member, snapshot, machines) : ""}`,
        });
      // Not yet a ghost, but nothing Quorum manages either: counting on it could hand the cluster (even its
      // leadership) to a member no Machine stands behind once the last managed voter leaves.
      // An unmapped member may be the live member of a Machine Quorum cannot identify yet (issue 12, bug 1): with
      // it in the count, removing a healthy voter could leave that Machine's etcd as the deciding vote. Removing one
      // unmapped member a user named is the exception: the others do not block it (each would block the other). Nor
      // does it block while the control plane is being deleted: every member goes then.
      else if (member.class === "unmapped" && removal === "voter" && !snapshot.controlPlane.deleting)
        found.push({
          subject: member.label,
          why: `is healthy but maps to no Machine, so no healthy voter is removed while it is unexplained: ${unmappedFix(member)}`,
        });
      else if (member.machine === undefined && removal === "voter" && !snapshot.controlPlane.deleting)
        found.push({ subject: member.label, why: `maps to no Machine yet (${member.state})` });
    }
    for (const machine of machines) {
      if (machine.class !== "provisioning" || machine.name === exceptMachine) continue;
      const member = machine.memberId === undefined ? undefined : memberById.get(machine.memberId);
      if (member && (member.id === exceptMember || !member.learner)) continue;
      found.push({
        subject: `machine ${machine.name}`,
        why: `is joining and its member is not proven yet (${member ? member.state : machine.detail})`,
      });
    }
    // A voluntary disruption is judged on the whole membership, which only the leader can vouch for.
    if (snapshot.etcd.unconfirmed !== undefined) found.push(unconfirmedListBlocker(snapshot.etcd.unconfirmed));
    for (const alarm of snapshot.etcd.alarms) {
      const on = memberById.get(alarm.memberId);
      found.push({
        subject: `alarm ${alarm.alarm}`,
        why: `is raised on ${on ? on.label : `member ${alarm.memberId}`}`,
      });
    }
    for (const machine of snapshot.machines) {
      if (machine.deleting === undefined || machine.name === exceptMachine || machine.hasPreTerminateHook) continue;
      const info = machineClass(machine.name);
      if (info?.class !== "deleting-with-member") continue;
      // Without our hook CAPI may delete its infrastructure at any moment, taking its member down with it.
      found.push({
        subject: `machine ${machine.name}`,
        why: "is being deleted without Quorum's pre-terminate hook while its member is still in etcd",
      });
    }
    return found;
  };

  const noQuorumBlocker = (): Blocker => ({
    subject: "etcd quorum",
    why: `only ${quorum.healthyVoters} of ${quorum.voters} voters are healthy (quorum ${quorum.quorumSize}): no membership change can commit until enough voters recover`,
  });

  /** Removing a voter: projected = voters - it + joiners; the strict policy applies unless it is already unhealthy. */
  const voterRemoval = (
    target: MemberAssessment,
    what: string,
    exceptMachine?: string,
    removingGhost = false,
  ): Verdict => {
    const projectedVoters = [...current.filter((voter) => voter.id !== target.id), ...joinerVoters(exceptMachine)];
    const projected = numbers(projectedVoters.length, projectedVoters.filter((voter) => voter.healthy).length);
    const keepsQuorum = projected.voters > 0 && projected.healthyVoters >= projected.quorumSize;
    const strictFound = strictBlockers(
      target.id,
      exceptMachine,
      removingGhost ? "ghost" : target.class === "unmapped" ? "unmapped" : "voter",
    );
    const strict = strictFound.length === 0;
    if (!hasQuorum) blockers.push(noQuorumBlocker());
    if (!keepsQuorum) {
      blockers.push({
        subject: target.label,
        why:
          projected.voters === 0
            ? "is the last voter: removing it would leave etcd with no members"
            : `removing it would leave ${projected.healthyVoters} healthy of ${projected.voters} voters, below the quorum of ${projected.quorumSize}`,
      });
    }
    // Removing an unhealthy voter never lowers the failures tolerated, so only the arithmetic applies to it
    // (this is what lets remediation take a dead member out while another one is also down).
    const needsStrict = target.healthy;
    if (needsStrict) blockers.push(...strictFound);
    const allowed = hasQuorum && keepsQuorum && (!needsStrict || strict);
    const summary = `${what} leaves ${projected.healthyVoters} of ${projected.voters} voters healthy (quorum ${projected.quorumSize})`;
    return finish(projectedVoters, keepsQuorum, strict, allowed, summary);
  };

  switch (op.kind) {
    case "Observe": {
      const keepsQuorum = hasQuorum;
      const strictFound = strictBlockers();
      if (!hasQuorum) blockers.push(noQuorumBlocker());
      return finish(
        current,
        keepsQuorum,
        strictFound.length === 0,
        hasQuorum,
        `${quorum.healthyVoters} of ${quorum.voters} voters healthy (quorum ${quorum.quorumSize}, tolerates ${quorum.failuresTolerated} more failure${quorum.failuresTolerated === 1 ? "" : "s"})`,
      );
    }

    case "CreateMachine": {
      const projectedVoters = [
        ...current,
        ...joinerVoters(),
        { id: "joiner:new", label: "the new Machine's member", healthy: false },
      ];
      const projected = numbers(projectedVoters.length, projectedVoters.filter((voter) => voter.healthy).length);
      const keepsQuorum = projected.healthyVoters >= projected.quorumSize;
      const strictFound = strictBlockers();
      const strict = strictFound.length === 0;
      if (!hasQuorum) blockers.push(noQuorumBlocker());
      blockers.push(...strictFound);
      // Growing from one voter can never keep a spare while the second joins; with every voter healthy that is
      // the only risk, and it is the only way to grow.
      const growingFromOne = current.length <= 1;
      if (!keepsQuorum && !growingFromOne) {
        blockers.push({
          subject: "the new Machine's member",
          why: `would leave ${projected.healthyVoters} healthy of ${projected.voters} voters until it proves itself, below the quorum of ${projected.quorumSize}`,
        });
      }
      const allowed = hasQuorum && strict && (keepsQuorum || growingFromOne);
      return finish(
        projectedVoters,
        keepsQuorum,
        strict,
        allowed,
        `adding a member makes ${projected.healthyVoters} of ${projected.voters} voters healthy until it proves itself (quorum ${projected.quorumSize})`,
      );
    }

    case "PromoteLearner": {
      const target = memberById.get(op.memberId);
      if (!target || !target.learner) {
        blockers.push({
          subject: `member ${op.memberId}`,
          why: target ? "is already a voter" : "is not in the member list",
        });
        return finish(current, hasQuorum, false, false, "nothing to promote");
      }
      const ready = target.healthy && target.catchUp !== undefined && target.catchUp >= LEARNER_READY_FRACTION;
      // A caught-up learner has proven itself: it joins the projection as a healthy voter.
      const projectedVoters = [
        ...current,
        { id: target.id, label: target.label, healthy: target.healthy },
        ...joinerVoters(undefined, target.id),
      ];
      const projected = numbers(projectedVoters.length, projectedVoters.filter((voter) => voter.healthy).length);
      const keepsQuorum = projected.healthyVoters >= projected.quorumSize;
      if (!hasQuorum) blockers.push(noQuorumBlocker());
      if (!ready) {
        blockers.push({
          subject: target.label,
          why: !target.healthy
            ? `is a learner that does not answer (${target.error ?? "unreachable"})`
            : target.catchUp === undefined
              ? "is a learner whose progress is unknown (no leader index to compare)"
              : `is a learner, ${Math.floor(target.catchUp * 100)}% caught up (needs ${LEARNER_READY_FRACTION * 100}%)`,
        });
      }
      if (!keepsQuorum)
        blockers.push({
          subject: target.label,
          why: `promoting it would leave ${projected.healthyVoters} healthy of ${projected.voters} voters, below the quorum of ${projected.quorumSize}`,
        });
      return finish(
        projectedVoters,
        keepsQuorum,
        strictBlockers(target.id).length === 0,
        hasQuorum && ready && keepsQuorum,
        `promoting ${target.label} makes ${projected.healthyVoters} of ${projected.voters} voters healthy (quorum ${projected.quorumSize})`,
      );
    }

    case "RemoveMember":
    case "RemoveGhost": {
      const target = memberById.get(op.memberId);
      if (!target) return finish(current, hasQuorum, true, true, `member ${op.memberId} is already gone`);
      if (op.kind === "RemoveGhost" && target.class !== "ghost") {
        blockers.push({
          subject: target.label,
          why:
            target.machine !== undefined
              ? `belongs to machine ${target.machine}, it is not a ghost`
              : "maps to no Machine but is still within its grace period",
        });
        return finish(current, hasQuorum, false, false, `${target.label} is not a ghost`);
      }
      if (target.class === "unmapped" && !removalRequested(snapshot, target.id)) {
        // Possibly the live member of a Machine whose addresses or Node are not known yet: only a user can say.
        blockers.push({ subject: target.label, why: `is healthy and maps to no Machine: ${unmappedFix(target)}` });
        return finish(current, hasQuorum, false, false, `${target.label} is unmapped`);
      }
      if (target.learner) {
        // A learner is not a voter: removing it cannot cost quorum, but the change still has to commit.
        if (!hasQuorum) blockers.push(noQuorumBlocker());
        return finish(
          current,
          hasQuorum,
          true,
          hasQuorum,
          `removing learner ${target.label} leaves the ${quorum.voters} voters as they are`,
        );
      }
      return voterRemoval(target, `removing ${target.label}`, target.machine, op.kind === "RemoveGhost");
    }

    case "DeleteMachine":
    case "ReleaseHook": {
      const machine = machineByName.get(op.machine);
      if (!machine) return finish(current, hasQuorum, true, true, `machine ${op.machine} is already gone`);
      const info = machineClass(machine.name);
      const member = info?.memberId === undefined ? undefined : memberById.get(info.memberId);
      if (!member) {
        // A member not mapped yet may be this Machine's, listed before its addresses or Node reached the cache (a
        // fresh kubeadm init, a lagging informer): letting the Machine go now would strand that member as a ghost.
        // A ghost counts too: a member that has been down past the grace period while its Machine showed no address
        // or nodeRef is still that Machine's member (seed 1291496698: the hook of a remediated Machine was released
        // while its down, unmapped member stayed in etcd). The ghost is removed first (when that keeps quorum), then
        // the Machine goes. A control plane being deleted takes every member with it, so there is nothing left to
        // protect then.
        const unmapped = snapshot.controlPlane.deleting
          ? []
          : members.filter((candidate) => candidate.machine === undefined);
        if (unmapped.length > 0) {
          for (const candidate of unmapped)
            blockers.push({
              subject: candidate.label,
              why: `maps to no Machine${candidate.class === "ghost" ? "" : " yet"} and may be the member of machine ${machine.name}${candidate.class === "unmapped" ? `: ${unmappedFix(candidate)}` : candidate.class === "ghost" ? ": it is removed as a ghost first" : ""}`,
            });
          return finish(
            current,
            hasQuorum,
            false,
            false,
            `machine ${machine.name} shows no member, but ${unmapped.map((candidate) => candidate.label).join(", ")} is not mapped yet`,
          );
        }
        // A list the leader did not confirm is one member's own view: a member added since (this Machine's join,
        // committed by a leader that member cannot hear) would be missing from it, and letting the Machine go would
        // strand that member as a voter whose host is gone, in a cluster that has no quorum to spare.
        if (snapshot.etcd.unconfirmed !== undefined && !snapshot.controlPlane.deleting) {
          blockers.push(unconfirmedListBlocker(snapshot.etcd.unconfirmed, machine.name));
          return finish(
            current,
            hasQuorum,
            false,
            false,
            `machine ${machine.name} shows no member, but the member list is not confirmed by the leader`,
          );
        }
        // No member: taking the Machine (or its hook) away changes nothing in etcd. This is the step KCP refused
        // after a crash, because it counted Machines against members instead of asking about this operation.
        return finish(
          current,
          hasQuorum,
          true,
          true,
          `machine ${machine.name} has no etcd member: removing it leaves etcd as it is`,
        );
      }
      const lastMember = snapshot.controlPlane.deleting && snapshot.etcd.members.length === 1;
      if (lastMember) {
        return finish(
          [],
          true,
          true,
          true,
          `the control plane is being deleted and ${member.label} is the last member: etcd goes with it`,
        );
      }
      if (op.kind === "ReleaseHook") {
        blockers.push({
          subject: member.label,
          why: `is still in etcd: releasing the hook would let CAPI delete machine ${machine.name} and leave a ghost`,
        });
        return finish(current, hasQuorum, false, false, `machine ${machine.name} still has its member`);
      }
      if (member.learner)
        return finish(
          current,
          hasQuorum,
          true,
          true,
          `machine ${machine.name} only has ${member.label}, which is not a voter`,
        );
      if (snapshot.controlPlane.memberRemoval === "BeforeDelete") {
        blockers.push({
          subject: member.label,
          why: `is still a voter: with memberRemoval BeforeDelete it is removed before machine ${machine.name} is deleted`,
        });
        return finish(current, hasQuorum, false, false, `machine ${machine.name} still has voter ${member.label}`);
      }
      // AfterDrain: the member is removed in the hook phase, so the deletion is judged as that removal.
      return voterRemoval(member, `deleting machine ${machine.name} and then removing ${member.label}`, machine.name);
    }
  }
}

/** Why a Machine absent from a member list the leader did not confirm may still have a member. */
function unconfirmedListBlocker(cause: string, machine?: string): Blocker {
  return {
    subject: "etcd member list",
    why: `was read from a member's own view because the leader could not confirm it (${cause}): a member added since may be missing from it${machine === undefined ? "" : `, and may be machine ${machine}'s`}`,
  };
}

/** The quorum-remove-etcd-member annotation of the QuorumControlPlane names this member. */
export function removalRequested(snapshot: Snapshot, memberId: string): boolean {
  return (snapshot.controlPlane.removeMemberIds ?? []).some((entry) => namesMemberId(entry, memberId));
}

/** "machine a, machine b and 3 more": a status line stays readable however many Machines lack a member. */
function machineList(names: string[], separator: string): string {
  const shown = names
    .slice(0, 5)
    .map((name) => `machine ${name}`)
    .join(separator);
  return names.length > 5 ? `${shown} (and ${names.length - 5} more)` : shown;
}

/**
 * Since when a down voter has not answered (" since <time>", when Quorum saw it go) and what gets a cluster past it
 * when it stays down on a settled Machine that nothing marks (no MachineHealthCheck, or one that does not watch Node
 * readiness): deleting the Machine, which removes the member first. Callers say it only while quorum holds (without it
 * the removal cannot commit either). The way out is offered only for a joined Machine no remediation was asked for
 * (the delete-machine annotation only ranks a Machine for a scale-down, so it does not count), and for a member that
 * does not answer only once it has been down for remediation.machineLostAfter: a reboot or an etcd restart takes a
 * member away for minutes, and deleting such a Machine replaces one that was coming back. One that answers but is
 * unhealthy (an alarm) is not coming back on its own, nor one down for an unknown time (not withheld on a guess).
 */
export function downVoterFix(member: MemberAssessment, snapshot: Snapshot, machines: MachineAssessment[]): string {
  const downObserved = snapshot.etcd.members.find((candidate) => candidate.id === member.id)?.downObserved;
  const since = downObserved === undefined ? "" : ` since ${formatTime(downObserved)}`;
  if (member.machine === undefined) return since;
  const view = snapshot.machines.find((candidate) => candidate.name === member.machine);
  const assessed = machines.find((candidate) => candidate.name === member.machine);
  if (!view || assessed?.class !== "joined" || view.remediationRequested) return since;
  const lostAfterMs = snapshot.controlPlane.remediation.machineLostAfterMs;
  if (downObserved !== undefined && snapshot.now - downObserved < lostAfterMs) return since;
  return `${since}; ${lostMachineFix(view.name)}`;
}

/** The way past a Machine that may be lost for good, which Quorum cannot tell from a long outage. */
export function lostMachineFix(machine: string): string {
  return `if machine ${machine} is lost, delete it (or let a MachineHealthCheck mark it): Quorum removes its member first, then replaces it`;
}

/** What a user does about an unmapped member, for blockers and the EtcdMembersMapped condition. */
export function unmappedFix(member: MemberAssessment): string {
  const hosts =
    member.candidates && member.candidates.length > 0 ? machineList(member.candidates, " or ") : "its Machine";
  return (
    `if it runs on ${hosts}, give that Machine the member's address in status.addresses or a nodeRef to the Node named ${member.name || "after it"}; ` +
    `if it is stale, annotate the QuorumControlPlane with ${REMOVE_MEMBER_ANNOTATION}=${member.id} to remove it`
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Status

export function memberStatuses(verdict: Verdict): EtcdMemberStatus[] {
  return verdict.members.map((member) => ({
    id: member.id,
    name: member.name,
    ...(member.machine !== undefined ? { machine: member.machine } : {}),
    ...(member.node !== undefined ? { node: member.node } : {}),
    learner: member.learner,
    healthy: member.healthy,
    leader: member.leader,
    state: member.state,
    ...(member.error !== undefined ? { error: member.error } : {}),
  }));
}

export function quorumStatus(verdict: Verdict): EtcdQuorumStatus {
  const { voters, healthyVoters, quorumSize: size, failuresTolerated } = verdict.quorum;
  return { voters, healthyVoters, quorumSize: size, failuresTolerated };
}

/** "member m-2 is an unhealthy voter (unreachable); ghost member x ..." */
export function describeBlockers(blockers: Blocker[]): string {
  return blockers.map((blocker) => `${blocker.subject} ${blocker.why}`).join("; ");
}
