// The decision: one Action per reconcile, derived only from the snapshot. Nothing is remembered between calls,
// so a controller that crashed between any two API calls re-derives the same next step from the sources of
// truth (KCP's stuck-after-crash bug came from a check that could not be re-derived mid-operation).
//
// Order of concerns, each a small step below:
//   pause -> deletion that gave up on etcd (deletion.ts) -> missing hooks -> etcd unreadable -> finishing work
//   (hooks of gone members, Machines whose member is already gone, ghosts, Machines being deleted) -> repairs
//   (stalled joiners, remediation, learner promotion) -> converging to the spec (joiners, scale down, scale up,
//   rollout) -> nothing to do.
// Every health question goes to `assess` and every "which Machine" question to `selectForScaleDown`, so the
// simulator can swap either for a known-bad variant and prove it notices.
import { REMOVE_MEMBER_ANNOTATION } from "../api/constants.ts";
import type { Action } from "./actions.ts";
import {
  assess,
  describeBlockers,
  downVoterFix,
  lostMachineFix,
  removalRequested,
  unmappedFix,
  type Blocker,
  type MachineAssessment,
  type MemberAssessment,
  type PlannedOp,
  type Verdict,
} from "./assess.ts";
import { forcedDeletion, forcedDeletionStep } from "./deletion.ts";
import { formatDuration, formatSeconds, formatTime } from "./format.ts";
import { allowedDespite, ownershipConflict } from "./ownership.ts";
import {
  activeMachines,
  chooseFailureDomain,
  ETCD_HEALTH_INTERVAL_MS,
  hasDeadVoter,
  joinMayAddMember,
  isUpToDate,
  outdatedReasons,
  removalMayBeOpen,
  removalWindow,
  type RemovalWindow,
  selectLeadershipTarget,
  selectMachineForScaleDown,
  type ScaleDownChoice,
} from "./selection.ts";
import { unlabelledMessage, unlabelledNodes } from "./node-label.ts";
import { nodelessMachines, nodelessMessage, noNodePastGrace } from "./nodeless.ts";
import { failedInARow, pastMaxRetry, recordedRemediation, replaces, retryOf } from "./remediation-limits.ts";
import { notReadyLong, notServing } from "./serving.ts";
import type { MachineView, RemediationRecord, Snapshot } from "./snapshot.ts";

export interface PlannerParts {
  assess: typeof assess;
  selectForScaleDown: typeof selectMachineForScaleDown;
  /** Who else claims the Cluster or its Machines (src/core/ownership.ts). */
  ownershipConflict: typeof ownershipConflict;
  /** Which Machines that stay are not seen serving (servingGate). */
  notServing: typeof notServing;
}

export interface Decision {
  action: Action;
  /** etcd as it is (no operation planned): status.etcd.members and status.etcd.quorum come from here. */
  assessment: Verdict;
  /** The check that allowed or blocked the chosen step, when the step needed one. */
  check?: Verdict;
}

/**
 * How soon to look again. While something converges on its own (a learner catching up, a Machine booting) the
 * change is often visible only in etcd, which has no watch: look every second, so the next step follows within
 * about a second (KCP requeues after 20 s while not ready). One status round per second per converging cluster
 * is cheap; idle clusters are only polled at --etcd-poll-interval.
 */
export const RECHECK_MS = {
  /**
   * A member was added and is starting or catching up: its progress shows only in etcd, and the next step
   * (promote, then remove the old member) follows it. 5 status rounds a second on the one cluster in flight.
   */
  joining: 200,
  converging: 1_000,
  blocked: 15_000,
  idle: 60_000,
} as const;

type WaitAction = Extract<Action, { kind: "Wait" }>;

interface Step {
  action: Action;
  check?: Verdict;
}

/** The shortest recheck a Wait asks for: fast enough for a joining member, never a busy loop. */
export const MIN_RECHECK_MS = 100;

function waitFor(reason: string, recheckAfterMs: number, blockedBy?: string): WaitAction {
  return {
    kind: "Wait",
    reason,
    recheckAfterMs: Math.max(MIN_RECHECK_MS, Math.round(recheckAfterMs)),
    ...(blockedBy ? { blockedBy } : {}),
  };
}

function subjects(blockers: Blocker[]): string {
  return [...new Set(blockers.map((blocker) => blocker.subject))].join(", ");
}

