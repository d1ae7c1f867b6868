// The QuorumControlPlane status a reconcile wants: the CAPI contract counters (v1beta2 and v1beta1), conditions,
// the etcd member list and quorum margin, and the single next action. Pure: the same inputs give the same status,
// so an idle control plane produces an unchanged status and no write.
import { CONDITION, LABEL_CONTROL_PLANE_NAME, REASON_WORKLOAD_KUBECONFIG_REJECTED } from "../api/constants.ts";
import { formatLabelValue } from "../api/label-value.ts";
import { etcdAccessOf } from "../api/flavour.ts";
import type { Condition, EtcdMemberStatus, QuorumControlPlane, QuorumControlPlaneStatus } from "../api/types.ts";
import type { Action } from "../core/actions.ts";
import { describeBlockers, memberStatuses, quorumStatus, unmappedFix, type Verdict } from "../core/assess.ts";
import { forcedDeletion, memberRemovalDeadline, membersLeft } from "../core/deletion.ts";
import { formatDuration } from "../core/format.ts";
import { persisted, unobserved } from "../core/memory.ts";
import { ownershipConflict } from "../core/ownership.ts";
import { isUpToDate } from "../core/selection.ts";
import type { Snapshot } from "../core/snapshot.ts";
import { setConditions, type ConditionInput } from "./conditions.ts";
import { writtenRemediation } from "./remediation-record.ts";

export interface StatusInputs {
  controlPlane: QuorumControlPlane;
  snapshot: Snapshot;
  action: Action;
  verdict: Verdict;
  /** Why the workload Nodes could not be listed, if they could not. */
  nodesError?: string;
  /** The reason the adapter gave for nodesError (WorkloadKubeconfigRejected gets its own MachinesReady reason). */
  nodesErrorReason?: string;
  /** Fields the executed action asked to record (remediation history). */
  actionStatus?: Record<string, unknown>;
}

export function computeStatus(inputs: StatusInputs): QuorumControlPlaneStatus {
  const { controlPlane, snapshot, action, verdict } = inputs;
  const previous = controlPlane.status ?? {};
  const now = new Date(snapshot.now).toISOString();
  const machines = snapshot.machines;
  const healthyMemberMachines = new Set(
    verdict.members
      .filter((member) => member.class === "healthy-voter" && member.machine !== undefined)
      .map((member) => member.machine as string),
  );
  const nodesKnown = inputs.nodesError === undefined && snapshot.nodes.length > 0;
  const ready = machines.filter((machine) => {
    if (machine.deleting !== undefined || !healthyMemberMachines.has(machine.name)) return false;
    if (!nodesKnown) return true;
    return snapshot.nodes.some((node) => node.name === (machine.nodeName ?? machine.memberName) && node.ready);
  }).length;
  const upToDate = machines.filter((machine) => machine.deleting === undefined && isUpToDate(snapshot, machine)).length;
  const replicas = machines.length;
  // The v1beta2 contract counts Machines by their conditions: Ready and Available as CAPI's Machine controller sets
  // them, UpToDate as Quorum sets it (src/core/machine-conditions.ts, the same judgement as `upToDate`). The
  // deprecated v1beta1 counters keep Quorum's own reading: a healthy etcd voter whose Node is Ready.
  const capiReady = machines.filter((machine) => machine.capiReady === true).length;
  const capiAvailable = machines.filter((machine) => machine.capiAvailable === true).length;
  // The first healthy member, and where the bootstrap flavour has its own word for it, that too (kubeadm: init has
  // uploaded kubeadm-config, which every join reads; CABPK writes join data only once this is true, so a first Machine
  // whose init failed after etcd started keeps getting init data, as with KCP).
  const flavourInitialized = snapshot.workloadSteps ? snapshot.workloadSteps.initialized === true : true;
  const initialized =
    previous.initialization?.controlPlaneInitialized === true || (healthyMemberMachines.size > 0 && flavourInitialized);
  const versions = machines
    .map((machine) => machine.version)
    .filter((version) => version !== "")
    .sort(compareVersions);
  const quorum = quorumStatus(verdict);
  // The remediation this reconcile just made, else the memory the planner used (the annotation).
  const lastRemediation =
    (inputs.actionStatus?.lastRemediation as QuorumControlPlaneStatus["lastRemediation"]) ??
    remembered(snapshot) ??
    previous.lastRemediation;

  const conditions = setConditions(
    previous.conditions,
    conditionInputs(inputs, { ready, upToDate, replicas }),
    now,
    snapshot.controlPlane.generation,
  );
  const v1beta1Conditions = setConditions(
    previous.deprecated?.v1beta1?.conditions,
    [readyCondition(verdict, ready, snapshot)],
    now,
    snapshot.controlPlane.generation,
  );

  return {
    observedGeneration: snapshot.controlPlane.generation,
    selector: `${LABEL_CONTROL_PLANE_NAME}=${formatLabelValue(controlPlane.metadata.name)}`,
    replicas,
    readyReplicas: capiReady,
    availableReplicas: capiAvailable,
    upToDateReplicas: upToDate,
    updatedReplicas: upToDate,
    unavailableReplicas: replicas - ready,
    ...(versions.length > 0 ? { version: versions[0] } : {}),
    initialized,
    ready: ready > 0,
    initialization: { controlPlaneInitialized: initialized },
    conditions,
    deprecated: {
      v1beta1: {
        conditions: v1beta1Conditions,
        readyReplicas: ready,
        updatedReplicas: upToDate,
        unavailableReplicas: replicas - ready,
      },
    },
    etcd: {
      // A member list that could not be read says nothing about who left: keep the last one and its memory.
      members: verdict.observed
        ? withMemory(memberStatuses(verdict), snapshot)
        : unobserved(previous.etcd?.members ?? []),
      quorum,
      ...membershipChanged(previous.etcd, verdict, now),
      summary: verdict.observed ? `${quorum.healthyVoters}/${quorum.voters}` : "unknown",
      access: etcdAccessOf(controlPlane),
    },
    nextAction: nextAction(action),
    ...(lastRemediation ? { lastRemediation } : {}),
  };
}

function remembered(snapshot: Snapshot): QuorumControlPlaneStatus["lastRemediation"] | undefined {
  const last = snapshot.controlPlane.remediation.last;
  return last ? writtenRemediation(last) : undefined;
}

/** What kept a reconcile from finishing its step: the Reconciled condition (and `condition`, when given) says so. */
export interface Problem {
  reason: string;
  message: string;
  /** A condition that is False for the same reason (CertificatesAvailable). */
  condition?: string;
}

export interface StatusRequest {
  controlPlane: QuorumControlPlane;
  /** The reconcile's one clock reading. */
  now: number;
  /** What the reconcile observed and decided; absent when it stopped before it could observe. */
  observed?: Omit<StatusInputs, "controlPlane">;
  problem?: Problem;
}

/**
 * Every status a reconcile writes comes from here: the status of what it observed (or, when it stopped before
 * observing, the status it found), with the problem that stopped it, if any, on top.
 */
export function statusFor(request: StatusRequest): QuorumControlPlaneStatus {
  const { controlPlane, observed, problem } = request;
  const base: QuorumControlPlaneStatus = observed
    ? computeStatus({ controlPlane, ...observed })
    : { ...(controlPlane.status ?? {}) };
  const updates: ConditionInput[] = [];
  // Observing comes after the certificates were ensured, except for a deletion, which does not look at them.
  if (observed && !observed.snapshot.controlPlane.deleting)
    updates.push({ type: CONDITION.CertificatesAvailable, status: "True", reason: "Available", message: "" });
  if (problem) {
    updates.push({ type: CONDITION.Reconciled, status: "False", reason: problem.reason, message: problem.message });
    if (problem.condition)
      updates.push({ type: problem.condition, status: "False", reason: problem.reason, message: problem.message });
  }
  const status: QuorumControlPlaneStatus = {
    ...base,
    conditions: setConditions(
      base.conditions,
      updates,
      new Date(request.now).toISOString(),
      controlPlane.metadata.generation ?? 0,
    ),
  };
  if (problem) status.nextAction = { kind: "Wait", message: `blocked: ${problem.message}`, blockedBy: problem.reason };
  return status;
}