function byName<T extends { name: string }>(items: T[]): T[] {
  return [...items].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Which remediation goes first: a Machine without a member, then one whose voter is dead (removing it never costs
 * quorum, while the strict policy refuses every healthy removal as long as it lives), then the rest.
 */
function remediationRank(member: MemberAssessment | undefined): number {
  if (!member) return 0;
  return !member.learner && !member.healthy ? 1 : 2;
}

function byDeletion(machines: MachineView[]): MachineView[] {
  return [...machines].sort(
    (a, b) => (a.deleting ?? 0) - (b.deleting ?? 0) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

export function makePlanner(parts?: Partial<PlannerParts>): (s: Snapshot) => Decision {
  const used: PlannerParts = {
    assess,
    selectForScaleDown: selectMachineForScaleDown,
    ownershipConflict,
    notServing,
    ...parts,
  };
  return (snapshot: Snapshot) => holdBesideOtherOwners(snapshot, decide(snapshot, used), used);
}

/** Another owner's Machines in our Cluster, or our own deletion beside the named owner, hold back some steps (src/core/ownership.ts). */
function holdBesideOtherOwners(snapshot: Snapshot, decision: Decision, parts: PlannerParts): Decision {
  const conflict = parts.ownershipConflict(snapshot);
  if (!conflict || allowedDespite(conflict, decision.action)) return decision;
  const held = `${decision.action.kind} (${decision.action.reason})`;
  return {
    action: waitFor(`${conflict.message}; held back: ${held}`, RECHECK_MS.blocked, conflict.claimant),
    assessment: decision.assessment,
  };
}

export const plan = makePlanner();

function decide(snapshot: Snapshot, parts: PlannerParts): Decision {
  const spec = snapshot.controlPlane;
  const key = `QuorumControlPlane ${spec.namespace}/${spec.name}`;
  const check = (op: PlannedOp): Verdict => parts.assess(snapshot, op);
  const base = check({ kind: "Observe" });
  const decided = (step: Step): Decision => ({
    action: step.action,
    assessment: base,
    ...(step.check ? { check: step.check } : {}),
  });

  // One owner first (src/core/ownership.ts): a Cluster that names another control plane gets no step from us at all.
  const conflict = parts.ownershipConflict(snapshot);
  if (conflict?.holds === "everything")
    return decided({ action: waitFor(conflict.message, RECHECK_MS.blocked, conflict.claimant) });

  if (snapshot.cluster.paused || spec.paused) {
    const who = snapshot.cluster.paused
      ? `Cluster ${spec.namespace}/${snapshot.cluster.name} has spec.paused set`
      : `${key} carries the cluster.x-k8s.io/paused annotation`;
    return decided({
      action: waitFor(
        `paused: ${who}; Quorum changes nothing until it is removed`,
        RECHECK_MS.idle,
        snapshot.cluster.paused ? `Cluster ${snapshot.cluster.name}` : key,
      ),
    });
  }

  if (spec.deleting && snapshot.machines.length === 0) {
    return decided({ action: waitFor(`${key} is being deleted and all its Machines are gone`, RECHECK_MS.idle) });
  }

  // A deletion that can no longer remove members (etcd unreadable or without quorum, or its bound passed) lets the
  // Machines go without: before the hook step, since re-adding hooks to Machines about to go would only slow it.
  const forced = forcedDeletion(snapshot, base);
  if (forced) {
    const step = forcedDeletionStep(snapshot, base, forced);
    if (step) return decided({ action: step });
    const going = byName(snapshot.machines).map((machine) => `machine ${machine.name}`);
    return decided({
      action: waitFor(
        `${key} is being deleted and ${forced.why}: every hook is released; waiting for CAPI to delete ${going.join(", ")}`,
        RECHECK_MS.blocked,
        going.join(", "),
      ),
    });
  }

  // The hook is what makes a deletion by anyone (user, MachineHealthCheck) wait for the member removal, so it goes
  // on before Quorum does anything that could lead to a deletion.
  const unhooked = byName(activeMachines(snapshot).filter((machine) => !machine.hasPreTerminateHook))[0];
  if (unhooked) {
    return decided({
      action: {
        kind: "AddHook",
        machine: unhooked.name,
        reason: `add Quorum's pre-terminate hook to machine ${unhooked.name} so that a deletion by anyone waits for its etcd member to be removed`,
      },
    });
  }

  const ctx = new Context(snapshot, parts, base, check);

  if (!base.observed) {
    if (snapshot.machines.length === 0 && !spec.deleting) {
      if (spec.replicas < 1)
        return decided({ action: waitFor(`${key} asks for 0 replicas: nothing to create`, RECHECK_MS.idle) });
      return decided(
        ctx.create(`initial creation: no Machines yet for ${spec.replicas} replica${spec.replicas === 1 ? "" : "s"}`),
      );
    }
    const cause = snapshot.etcd.error ?? "no etcd endpoint answered";
    // Without the member list no removal, deletion or promotion can be judged; waiting is the only safe step (a
    // control plane being deleted does not get here: forcedDeletion lets its Machines go).
    // A cause only a user can fix (a garbage Secret) is not worth a status round every second.
    const needsUser = snapshot.etcd.needsUser === true;
    return decided({
      action: waitFor(
        `etcd is not observed: ${cause}; nothing disruptive happens until the member list can be read${needsUser ? " (waiting alone will not fix this)" : ""}`,
        needsUser ? RECHECK_MS.blocked : RECHECK_MS.converging,
        "etcd",
      ),
    });
  }

  return decided(ctx.decide());
}

class Context {
  readonly spec: Snapshot["controlPlane"];
  readonly active: MachineView[];
  readonly desired: number;
  readonly outdated: MachineView[];
  /** maxSurge 0 needs three or more replicas (a removal first must leave a quorum); below that Quorum surges. */
  readonly surge: boolean;
  readonly scaleDownWanted: boolean;
  readonly waits: { action: WaitAction; check?: Verdict }[] = [];
  private choiceCache: { value: ScaleDownChoice | undefined } | undefined;

  constructor(
    readonly snapshot: Snapshot,
    readonly parts: PlannerParts,
    readonly base: Verdict,
    readonly check: (op: PlannedOp) => Verdict,
  ) {
    this.spec = snapshot.controlPlane;
    this.active = activeMachines(snapshot);
    this.desired = this.spec.deleting ? 0 : this.spec.replicas;
    this.outdated = this.active.filter((machine) => !isUpToDate(snapshot, machine));
    this.surge = this.spec.maxSurge === 1 || this.spec.replicas < 3;
    // A surge is refused next to a dead voter (the strict policy), and the Machine behind it is one the rollout
    // replaces anyway: it leaves first, as with maxSurge 0, removing it never costing quorum. Waiting instead held
    // the rollout until a MachineHealthCheck marked the Machine, forever where none watches Node readiness (sim seed
    // 4261416759).
    const outdatedDeadVoter = this.outdated.some((machine) => hasDeadVoter(base, machine));
    this.scaleDownWanted =
      this.active.length > this.desired ||
      (!this.spec.deleting &&
        this.outdated.length > 0 &&
        (!this.surge || outdatedDeadVoter) &&
        this.active.length >= this.desired);
  }

  get choice(): ScaleDownChoice | undefined {
    if (!this.choiceCache)
      this.choiceCache = {
        value: this.scaleDownWanted ? this.parts.selectForScaleDown(this.snapshot, this.base) : undefined,
      };
    return this.choiceCache.value;
  }

  info(machine: string): MachineAssessment | undefined {
    return this.base.machines.find((candidate) => candidate.name === machine);
  }

  member(id: string): MemberAssessment | undefined {
    return this.base.members.find((member) => member.id === id);
  }

  memberOf(machine: string): MemberAssessment | undefined {
    const id = this.info(machine)?.memberId;
    return id === undefined ? undefined : this.member(id);
  }

  machine(name: string): MachineView | undefined {
    return this.snapshot.machines.find((candidate) => candidate.name === name);
  }

  blocked(
    reason: string,
    verdict: Verdict,
    recheckAfterMs: number = RECHECK_MS.blocked,
  ): { action: WaitAction; check: Verdict } {
    return {
      action: waitFor(`${reason}: ${describeBlockers(verdict.blockers)}`, recheckAfterMs, subjects(verdict.blockers)),
      check: verdict,
    };
  }

  decide(): Step {
    const steps = [
      () => this.releaseHooksOfGoneMembers(),
      () => this.finishMachineWhoseMemberIsGone(),
      () => this.removeGhosts(),
      () => this.removeRequestedUnmapped(),
      () => this.finishDeletingMachines(),
      () => this.evictStalledJoiners(),
      () => this.remediate(),
      () => this.promoteLearners(),
    ];
    for (const step of steps) {
      const result = step();
      if (result) return result;
    }
    if (this.waits.length > 0) {
      // A Machine that cannot leave until its replacement has joined (the last voter of a Machine a user deleted,
      // or of one to remediate) is unblocked only by scaling up, or with no Machine to spare by a surge
      // (replaceLastVoter); the create is still judged by assess, whose strict policy refuses it next to a ghost, an
      // unhealthy voter or an unproven joiner.
      const grow = this.active.length < this.desired ? this.scaleUp() : this.replaceLastVoter();
      if (grow?.action.kind === "CreateMachine" || grow?.action.kind === "PrepareWorkload") return grow;
      // What is blocked above is often blocked by a dead voter (the strict policy refuses every healthy removal while
      // it lives). When fewer Machines are wanted and the dead voter's Machine is the one to go, removing it never
      // costs quorum and is what unblocks the rest (issue 12, bug 3: a healthy Machine being deleted, a dead one
      // staying, waited forever).
      const choice = this.choice;
      const machine = choice === undefined ? undefined : this.machine(choice.machine);
      if (machine && hasDeadVoter(this.base, machine)) {
        const shrink = this.scaleDown();
        if (shrink && shrink.action.kind !== "Wait") return shrink;
      }
      // Anything blocked above (a ghost, a member that cannot be removed yet) also holds back scaling and
      // rollout: one thing at a time, and never a new disruption next to an unresolved one.
      const [first, ...rest] = this.waits;
      const reason = [first.action.reason, ...rest.map((wait) => wait.action.reason)].join("; also: ");
      const blockedBy = [
        ...new Set(
          this.waits.map((wait) => wait.action.blockedBy).filter((subject): subject is string => Boolean(subject)),
        ),
      ].join(", ");
      return {
        action: waitFor(
          reason,
          Math.min(...this.waits.map((wait) => wait.action.recheckAfterMs)),
          blockedBy || undefined,
        ),
        ...(first.check ? { check: first.check } : {}),
      };
    }
    return this.waitForJoiners() ?? this.scaleDown() ?? this.scaleUp() ?? this.rollOut() ?? this.idle();
  }

  // --- finishing work -------------------------------------------------------------------------------------------

  releaseHooksOfGoneMembers(): Step | undefined {
    for (const machine of byDeletion(
      this.snapshot.machines.filter((candidate) => candidate.deleting !== undefined && candidate.hasPreTerminateHook),
    )) {
      if (this.info(machine.name)?.class !== "deleting-member-gone") continue;
      if (joinMayAddMember(this.snapshot, machine)) {
        const grace = this.spec.etcd.memberJoinGracePeriodMs - (this.snapshot.now - machine.created);
        this.waits.push({
          action: waitFor(
            `machine ${machine.name} is being deleted while its join may still add its etcd member (no member yet, ${this.snapshot.workload?.readable === false ? `and its Node cannot be read: ${this.snapshot.workload.error ?? "the workload API did not answer"}` : "no Node past kubeadm's etcd phase"}): its pre-terminate hook is held, so that a member it adds is removed before CAPI takes the machine, for at most ${formatDuration(grace)} more (memberJoinGracePeriod)`,
            RECHECK_MS.converging,
            `machine ${machine.name}`,
          ),
        });
        continue;
      }
      const verdict = this.check({ kind: "ReleaseHook", machine: machine.name });
      if (verdict.allowed) {
        return {
          action: {
            kind: "ReleaseHook",
            machine: machine.name,
            reason: `release the pre-terminate hook of machine ${machine.name}: its etcd member is gone, so CAPI may delete its infrastructure`,
          },
          check: verdict,
        };
      }
      this.waits.push(
        this.blocked(`machine ${machine.name} is being deleted but its hook cannot be released yet`, verdict),
      );
    }
    return undefined;
  }

  /** After a crash between removing a member and deleting its Machine, this is the step that finishes the job. */
  finishMachineWhoseMemberIsGone(): Step | undefined {
    const choice = this.choice;
    if (!choice || this.memberOf(choice.machine)) return undefined;
    const verdict = this.check({ kind: "DeleteMachine", machine: choice.machine });
    if (verdict.allowed) {
      return {
        action: {
          kind: "DeleteMachine",
          machine: choice.machine,
          reason: `delete machine ${choice.machine} (${this.scaleDownContext()}): ${choice.why}`,
        },
        check: verdict,
      };
    }
    this.waits.push(this.blocked(`machine ${choice.machine} should be deleted (${choice.why}) but`, verdict));
    return undefined;
  }

  removeGhosts(): Step | undefined {
    const ghosts = [...this.base.members.filter((member) => member.class === "ghost")].sort(
      (a, b) => Number(a.healthy) - Number(b.healthy) || (a.id < b.id ? -1 : 1),
    );
    if (ghosts.length === 0) return undefined;
    const refusals: Verdict[] = [];
    for (const ghost of ghosts) {
      const verdict = this.check({ kind: "RemoveGhost", memberId: ghost.id });
      if (verdict.allowed) {
        // A ghost that answers again (a stray back from an outage) is checked by etcd like any voter.
        const timing = this.removalTiming(ghost, `ghost ${ghost.label} should be removed`, verdict);
        if ("wait" in timing) {
          const { wait } = timing;
          this.waits.push({ action: wait.action as WaitAction, ...(wait.check ? { check: wait.check } : {}) });
          continue;
        }
        return {
          action: {
            kind: "RemoveGhost",
            memberId: ghost.id,
            memberName: ghost.name,
            reason: `remove ghost ${ghost.label}: ${ghost.state.replace(/^ghost: /, "it ")}; ${verdict.summary}`,
          },
          check: verdict,
        };
      }
      refusals.push(verdict);
    }
    if (refusals.length === 0) return undefined;
    const names = ghosts.map((ghost) => ghost.label).join(", ");
    const why = describeBlockers(refusals.flatMap((verdict) => verdict.blockers));
    this.waits.push({
      action: waitFor(
        `ghost ${names} maps to no Machine and blocks every disruptive step; removing it is not safe yet: ${why}`,
        RECHECK_MS.blocked,
        [names, subjects(refusals.flatMap((verdict) => verdict.blockers))].filter(Boolean).join(", "),
      ),
      check: refusals[0],
    });
    return undefined;
  }

  /**
   * A healthy member that maps to no Machine is removed only when a user names it in the quorum-remove-etcd-member
   * annotation: it may be the live member of a Machine whose addresses or Node are not known yet.
   */
  removeRequestedUnmapped(): Step | undefined {
    for (const member of this.base.members) {
      if (member.class !== "unmapped" || !removalRequested(this.snapshot, member.id)) continue;
      const step = this.removeMember(
        member,
        undefined,
        `${REMOVE_MEMBER_ANNOTATION} on ${this.spec.namespace}/${this.spec.name} names ${member.label}, which maps to no Machine`,
        "as asked",
      );
      if (step.action.kind !== "Wait") return step;
      this.waits.push({ action: step.action, ...(step.check ? { check: step.check } : {}) });
    }
    return undefined;
  }

  finishDeletingMachines(): Step | undefined {
    for (const machine of byDeletion(this.snapshot.machines.filter((candidate) => candidate.deleting !== undefined))) {
      const member = this.memberOf(machine.name);
      if (!member) continue;
      const why = `machine ${machine.name} is being deleted`;
      if (this.spec.deleting && this.snapshot.etcd.members.length === 1) {
        if (!machine.hasPreTerminateHook) {
          this.waits.push({
            action: waitFor(
              `${why}; it holds the last etcd member, which goes with it`,
              RECHECK_MS.converging,
              `machine ${machine.name}`,
            ),
          });
          continue;
        }
        const verdict = this.check({ kind: "ReleaseHook", machine: machine.name });
        if (verdict.allowed)
          return {
            action: {
              kind: "ReleaseHook",
              machine: machine.name,
              reason: `release the pre-terminate hook of machine ${machine.name}: the control plane is being deleted and ${member.label} is the last member`,
            },
            check: verdict,
          };
        this.waits.push(this.blocked(`${why} but its hook cannot be released`, verdict));
        continue;
      }
      // AfterDrain: removing the member before the drain would cut off kubelets that talk to their local
      // apiserver, so the member waits until CAPI reports the drain done.
      if (this.spec.memberRemoval === "AfterDrain" && machine.drainFinished === false && machine.hasPreTerminateHook) {
        this.waits.push({
          action: waitFor(
            `${why} and CAPI is draining it${machine.drainDetail ? ` (${machine.drainDetail})` : ""}; ${member.label} is removed once the drain ends (memberRemoval AfterDrain)`,
            RECHECK_MS.converging,
            `machine ${machine.name}`,
          ),
        });
        continue;
      }
      // AfterDrain: other pre-terminate hooks run first, as KCP's (Kubernetes >= 1.31): their controllers (a backup,
      // a storage detach) may need the node's kubelet and etcd, which stop working once its member is gone.
      const others = machine.otherPreTerminateHooks ?? [];
      if (this.spec.memberRemoval === "AfterDrain" && others.length > 0 && machine.hasPreTerminateHook) {
        this.waits.push({
          action: waitFor(
            `${why} and carries other pre-terminate hooks (${others.join(", ")}); ${member.label} is removed once their controllers have taken them off, so that they find the node's kubelet and etcd working (memberRemoval AfterDrain)`,
            RECHECK_MS.converging,
            `machine ${machine.name}`,
          ),
        });
        continue;
      }
      const step = this.removeMember(member, machine.name, why, `then release its pre-terminate hook`);
      if (step.action.kind !== "Wait") return step;
      this.waits.push({ action: step.action, ...(step.check ? { check: step.check } : {}) });
    }
    return undefined;
  }

  // --- repairs ----------------------------------------------------------------------------------------------------

  /**
   * A voter that is down on a Machine that never got a Node within memberJoinGracePeriod of its creation: the Machine
   * never came up (it died while joining, its VM gone), and while its voter lives the strict check refuses every
   * other step, a scale-up included. A MachineHealthCheck without a node startup timeout never marks it (sim seed
   * 2259926572, 2026-12-05: waited forever). Only while the workload API is read, so that "no Node" is known.
   */
  neverCameUp(member: MemberAssessment): MachineView | undefined {
    if (member.class !== "unhealthy-voter" || member.machine === undefined) return undefined;
    const raw = this.snapshot.etcd.members.find((candidate) => candidate.id === member.id);
    const machine = this.machine(member.machine);
    if (!machine || raw?.reachable !== false) return undefined;
    return noNodePastGrace(this.snapshot, machine) ? machine : undefined;
  }

  /**
   * A learner that stopped catching up, a member that never started, or the down voter of a Machine that never came
   * up is evicted: its Machine gets replaced.
   */
  evictStalledJoiners(): Step | undefined {
    for (const member of this.base.members) {
      const deadJoiner = this.neverCameUp(member);
      if ((!member.stalled && !deadJoiner) || member.machine === undefined || member.class === "ghost") continue;
      const machine = this.machine(member.machine);
      if (!machine || machine.deleting !== undefined) continue;
      const raw = this.snapshot.etcd.members.find((candidate) => candidate.id === member.id);
      const settings = this.spec.etcd;
      let why: string;
      if (deadJoiner)
        why = `it is down, and machine ${machine.name} got no Node in the ${formatDuration(this.snapshot.now - machine.created)} since its creation (memberJoinGracePeriod ${formatDuration(settings.memberJoinGracePeriodMs)}): it never came up`;
      else if (member.name === "")
        why = `it was added ${formatDuration(this.snapshot.now - (raw?.firstObserved ?? this.snapshot.now))} ago and never started (memberJoinGracePeriod ${formatDuration(settings.memberJoinGracePeriodMs)})`;
      else if (raw && this.snapshot.now - raw.lastProgress > settings.learnerStallMs)
        why = `it made no raft progress for ${formatDuration(this.snapshot.now - raw.lastProgress)} (learnerStallTimeout ${formatDuration(settings.learnerStallMs)})`;
      else
        why = `it is still a learner after ${formatDuration(this.snapshot.now - (raw?.firstObserved ?? this.snapshot.now))} (learnerPromotionTimeout ${formatDuration(settings.learnerPromotionTimeoutMs)})`;
      const verdict = this.check({ kind: "RemoveMember", memberId: member.id });
      if (verdict.allowed) {
        return {
          action: {
            kind: "RemoveMember",
            memberId: member.id,
            memberName: member.name,
            machine: machine.name,
            reason: `evict ${member.label}: ${why}; machine ${machine.name} is replaced once its member is gone`,
          },
          check: verdict,
        };
      }
      this.waits.push(this.blocked(`${member.label} should be evicted (${why}) but`, verdict));
    }
    return undefined;
  }

  remediate(): Step | undefined {
    if (this.spec.deleting) return undefined;
    // A Machine that lost (or never got) its member is replaced only when it is needed; with Machines to spare
    // the scale-down selection decides, and it prefers exactly such a Machine.
    const lostAndNeeded = (machine: MachineView) =>
      !this.scaleDownWanted && machine.malformed === undefined && this.info(machine.name)?.class === "member-lost";
    const targets = this.active
      .filter((machine) => machine.remediationRequested || machine.failed || lostAndNeeded(machine))
      .map((machine) => ({ machine, member: this.memberOf(machine.name) }))
      .sort(
        (a, b) => remediationRank(a.member) - remediationRank(b.member) || (a.machine.name < b.machine.name ? -1 : 1),
      );
    // Each in turn: one blocked remediation (next to an unmapped member, say) must not hold back a safe one.
    for (const { machine, member } of targets) {
      const step = this.remediateOne(machine, member);
      if (step) return step;
    }
    return undefined;
  }

  remediateOne(machine: MachineView, member: MemberAssessment | undefined): Step | undefined {
    const why = machine.remediationRequested
      ? "remediation was requested for it"
      : machine.failed
        ? "its infrastructure failed for good"
        : `it ${this.info(machine.name)?.detail ?? "has no etcd member"}`;

    const gate = this.remediationGate(machine);
    if (gate) {
      this.waits.push({ action: gate });
      return undefined;
    }
    if (member && (this.spec.memberRemoval === "BeforeDelete" || member.learner)) {
      const step = this.removeMember(
        member,
        machine.name,
        `machine ${machine.name} is remediated: ${why}`,
        "then replace the Machine",
      );
      if (step.action.kind !== "Wait") return step;
      this.waits.push({ action: step.action, ...(step.check ? { check: step.check } : {}) });
      return undefined;
    }
    const verdict = this.check({ kind: "DeleteMachine", machine: machine.name });
    if (verdict.allowed) {
      const then = member ? `; ${member.label} is removed after the drain (memberRemoval AfterDrain)` : "";
      const remediation = this.remediationRecord(machine);
      const retry = remediation.retryCount > 0 ? ` (retry ${remediation.retryCount})` : "";
      return {
        action: {
          kind: "Remediate",
          machine: machine.name,
          remediation,
          reason: `remediate machine ${machine.name}${retry}: ${why}; delete it and create a replacement${then}`,
        },
        check: verdict,
      };
    }
    this.waits.push(this.blocked(`machine ${machine.name} needs remediation (${why}) but`, verdict));
    return undefined;
  }

  /**
   * KCP's limits (src/core/remediation-limits.ts). While the replacement of the last remediation can be created and is
   * not yet, another remediation waits for it, so the replacement records the remediation it replaces (and KCP too
   * remediates one Machine at a time).
   */
  remediationGate(machine: MachineView): WaitAction | undefined {
    const { retryPeriodMs, minHealthyPeriodMs } = this.spec.remediation;
    if (recordedRemediation(this.snapshot, machine)) return undefined;
    const retry = retryOf(this.snapshot, machine);
    if (retry) {
      const since = this.snapshot.now - retry.time;
      const replacing = `machine ${machine.name} needs remediation, but it replaces machine ${retry.machine}, remediated ${formatDuration(since)} ago`;
      if (since < retryPeriodMs)
        return waitFor(
          `${replacing}: a failing replacement waits out retryPeriod ${formatDuration(retryPeriodMs)}`,
          retryPeriodMs - since,
          `machine ${machine.name}`,
        );
      if (pastMaxRetry(this.snapshot, retry)) {
        return waitFor(
          `${replacing}, and ${failedInARow(this.snapshot, retry)}: find why replacements fail, then delete machine ${machine.name} by hand or wait ${formatDuration(minHealthyPeriodMs - since)}`,
          Math.min(RECHECK_MS.idle, minHealthyPeriodMs - since),
          `machine ${machine.name}`,
        );
      }
    }
    const pending = this.pendingReplacement();
    if (pending && this.active.length < this.desired && this.check({ kind: "CreateMachine" }).allowed) {
      return waitFor(
        `machine ${machine.name} needs remediation, but the replacement of machine ${pending.machine} (remediated ${formatDuration(this.snapshot.now - pending.time)} ago) is created first: one remediation at a time, so each replacement records the one it replaces`,
        RECHECK_MS.converging,
        `machine ${machine.name}`,
      );
    }
    return undefined;
  }

  /** What a remediation of this Machine records (the annotation written before it is deleted). */
  remediationRecord(machine: MachineView): RemediationRecord {
    const last = this.spec.remediation.last;
    if (last && recordedRemediation(this.snapshot, machine)) return last;
    // The only voter's Machine got its replacement before it leaves (replaceLastVoter): that one already records it.
    // Never the Machine itself, though it may carry its own name as the one it replaced, created (whole seconds) in the
    // second of that remediation.
    const surge = this.active.find(
      (other) =>
        other.name !== machine.name &&
        other.remediationFor?.machine === machine.name &&
        other.remediationFor.time >= machine.created,
    )?.remediationFor;
    if (surge) return surge;
    const retry = retryOf(this.snapshot, machine);
    return { machine: machine.name, time: this.snapshot.now, retryCount: retry ? retry.retryCount + 1 : 0 };
  }

  /**
   * The remediation the next Machine created replaces: the last one, once its Machine is deleting or gone, while no
   * Machine records it yet and less than minHealthyPeriod ago (an older one counts no retry).
   */
  pendingReplacement(): RemediationRecord | undefined {
    const last = this.spec.remediation.last;
    if (!last || this.snapshot.now - last.time >= this.spec.remediation.minHealthyPeriodMs) return undefined;
    if (this.snapshot.machines.some((machine) => replaces(machine, last))) return undefined;
    if (this.active.some((machine) => machine.name === last.machine)) return undefined;
    return last;
  }

  promoteLearners(): Step | undefined {
    for (const member of this.base.members) {
      if (member.class !== "joining-learner" || member.stalled || member.machine === undefined) continue;
      const machine = this.machine(member.machine);
      if (!machine || machine.deleting !== undefined) continue;
      const verdict = this.check({ kind: "PromoteLearner", memberId: member.id });
      if (verdict.allowed) {
        return {
          action: {
            kind: "PromoteLearner",
            memberId: member.id,
            memberName: member.name,
            reason: `promote ${member.label} to voter: it has caught up with the leader; ${verdict.summary}`,
          },
          check: verdict,
        };
      }
      this.waits.push(this.blocked(`new ${member.label} is joining`, verdict, RECHECK_MS.joining));
    }
    return undefined;
  }

  // --- converging to the spec -------------------------------------------------------------------------------------

  waitForJoiners(): Step | undefined {
    const joining = byName(this.active).filter((machine) => this.info(machine.name)?.class === "provisioning");
    if (joining.length === 0) return undefined;
    const parts = joining.map((machine) => {
      const member = this.memberOf(machine.name);
      if (member) {
        const raw = this.snapshot.etcd.members.find((candidate) => candidate.id === member.id);
        const since = formatDuration(this.snapshot.now - (raw?.firstObserved ?? this.snapshot.now));
        if (member.name === "")
          return `machine ${machine.name} is joining: its member ${member.id} was added ${since} ago and has not started yet`;
        return `machine ${machine.name} is joining: ${member.label} is a ${member.state}`;
      }
      const grace = this.spec.etcd.memberJoinGracePeriodMs - (this.snapshot.now - machine.created);
      return `machine ${machine.name} is ${this.info(machine.name)?.detail ?? "provisioning"}; it is replaced if no member joins within ${formatDuration(grace)}`;
    });
    const memberAdded = joining.some((machine) => this.memberOf(machine.name) !== undefined);
    return {
      action: waitFor(
        `${parts.join("; ")}; the next step waits until it has joined`,
        memberAdded ? RECHECK_MS.joining : RECHECK_MS.converging,
        joining.map((machine) => `machine ${machine.name}`).join(", "),
      ),
    };
  }

  scaleDownContext(): string {
    const machines = (n: number) => `${n} Machine${n === 1 ? "" : "s"}`;
    if (this.spec.deleting)
      return `${this.spec.namespace}/${this.spec.name} is being deleted: ${machines(this.active.length)} left`;
    if (
      this.active.length > this.desired &&
      this.outdated.length > 0 &&
      this.active.length - this.desired === 1 &&
      this.spec.replicas === this.desired
    ) {
      return `rollout: ${machines(this.active.length)} for ${this.desired} replica${this.desired === 1 ? "" : "s"}, so an outdated Machine leaves`;
    }
    if (this.active.length > this.desired)
      return `scale down: ${machines(this.active.length)} for ${this.desired} replica${this.desired === 1 ? "" : "s"}`;
    if (this.surge)
      return `rollout: an outdated Machine whose etcd member is down leaves before its replacement is created (no member can join next to a dead voter)`;
    return `rollout with maxSurge 0: an outdated Machine leaves before its replacement is created`;
  }

  scaleDown(): Step | undefined {
    const choice = this.choice;
    if (!choice) return undefined;
    const member = this.memberOf(choice.machine);
    const why = `${this.scaleDownContext()}; machine ${choice.machine} goes because ${choice.why}`;
    const lastMember = this.spec.deleting && this.snapshot.etcd.members.length === 1 && member !== undefined;
    if (member && !member.learner && member.healthy && !this.spec.deleting) {
      const serving = this.servingGate(choice.machine, why);
      if (serving) return serving;
    }
    if (!member || lastMember || (this.spec.memberRemoval === "AfterDrain" && !member.learner)) {
      const verdict = this.check({ kind: "DeleteMachine", machine: choice.machine });
      if (!verdict.allowed) return this.blocked(`${why}, but deleting it is blocked`, verdict);
      const then = !member
        ? ""
        : lastMember
          ? `; ${member.label} is the last member and goes with it`
          : `; ${member.label} is removed after the drain (memberRemoval AfterDrain)`;
      return {
        action: {
          kind: "DeleteMachine",
          machine: choice.machine,
          reason: `delete machine ${choice.machine} (${why})${then}; ${verdict.summary}`,
        },
        check: verdict,
      };
    }
    return this.removeMember(member, choice.machine, why, "then delete the Machine");
  }

  /**
   * A control plane exists to serve the workload API: a healthy voter leaves (scale-down, rollout) only once every
   * Machine that stays with a voter is seen serving, its Node Ready through the workload API (the replacement's
   * etcd member being healthy proves nothing about its API server). While that API cannot be read, such removals
   * wait and say why. No workload API to ask (no endpoint, and none answered) means no Node to check. Repairs (dead
   * voters, remediation, Machines a user deleted, ghosts) and the deletion of the control plane are not held back,
   * nor is a Machine whose own API server is seen down: its leaving takes no serving API server away, and holding it
   * while another such Machine stays would wedge a rollout that replaces several of them (a template whose API server
   * could not start, fixed by a newer one).
   */
  servingGate(leaving: string, why: string): Step | undefined {
    const leavingView = this.active.find((machine) => machine.name === leaving);
    if (leavingView && this.parts.notServing(this.snapshot, [leavingView]).machines[0]?.apiServerDown) return undefined;
    const staying = byName(this.active).filter(
      (machine) => machine.name !== leaving && this.info(machine.name)?.class === "joined",
    );
    const found = this.parts.notServing(this.snapshot, staying);
    if (found.unreadable !== undefined) {
      return {
        action: waitFor(
          `${why}, but the workload API cannot be read (${found.unreadable}): Quorum removes a voter only once the Machines that stay are seen Ready through it; fix the kubeconfig Secret or the control-plane endpoint`,
          RECHECK_MS.converging,
          "workload API",
        ),
      };
    }
    if (found.machines.length === 0) return undefined;
    // A Machine that got no Node within memberJoinGracePeriod of its creation (src/core/nodeless.ts) is named with the
    // way out; a younger one is most likely booting.
    const nodeless = new Map(
      nodelessMachines(this.snapshot, this.base.members).map((entry) => [entry.machine, entry] as const),
    );
    const nodelessDetail = (name: string) => {
      const entry = nodeless.get(name);
      return entry ? nodelessMessage(entry, this.spec.etcd.memberJoinGracePeriodMs) : `machine ${name} has no Node yet`;
    };
    const detail = found.machines
      .map(({ machine, node, components, notReadySince }) =>
        components
          ? `machine ${machine.name}'s control plane is not serving (${components.join("; ")})`
          : node
            ? `machine ${machine.name}'s Node ${node} is not Ready${notReadySince === undefined ? "" : ` since ${formatTime(notReadySince)}`}`
            : nodelessDetail(machine.name),
      )
      .join("; ");
    // A Node that stays NotReady (a kubelet that stopped for good) holds every removal until someone replaces it; one
    // NotReady for less than machineLostAfter is most likely starting, and is named without the way out.
    const fixes = found.machines
      .filter((entry) => notReadyLong(entry, this.snapshot.now, this.spec.remediation.machineLostAfterMs))
      .map(({ machine }) => `; ${lostMachineFix(machine.name)}`)
      .join("");
    return {
      action: waitFor(
        `${why}, but ${detail}: a voter leaves only once the Machines that stay are seen serving${fixes}`,
        RECHECK_MS.converging,
        found.machines.map(({ machine }) => `machine ${machine.name}`).join(", "),
      ),
    };
  }

  /**
   * The Machine to remediate holds the only voter: its member cannot leave before another joins, and with no Machine to
   * spare no scale-up ever comes (one replica), so its replacement is created first, as a surge (judged by assess like
   * any create). KCP refuses to remediate a single control-plane Machine at all (sim seed 737699280, 2026-12-05: an
   * API server that could not start on the only Machine, marked by the MachineHealthCheck, waited forever).
   */
  replaceLastVoter(): Step | undefined {
    if (this.spec.deleting || this.active.length > this.desired) return undefined;
    const voters = this.base.members.filter((member) => !member.learner);
    const owner = voters.length === 1 && voters[0].machine !== undefined ? this.machine(voters[0].machine) : undefined;
    if (!owner || owner.deleting !== undefined || !(owner.remediationRequested || owner.failed)) return undefined;
    // The surge is the remediation's first step: the retry limits hold it back too (remediateOne says why).
    if (this.remediationGate(owner)) return undefined;
    return this.create(
      `machine ${owner.name} needs remediation but holds the only etcd voter, so its replacement joins before it leaves`,
      this.remediationRecord(owner),
    );
  }

  scaleUp(): Step | undefined {
    if (this.active.length >= this.desired) return undefined;
    return this.create(`scale up: ${this.active.length} of ${this.desired} Machines`);
  }

  rollOut(): Step | undefined {
    if (this.spec.deleting || this.outdated.length === 0 || !this.surge) return undefined;
    const sample = this.outdated[0];
    const note = this.spec.maxSurge === 0 ? " (maxSurge 0 needs 3 or more replicas, so Quorum surges by one)" : "";
    return this.create(
      `rollout: ${this.outdated.length} of ${this.active.length} Machines outdated (${byName(this.outdated)
        .map((machine) => machine.name)
        .join(
          ", ",
        )}: ${outdatedReasons(this.snapshot, sample).join(", ")}); an up-to-date Machine joins before an outdated one leaves${note}`,
    );
  }

  idle(): Step {
    const { voters, healthyVoters, quorumSize, failuresTolerated } = this.base.quorum;
    const down = this.base.members.filter((member) => !member.learner && !member.healthy);
    const isDown = (member: MemberAssessment) => `${member.label} is down (${member.error ?? "unhealthy"})`;
    const unmapped = this.base.members.filter((member) => member.class === "unmapped");
    if (unmapped.length > 0) {
      // The spec is met, but a member nobody can place holds back every healthy removal: say so where users look.
      const labels = unmapped.map((member) => member.label).join(", ");
      return {
        action: waitFor(
          `${this.active.length} of ${this.desired} Machines, but ${labels} maps to no Machine: ${unmapped.map(unmappedFix).join("; ")}`,
          RECHECK_MS.idle,
          labels,
        ),
      };
    }
    if (!this.base.hasQuorum) {
      // Nothing Quorum may do helps: no membership change can commit. Say what blocks, not "nothing to do".
      return {
        action: waitFor(
          `etcd has lost quorum: only ${healthyVoters} of ${voters} voters are healthy (quorum ${quorumSize}); ${down.map(isDown).join("; ")}; no membership change can commit until enough of them recover: restart them, or restore etcd from a backup if they are lost`,
          RECHECK_MS.blocked,
          down.map((member) => member.label).join(", ") || "etcd quorum",
        ),
      };
    }
    const workload = this.snapshot.workload;
    if (workload?.expected && !workload.readable) {
      return {
        action: waitFor(
          `${this.active.length} of ${this.desired} Machines up to date and etcd ${healthyVoters} of ${voters} voters healthy, but the workload API cannot be read (${workload.error ?? "no answer"}): whether the control plane serves is unknown, and removals wait until it can be read`,
          RECHECK_MS.idle,
          "workload API",
        ),
      };
    }
    const after =
      this.outdated.length === 0 && !this.spec.deleting
        ? this.workloadStep(
            "AfterRollout",
            `${this.active.length} of ${this.desired} Machines up to date at ${this.spec.version}`,
          )
        : undefined;
    if (after) return after;
    // A voter down with nothing marking its Machine is not "nothing to do" for the user: say which and the way out.
    const named = down
      .map((member) => `; ${isDown(member)}${downVoterFix(member, this.snapshot, this.base.machines)}`)
      .join("");
    // A kubeadm join that has not labelled its Node (src/core/node-label.ts) and a Machine that never got a Node
    // (src/core/nodeless.ts) are said too, and keep the short poll.
    const unlabelled = unlabelledNodes(this.snapshot);
    const nodeless = nodelessMachines(this.snapshot, this.base.members);
    const grace = this.spec.etcd.memberJoinGracePeriodMs;
    const said = [
      ...unlabelled.map((node) => `; ${unlabelledMessage(node)}`),
      ...nodeless.map((found) => `; ${nodelessMessage(found, grace)}`),
    ];
    const idle = waitFor(
      `nothing to do: ${this.active.length} of ${this.desired} Machines up to date; etcd ${healthyVoters} of ${voters} voters healthy (quorum ${quorumSize}, tolerates ${failuresTolerated} failure${failuresTolerated === 1 ? "" : "s"})${named}${said.join("")}`,
      RECHECK_MS.idle,
    );
    return { action: said.length === 0 && this.settled() ? { ...idle, settled: true } : idle };
  }

  /**
   * Every Machine joined and every member a healthy voter of one of them: with every kubeadm Node labelled and every
   * Machine's Node found (checked by the caller), only etcd itself could change that.
   */
  private settled(): boolean {
    const { members, machines } = this.base;
    return (
      this.active.length === this.desired &&
      machines.length === this.active.length &&
      machines.every((machine) => machine.class === "joined") &&
      members.length === machines.length &&
      members.every((member) => member.class === "healthy-voter" && member.machine !== undefined)
    );
  }

  // --- shared steps -------------------------------------------------------------------------------------------

  /** `remediationFor`: the remediation the new Machine replaces; by default the last one, while none records it. */
  create(context: string, remediationFor: RemediationRecord | undefined = this.pendingReplacement()): Step {
    const cluster = this.snapshot.cluster;
    if (!cluster.infrastructureReady) {
      return {
        action: waitFor(
          `${context}, but the infrastructure of Cluster ${this.spec.namespace}/${cluster.name} is not ready yet`,
          RECHECK_MS.converging,
          `Cluster ${cluster.name}`,
        ),
      };
    }
    if (cluster.awaitingEndpoint) {
      // A Machine bootstrapped before the endpoint exists gets no API server address to join or serve (KCP waits too).
      return {
        action: waitFor(
          `${context}, but Cluster ${this.spec.namespace}/${cluster.name} has no spec.controlPlaneEndpoint yet (host and port, set by its infrastructure provider)`,
          RECHECK_MS.converging,
          `Cluster ${cluster.name}`,
        ),
      };
    }
    const verdict = this.check({ kind: "CreateMachine" });
    if (!verdict.allowed) return this.blocked(`${context}, but adding a member is not safe yet`, verdict);
    const prepare = this.workloadStep("BeforeCreate", context);
    if (prepare) return prepare;
    const failureDomain = chooseFailureDomain(this.snapshot);
    return {
      action: {
        kind: "CreateMachine",
        ...(failureDomain !== undefined ? { failureDomain } : {}),
        ...(remediationFor ? { remediationFor } : {}),
        reason: `${context}: create a Machine${failureDomain !== undefined ? ` in failure domain ${failureDomain}` : ""}${remediationFor ? ` to replace machine ${remediationFor.machine}` : ""}; ${verdict.summary}`,
      },
      check: verdict,
    };
  }

  /**
   * The bootstrap flavour's first workload step of this kind not done (snapshot.workloadSteps): a PrepareWorkload, or
   * a Wait when it cannot be done now or the steps could not be observed. BeforeCreate steps come before any Machine
   * joins (kubeadm join renders the new node from kubeadm-config); AfterRollout ones once all Machines are up to date.
   */
  workloadStep(when: "BeforeCreate" | "AfterRollout", context: string): Step | undefined {
    const observed = this.snapshot.workloadSteps;
    if (!observed) return undefined;
    if (observed.error) {
      // A joiner needs what these steps put in place; after a rollout, nothing waits on them.
      if (when === "AfterRollout") return undefined;
      return {
        action: waitFor(
          `${context}, but what a new ${observed.flavour} Machine needs in the workload cluster could not be checked: ${observed.error}`,
          RECHECK_MS.converging,
          "workload API",
        ),
      };
    }
    const step = observed.steps.find((candidate) => candidate.when === when && !candidate.done);
    if (!step) return undefined;
    if (step.blocked) {
      // A BeforeCreate block usually clears by itself (kubeadm init is about to upload kubeadm-config); an AfterRollout
      // one waits for the user (a CoreDNS pin older than what runs), and at the converging pace an idle cluster would be
      // reconciled, and its workload read, every second until then.
      const recheckAfterMs = when === "AfterRollout" ? RECHECK_MS.blocked : RECHECK_MS.converging;
      return { action: waitFor(`${context}, but ${step.blocked}`, recheckAfterMs, step.name) };
    }
    return {
      action: {
        kind: "PrepareWorkload",
        step: step.name,
        reason: `${context}; first, ${step.name}: ${step.detail}`,
      },
    };
  }

  /**
   * When removing `member` may be asked. While etcd would refuse it ("unhealthy cluster"), a wait until its window
   * opens; unless etcd may have opened it already (removalMayBeOpen): then the removal is asked once, and `early` says
   * why, for its reason ("" when Quorum's own count has the window open).
   */
  removalTiming(member: MemberAssessment, why: string, verdict: Verdict): { wait: Step } | { early: string } {
    const window = removalWindow(this.snapshot, member.id);
    if (!window) return { early: "" };
    if (removalMayBeOpen(this.snapshot, member.id)) return { early: this.earlyRemoval(window) };
    const young = window.waiting.map(({ id, ageMs }) => ({ label: this.member(id)?.label ?? `member ${id}`, ageMs }));
    const reason =
      `${why}: removing ${member.label} waits ${formatSeconds(window.waitMs)}, because etcd refuses a voter removal until ${window.needed} voter${window.needed === 1 ? "" : "s"} ` +
      `besides the leader have been connected to it for ${formatDuration(ETCD_HEALTH_INTERVAL_MS)} (${young.map(({ label, ageMs }) => `${label} started ${formatSeconds(ageMs)} ago`).join(", ")})`;
    return {
      wait: { action: waitFor(reason, window.waitMs, young.map(({ label }) => label).join(", ")), check: verdict },
    };
  }

  /** Why a removal is asked while Quorum's own count of etcd's `window` has it closed (removalMayBeOpen). */
  earlyRemoval(window: RemovalWindow): string {
    const young = window.waiting.map(({ id, ageMs }) => {
      const listed = this.snapshot.etcd.members.find((candidate) => candidate.id === id)?.firstObserved;
      const since = listed === undefined ? "" : `, listed ${formatSeconds(this.snapshot.now - listed)} ago`;
      return `${this.member(id)?.label ?? `member ${id}`} answered first ${formatSeconds(ageMs)} ago${since}`;
    });
    const wait = formatSeconds(window.waitMs);
    return (
      `; asked now, ${wait} before Quorum's count of etcd's ${formatDuration(ETCD_HEALTH_INTERVAL_MS)} removal window ends, since a member is ` +
      `connected before its first answer (${young.join("; ")}); if etcd refuses, the removal waits those ${wait}`
    );
  }

  /** Preflight, leadership off the member, then the removal itself (executors treat an absent member as done). */
  removeMember(member: MemberAssessment, machine: string | undefined, why: string, then: string): Step {
    const verdict = this.check({ kind: "RemoveMember", memberId: member.id });
    if (!verdict.allowed) return this.blocked(`${why}, but removing ${member.label} is blocked`, verdict);
    if (member.leader && !member.learner) {
      const leaving = [...(machine !== undefined ? [machine] : []), ...(this.choice ? [this.choice.machine] : [])];
      const target = selectLeadershipTarget(this.snapshot, this.base, member.id, leaving);
      if (target) {
        const to = target.member;
        return {
          action: {
            kind: "ForwardLeadership",
            fromMemberId: member.id,
            toMemberId: to.id,
            toMemberName: to.name,
            reason: `move etcd leadership from ${member.label} to ${to.label} (${target.why}) before removing it (${why})`,
          },
          check: verdict,
        };
      }
    }
    const timing = this.removalTiming(member, why, verdict);
    if ("wait" in timing) return timing.wait;
    const of = machine !== undefined ? ` (machine ${machine})` : "";
    return {
      action: {
        kind: "RemoveMember",
        memberId: member.id,
        memberName: member.name,
        ...(machine !== undefined ? { machine } : {}),
        reason: `remove etcd ${member.label}${of}, ${then} (${why}); ${verdict.summary}${timing.early}`,
      },
      check: verdict,
    };
  }
}