function conditionInputs(
  inputs: StatusInputs,
  counts: { ready: number; upToDate: number; replicas: number },
): ConditionInput[] {
  const { snapshot, verdict, action } = inputs;
  const desired = snapshot.controlPlane.replicas;
  const active = snapshot.machines.filter((machine) => machine.deleting === undefined).length;
  const paused = snapshot.cluster.paused || snapshot.controlPlane.paused;
  const etcdProblems = verdict.blockers.length > 0 ? describeBlockers(verdict.blockers) : "";
  const allVotersHealthy =
    verdict.observed && verdict.quorum.voters > 0 && verdict.quorum.healthyVoters === verdict.quorum.voters;
  const remediating = snapshot.machines
    .filter((machine) => machine.remediationRequested)
    .map((machine) => machine.name);
  const outdated = snapshot.machines
    .filter((machine) => machine.deleting === undefined && !isUpToDate(snapshot, machine))
    .map((machine) => machine.name);
  return [
    {
      type: CONDITION.Available,
      status: verdict.hasQuorum && counts.ready > 0 ? "True" : "False",
      reason: verdict.hasQuorum && counts.ready > 0 ? "Available" : verdict.observed ? "NoQuorum" : "EtcdNotObserved",
      message: verdict.observed
        ? `${verdict.quorum.healthyVoters} of ${verdict.quorum.voters} etcd voters healthy (quorum ${verdict.quorum.quorumSize}), ${counts.ready} of ${counts.replicas} Machines ready`
        : `etcd could not be read: ${snapshot.etcd.error ?? "unknown error"}`,
    },
    {
      type: CONDITION.EtcdClusterHealthy,
      status: !verdict.observed
        ? "Unknown"
        : allVotersHealthy &&
            verdict.members.every((member) => member.class !== "ghost") &&
            snapshot.etcd.alarms.length === 0
          ? "True"
          : "False",
      reason: !verdict.observed ? "EtcdNotObserved" : allVotersHealthy ? "Healthy" : "MembersUnhealthy",
      message: !verdict.observed
        ? (snapshot.etcd.error ?? "")
        : (unhealthySummary(verdict) ||
            etcdProblems ||
            `all ${verdict.quorum.voters} voters healthy, tolerates ${verdict.quorum.failuresTolerated} failure(s)`) +
          (snapshot.etcd.unconfirmed === undefined
            ? ""
            : `; the member list shown is one member's own view, the leader could not confirm it: ${snapshot.etcd.unconfirmed}`),
    },
    membersMappedCondition(verdict),
    {
      type: CONDITION.RollingOut,
      status: outdated.length > 0 ? "True" : "False",
      reason: outdated.length > 0 ? "RollingOut" : "NotRollingOut",
      // A rollout that waits says on what (a new Machine whose API server cannot start stops it there).
      message:
        outdated.length > 0
          ? `${outdated.length} Machine(s) to replace: ${outdated.join(", ")}${action.kind === "Wait" ? `; waiting: ${action.reason}` : ""}`
          : "",
    },
    {
      type: CONDITION.MachinesUpToDate,
      status: outdated.length > 0 ? "False" : "True",
      reason: outdated.length > 0 ? "NotUpToDate" : active === 0 ? "NoReplicas" : "UpToDate",
      message:
        outdated.length > 0 ? `${outdated.join(", ")} not up to date (each Machine's UpToDate condition says why)` : "",
    },
    {
      type: CONDITION.ScalingUp,
      status: active < desired ? "True" : "False",
      reason: active < desired ? "ScalingUp" : "NotScalingUp",
      message: active < desired ? `scaling up from ${active} to ${desired} replicas` : "",
    },
    {
      type: CONDITION.ScalingDown,
      status: active > desired ? "True" : "False",
      reason: active > desired ? "ScalingDown" : "NotScalingDown",
      message: active > desired ? `scaling down from ${active} to ${desired} replicas` : "",
    },
    {
      type: CONDITION.Remediating,
      status: remediating.length > 0 ? "True" : "False",
      reason: remediating.length > 0 ? "Remediating" : "NotRemediating",
      message:
        remediating.length > 0 ? `Machine(s) marked unhealthy by a MachineHealthCheck: ${remediating.join(", ")}` : "",
    },
    {
      type: CONDITION.Paused,
      status: paused ? "True" : "False",
      reason: paused ? "Paused" : "NotPaused",
      message: paused
        ? snapshot.cluster.paused
          ? "Cluster.spec.paused is true"
          : "the QuorumControlPlane has the cluster.x-k8s.io/paused annotation"
        : "",
    },
    machinesReadyCondition(inputs, counts),
    ownershipCondition(snapshot),
    deletingCondition(snapshot, verdict),
    {
      type: CONDITION.Reconciled,
      status: "True",
      reason: action.kind === "Wait" ? "Waiting" : "Acting",
      message: "",
    },
  ];
}

/**
 * MachinesReady: how many Machines serve, and what keeps the rest from counting. A refused workload kubeconfig has its
 * own reason: Node readiness cannot be checked until a user fixes the Secret (the message names it, the field and
 * the fix), while etcd is still reconciled. A workload API that should answer and does not holds back removals of
 * healthy voters (servingGate in plan.ts). A Machine Quorum cannot read is named with what is wrong with it.
 */
function machinesReadyCondition(inputs: StatusInputs, counts: { ready: number; replicas: number }): ConditionInput {
  const { snapshot, nodesError } = inputs;
  const malformed = snapshot.machines.filter((machine) => machine.malformed !== undefined);
  const rejected = inputs.nodesErrorReason === REASON_WORKLOAD_KUBECONFIG_REJECTED;
  const unreadable = nodesError !== undefined && snapshot.workload?.expected === true;
  const allReady = counts.ready === counts.replicas && counts.replicas > 0 && malformed.length === 0;
  const notes = [
    ...(nodesError !== undefined
      ? [
          `workload Nodes not readable: ${nodesError}${unreadable ? "; removals of healthy voters wait until the Machines that stay are seen Ready" : ""}`,
        ]
      : []),
    ...malformed.map(
      (machine) =>
        `Machine ${snapshot.controlPlane.namespace}/${machine.name} cannot be read (${machine.malformed}): it is counted but never rolled out or remediated on a guess; fix or delete it`,
    ),
  ];
  return {
    type: CONDITION.MachinesReady,
    status: allReady && !rejected && !unreadable ? "True" : "False",
    reason: rejected
      ? REASON_WORKLOAD_KUBECONFIG_REJECTED
      : malformed.length > 0
        ? "MachineMalformed"
        : unreadable
          ? "WorkloadAPIUnreadable"
          : allReady
            ? "Ready"
            : "NotReady",
    message: `${counts.ready} of ${counts.replicas} Machines ready${notes.length > 0 ? ` (${notes.join("; ")})` : ""}`,
  };
}

/** Deleting: whether members are still removed one at a time, or Machines go without theirs (src/core/deletion.ts). */
function deletingCondition(snapshot: Snapshot, verdict: Verdict): ConditionInput {
  const type = CONDITION.Deleting;
  if (!snapshot.controlPlane.deleting) return { type, status: "False", reason: "NotDeleting", message: "" };
  const machines = snapshot.machines.map((machine) => machine.name).join(", ");
  const forced = forcedDeletion(snapshot, verdict);
  if (forced) {
    const left = membersLeft(snapshot, verdict);
    return {
      type,
      status: "True",
      reason: "EtcdMembersNotRemoved",
      message:
        `${forced.why}: the pre-terminate hooks are released and the remaining Machines (${machines || "none"}) deleted ` +
        `without removing their etcd members${left.length > 0 ? `; left in etcd: ${left.join(", ")}` : ""}`,
    };
  }
  const timeout = snapshot.controlPlane.deletion.etcdMemberRemovalTimeoutMs;
  return {
    type,
    status: "True",
    reason: "RemovingEtcdMembers",
    message:
      `removing the etcd members of ${machines || "no Machine"} one at a time while etcd keeps quorum; from ` +
      `${new Date(memberRemovalDeadline(snapshot)).toISOString()} (spec.deletion.etcdMemberRemovalTimeout ${formatDuration(timeout)} ` +
      `after the deletion), or at once if etcd cannot be read or loses quorum, the remaining Machines go without removing their members`,
  };
}

/** OwnershipConflict: another control plane claims the Cluster or Machines labelled for this one (src/core/ownership.ts). */
function ownershipCondition(snapshot: Snapshot): ConditionInput {
  const conflict = ownershipConflict(snapshot);
  if (!conflict) return { type: CONDITION.OwnershipConflict, status: "False", reason: "SingleOwner", message: "" };
  return { type: CONDITION.OwnershipConflict, status: "True", reason: conflict.reason, message: conflict.message };
}

function readyCondition(verdict: Verdict, ready: number, snapshot: Snapshot): ConditionInput {
  const ok = verdict.hasQuorum && ready > 0;
  return {
    type: CONDITION.Ready,
    status: ok ? "True" : "False",
    reason: ok ? "Ready" : "NotReady",
    message: ok ? "" : (snapshot.etcd.error ?? "no etcd quorum of healthy voters yet"),
  };
}

function unhealthySummary(verdict: Verdict): string {
  return verdict.members
    .filter((member) => member.class === "unhealthy-voter" || member.class === "ghost")
    .map(
      (member) =>
        `${member.label} is ${member.class === "ghost" ? "a ghost (maps to no Machine)" : `unhealthy${member.error ? ` (${member.error})` : ""}`}`,
    )
    .join("; ");
}

/**
 * Members that map to no Machine, named with the Machines that could host them and the fix: a healthy one (unmapped)
 * blocks healthy removals and the deletion of those Machines until a user acts; a ghost is removed once that is safe.
 */
function membersMappedCondition(verdict: Verdict): ConditionInput {
  const type = CONDITION.EtcdMembersMapped;
  if (!verdict.observed) return { type, status: "Unknown", reason: "EtcdNotObserved", message: "" };
  const unmapped = verdict.members.filter((member) => member.class === "unmapped");
  if (unmapped.length > 0) {
    const message = unmapped
      .map(
        (member) =>
          `${member.label} (id ${member.id}) is healthy but maps to no Machine (${member.state}); ${unmappedFix(member)}`,
      )
      .join("; ");
    return {
      type,
      status: "False",
      reason: "UnmappedMember",
      message: `${message}; until then no healthy voter is removed and no Machine without a member is deleted`,
    };
  }
  const ghosts = verdict.members.filter((member) => member.class === "ghost");
  if (ghosts.length > 0)
    return {
      type,
      status: "False",
      reason: "GhostMember",
      message: `${ghosts.map((member) => `${member.label} (id ${member.id})`).join(", ")} maps to no Machine and is not healthy: removed once that keeps quorum`,
    };
  return { type, status: "True", reason: "AllMembersMapped", message: "" };
}

function nextAction(action: Action): NonNullable<QuorumControlPlaneStatus["nextAction"]> {
  const target = "machine" in action ? action.machine : "memberName" in action ? action.memberName : undefined;
  return {
    kind: action.kind,
    message: action.reason,
    ...(action.kind === "Wait" && action.blockedBy ? { blockedBy: action.blockedBy } : {}),
    ...(target ? { target } : {}),
  };
}

/**
 * status.etcd.lastObserved: when Quorum last saw the member list change (a member added, started, promoted or
 * removed). Writing the time of every read would rewrite an idle cluster's status on every poll; the time of the
 * last change says as much about staleness (status is rewritten on any change) and costs no write at idle.
 */
function membershipChanged(
  previous: QuorumControlPlaneStatus["etcd"],
  verdict: Verdict,
  now: string,
): { lastObserved?: string } {
  const kept = previous?.lastObserved !== undefined ? { lastObserved: previous.lastObserved } : {};
  if (!verdict.observed) return kept;
  const shape = (members: { id: string; name: string; learner: boolean }[]) =>
    members
      .map((member) => `${member.id}/${member.name}/${member.learner}`)
      .sort()
      .join(",");
  const changed = previous?.lastObserved === undefined || shape(previous.members ?? []) !== shape(verdict.members);
  return changed ? { lastObserved: now } : kept;
}

/** Adds the per-member memory (src/core/memory.ts) to each member's entry, as status keeps it. */
function withMemory(members: EtcdMemberStatus[], snapshot: Snapshot): EtcdMemberStatus[] {
  return members.map((entry) => {
    const member = snapshot.etcd.members.find((candidate) => candidate.id === entry.id);
    if (!member) return entry;
    const memory = persisted(member);
    return {
      ...entry,
      firstObserved: new Date(memory.firstObserved).toISOString(),
      ...(memory.startedObserved !== undefined
        ? { startedObserved: new Date(memory.startedObserved).toISOString() }
        : {}),
      ...(memory.removalRefused !== undefined ? { removalRefused: new Date(memory.removalRefused).toISOString() } : {}),
      ...(memory.downObserved !== undefined ? { downSince: new Date(memory.downObserved).toISOString() } : {}),
      ...(memory.learnerProgress
        ? {
            raftAppliedIndex: memory.learnerProgress.raftAppliedIndex,
            lastProgress: new Date(memory.learnerProgress.lastProgress).toISOString(),
          }
        : {}),
    };
  });
}

function compareVersions(a: string, b: string): number {
  const parse = (version: string) =>
    version
      .replace(/^v/, "")
      .split(/[.+-]/)
      .slice(0, 3)
      .map((part) => Number(part) || 0);
  const [x, y] = [parse(a), parse(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return 0;
}

export type { Condition };
