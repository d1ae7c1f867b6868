// The properties every schedule must keep, judged against the world's truth (not the controller's view of it).
// Safety rules are checked before each API call the controller makes and after its action; the liveness rules
// (converges, never stuck) are judged by run.ts over the steps after faults stop.
import { NODE_KUBEADM_LABEL_CONDITION, UP_TO_DATE_CONDITION } from "../../src/api/capi.ts";
import { MEMBER_REMOVED_ANNOTATION } from "../../src/api/constants.ts";
import { removalWindow } from "../../src/core/selection.ts";
import type { Snapshot } from "../../src/core/snapshot.ts";
import type { Call } from "./calls.ts";
import { apiServerBroken } from "./evolve.ts";
import { bindingsExpected, bootstrapTemplateRef, compareVersions, configVersion, kubeProxyVersion } from "./kubeadm.ts";
import { offeredAsLost } from "./operator.ts";
import {
  certificatesDue,
  certificatesDueAt,
  CLUSTER,
  ETCD_HEALTH_INTERVAL_MS,
  SIM_TIMERS,
  STEP_MS,
  findMachine,
  remediatedMachine,
  sameRemediation,
  youngConnections,
  findMember,
  foreignHookHeld,
  healthy,
  healthyVoterCount,
  liveMachines,
  networkStarting,
  nodeLabelled,
  nodeReady,
  quorumSize,
  voters,
  type SimMachine,
  type SimMember,
  type World,
  workloadReadable,
} from "./world.ts";

export type Rule =
  | "1 quorum kept"
  | "2 projected healthy majority"
  | "2 redundancy kept on scale-down"
  | "3 member removed before its machine"
  | "4 converges"
  | "5 never stuck"
  | "6 no removal refused that the controller counted open"
  | "7 one owner"
  | "8 replacement serves before the old voter leaves"
  | "9 failing replacements paced by retryPeriod"
  | "10 an upgrade upgrades"
  | "10 kube-proxy never ahead of an API server"
  | "11 a starting or briefly down Machine is not offered as lost"
  | "12 other pre-terminate hooks before the member (AfterDrain)"
  | "13 a hook is held for a join only while it can add a member"
  | "planner throws"
  | "reconcile throws";

export interface Finding {
  kind: "violation" | "stuck";
  rule: Rule;
  message: string;
}

/** Safety rules about one call, judged on the world just before the call runs. */
export function checkCall(world: World, snapshot: Snapshot, call: Call): Finding | undefined {
  const effect = call.effect;
  switch (effect.kind) {
    case "remove-member":
      return checkRemoval(world, snapshot, effect.memberId);
    case "delete-machine":
      return checkDelete(world, snapshot, effect.machine);
    case "set-hook":
      return effect.hook ? undefined : checkRelease(world, effect.machine);
    case "record-remediation":
      return checkRemediationPace(world, effect.machine);
    case "move-kube-proxy":
      return checkKubeProxySkew(world, effect.image);
    default:
      return undefined;
  }
}

/**
 * Rule 9: KCP's limits. A Machine created to replace a remediated one and remediated itself within minHealthyPeriod is
 * a retry: it comes no sooner than retryPeriod after the remediation it replaces, and not after maxRetry retries in a
 * row. Another try of the same Machine (after a crash) is the same remediation, and a Machine that fails on its own is
 * remediated at once. The memory must survive what drops status: a crash before the write, clusterctl move.
 */
function checkRemediationPace(world: World, name: string): Finding | undefined {
  const machine = remediatedMachine(world, name);
  if (!machine || sameRemediation(world, machine)) return undefined;
  const replaced = machine.replaces;
  if (!replaced) return undefined;
  const since = world.now - replaced.at;
  if (since >= SIM_TIMERS.remediationMinHealthyPeriodMs) return undefined;
  const message =
    since < SIM_TIMERS.remediationRetryPeriodMs
      ? `within retryPeriod ${SIM_TIMERS.remediationRetryPeriodMs / 1000}s`
      : replaced.retry >= SIM_TIMERS.remediationMaxRetry
        ? `after ${replaced.retry} retries (maxRetry ${SIM_TIMERS.remediationMaxRetry})`
        : undefined;
  if (message === undefined) return undefined;
  return {
    kind: "violation",
    rule: "9 failing replacements paced by retryPeriod",
    message: `remediates machine ${name}, the replacement of machine ${replaced.machine} remediated ${since / 1000}s ago, ${message}`,
  };
}

/** Rule 1: the controller's own action never takes the voters from a healthy quorum to none. */
export function checkQuorumKept(world: World, hadQuorum: boolean, actionText: string): Finding | undefined {
  const count = voters(world).length;
  const healthyCount = healthyVoterCount(world);
  if (!hadQuorum || (count > 0 && healthyCount >= quorumSize(count))) return undefined;
  return {
    kind: "violation",
    rule: "1 quorum kept",
    message: `${actionText} left ${healthyCount} healthy of ${count} voters (quorum ${quorumSize(count)})`,
  };
}

function checkRemoval(world: World, snapshot: Snapshot, memberId: string): Finding | undefined {
  const member = findMember(world, memberId);
  if (!member) return undefined;
  const machine = member.machine === undefined ? undefined : findMachine(world, member.machine);
  if (
    machine?.deleting !== undefined &&
    machine.memberId === member.id &&
    snapshot.controlPlane.memberRemoval === "AfterDrain" &&
    foreignHookHeld(world, machine)
  ) {
    return {
      kind: "violation",
      rule: "12 other pre-terminate hooks before the member (AfterDrain)",
      message: `removed member ${member.name || "(unstarted)"} ${member.id} of deleting machine ${machine.name} while another controller's pre-terminate hook is still on it`,
    };
  }
  if (member.learner) return undefined;
  const projected = voters(world).length - 1;
  const projectedHealthy = healthyVoterCount(world) - (healthy(world, member) ? 1 : 0);
  const who = `${member.name || "(unstarted)"} ${member.id}`;
  if (projected === 0 || projectedHealthy < quorumSize(projected)) {
    return {
      kind: "violation",
      rule: "2 projected healthy majority",
      message: `removed voter ${who} (${healthy(world, member) ? "healthy" : "unhealthy"}) leaving ${projectedHealthy} healthy of ${projected} voters (quorum ${quorumSize(projected)})`,
    };
  }
  // Rule 6 (after rule 2's majority: a removal that would cost quorum is reported as that, refused or not): etcd's
  // 5 s window is known (removalWindow in src/core/selection.ts); sending a removal it refuses means the controller
  // misjudged which connections are old enough. The controller may ask once before its own count says open, when etcd
  // may have opened the window already (removalMayBeOpen: a member is connected before it first answers); being
  // refused when its count said open is the misjudgment. A member
  // that went down and came back without any status write seeing it (the controller was down, or crashed) restarted
  // its connections where the controller could not see: the real controller defers that refusal and asks again,
  // which is not a violation.
  const young = youngConnections(world, member);
  // The leader is one end of every connection: its own unseen bounce makes them all young where nobody could see.
  const leader = world.leaderId === undefined ? undefined : findMember(world, world.leaderId);
  const leaderBouncedUnseen = leader?.unseenBounce === true && world.now - leader.activeSince < ETCD_HEALTH_INTERVAL_MS;
  if (young && !leaderBouncedUnseen && young.every((voter) => !voter.unseenBounce)) {
    // Asked early on purpose: its own count had not ended (the simulator reconciles once a step, 10 s, so a second
    // early ask within one window cannot happen here; the unit tests cover the refusal memory).
    if (removalWindow(snapshot, member.id) === undefined)
      return {
        kind: "violation",
        rule: "6 no removal refused that the controller counted open",
        message: `asked etcd to remove voter ${who}, which it refuses now ("unhealthy cluster"): too few voters connected to the leader for 5 s, and the controller's own count said open`,
      };
  }
  return checkRedundancy(world, snapshot, member, who) ?? checkServing(world, snapshot, member, who);
}

/** The planner chose this healthy voter's Machine to leave: nobody (user, MachineHealthCheck) asked for it. */
function chosenByPlanner(world: World, snapshot: Snapshot, member: SimMember): SimMachine | undefined {
  if (!healthy(world, member)) return undefined;
  const machine = member.machine === undefined ? undefined : findMachine(world, member.machine);
  if (!machine || machine.memberId !== member.id) return undefined;
  if (machine.deleting !== undefined || machine.remediationRequested || machine.failed) return undefined;
  // Asked as far as the controller could tell: a lagging cache may still show a request the world has dropped.
  const seen = snapshot.machines.find((candidate) => candidate.name === machine.name);
  if (seen && (seen.deleting !== undefined || seen.remediationRequested || seen.failed)) return undefined;
  return machine;
}

/**
 * Rule 11: status.nextAction never offers the way past a lost Machine ("if machine <name> is lost, delete it") for a
 * Machine that is only starting or only briefly down. Starting: its Node registered and NotReady because its network
 * plugin has not started yet, while the Machine runs, its member is up and its kubelet posts; every join goes through
 * that. Briefly down: its member stopped answering less than machineLostAfter ago (a restart or a reboot) and its Node
 * has not been NotReady that long either. A user who follows the fix there deletes a Machine that was coming back.
 * Judged on the status a reconcile just wrote.
 */
export function checkLostMachineOffers(world: World): Finding | undefined {
  const violation = (name: string, but: string): Finding => ({
    kind: "violation",
    rule: "11 a starting or briefly down Machine is not offered as lost",
    message: `status.nextAction offers to delete machine ${name} if lost, but ${but}: ${world.status?.nextAction?.message}`,
  });
  for (const name of offeredAsLost(world)) {
    const machine = findMachine(world, name);
    if (!machine) continue;
    if (networkStarting(world, machine))
      return violation(
        name,
        `its Node is only starting (network plugin from step ${machine.networkReadyAt}, member up)`,
      );
    const member = machine.memberId === undefined ? undefined : findMember(world, machine.memberId);
    const downFor = member?.downSince === undefined ? undefined : world.now - member.downSince;
    const notReadyFor = machine.nodeReadiness?.ready === false ? world.now - machine.nodeReadiness.since : 0;
    const lostAfter = SIM_TIMERS.machineLostAfterMs;
    if (downFor !== undefined && downFor < lostAfter && notReadyFor < lostAfter)
      return violation(
        name,
        `its member went down only ${downFor / 1000}s ago (machineLostAfter ${lostAfter / 1000}s)`,
      );
  }
  return undefined;
}

/**
 * Rule 13: status.nextAction holds a deleting Machine's pre-terminate hook for its join ("is being deleted while its
 * join may still add its etcd member") only while that join could still add one: never for a Machine whose join added
 * its member, since removed (world truth). Such a hold lasts the whole memberJoinGracePeriod for nothing; the kubeadm
 * e2e scenario missed its limit on one (a half-joined Machine, its Node never labelled, whose member Quorum removed). A
 * member still in etcd that Quorum cannot map yet (its Machine shows no address) is rightly held for: released, the
 * VM goes and the member never starts. So is one Quorum removed as a ghost (it mapped to no Machine): only a removal
 * recorded on the Machine (its quorum-removed-etcd-member annotation) tells the controller the join got that far
 * (seed 1955648186: a learner of a Machine with no address, removed as a ghost once that Machine died). Judged on the
 * status a reconcile just wrote from a Machine list that was not stale (the controller's expectations keep a real one
 * from planning on a cache behind its own annotation write).
 */
export function checkJoinHolds(world: World): Finding | undefined {
  const message = world.status?.nextAction?.message ?? "";
  for (const [, name] of message.matchAll(
    /machine (\S+) is being deleted while its join may still add its etcd member/g,
  )) {
    const machine = findMachine(world, name);
    if (machine?.memberId === undefined || findMember(world, machine.memberId)) continue;
    if (machine.annotations[MEMBER_REMOVED_ANNOTATION] !== machine.memberId) continue;
    return {
      kind: "violation",
      rule: "13 a hook is held for a join only while it can add a member",
      message: `status.nextAction holds the hook of machine ${name} for its join, but its join added member ${machine.memberId}, since removed: ${message}`,
    };
  }
  return undefined;
}

/**
 * Rule 8: a healthy voter the planner chose to remove leaves only while the workload API can be read and every other
 * Machine holding a started voter has a Ready Node (issue 13: a rollout went on with the workload API unreadable, so
 * nothing proved the new Machines' API servers serve), unless its own Machine's API server cannot start: its leaving
 * takes no serving API server away, and holding it while another such Machine stays wedged rollouts that replace
 * several of them (sim seeds 1920616473, 1039215307, 2026-12-05).
 */
function checkServing(world: World, snapshot: Snapshot, member: SimMember, who: string): Finding | undefined {
  const machine = chosenByPlanner(world, snapshot, member);
  if (!machine) return undefined;
  const rule = "8 replacement serves before the old voter leaves";
  if (!workloadReadable(world))
    return {
      kind: "violation",
      rule,
      message: `removed healthy voter ${who} of machine ${machine.name} while the workload API could not be read`,
    };
  if (apiServerBroken(world, machine)) return undefined;
  const notServing = liveMachines(world).filter((other) => {
    if (other === machine || other.memberId === undefined) return false;
    const voter = findMember(world, other.memberId);
    return voter !== undefined && !voter.learner && voter.started && !nodeReady(world, other);
  });
  if (notServing.length === 0) return undefined;
  return {
    kind: "violation",
    rule,
    message: `removed healthy voter ${who} of machine ${machine.name} while ${notServing.map((other) => other.name).join(", ")} had no Ready Node`,
  };
}

/**
 * Rule 2, second half: a healthy voter that leaves because the planner chose it (scale-down or rollout; not
 * because a user or a MachineHealthCheck asked for its Machine) never costs failure tolerance the spec promises:
 * with a surge none, with maxSurge 0 one. Picking a random victim instead of finishing the Machine whose member
 * is already gone takes a 3-replica control plane to 2 voters mid-rollout; this is the rule that notices.
 */
function checkRedundancy(world: World, snapshot: Snapshot, member: SimMember, who: string): Finding | undefined {
  const machine = chosenByPlanner(world, snapshot, member);
  if (!machine) return undefined;
  const spec = snapshot.controlPlane;
  const count = voters(world).length;
  const healthyCount = healthyVoterCount(world);
  const before = healthyCount - quorumSize(count);
  const after = healthyCount - 1 - quorumSize(count - 1);
  const surge = spec.maxSurge === 1 || spec.replicas < 3;
  const promised = spec.replicas - quorumSize(spec.replicas) - (surge ? 0 : 1);
  const floor = Math.min(before, promised);
  if (after >= floor) return undefined;
  return {
    kind: "violation",
    rule: "2 redundancy kept on scale-down",
    message: `removed healthy voter ${who} of machine ${machine.name}, which nobody asked to delete: failures tolerated ${before} -> ${after}, below ${floor} (${spec.replicas} replicas, maxSurge ${spec.maxSurge})`,
  };
}

function checkDelete(world: World, snapshot: Snapshot, machineName: string): Finding | undefined {
  if (snapshot.controlPlane.memberRemoval !== "BeforeDelete") return undefined;
  const machine = findMachine(world, machineName);
  if (!machine || machine.deleting !== undefined || machine.memberId === undefined) return undefined;
  const member = findMember(world, machine.memberId);
  if (!member || member.learner || !healthy(world, member)) return undefined;
  return {
    kind: "violation",
    rule: "3 member removed before its machine",
    message: `deleted machine ${machineName} (memberRemoval BeforeDelete) while its member ${member.name} ${member.id} is a healthy voter`,
  };
}

function checkRelease(world: World, machineName: string): Finding | undefined {
  const machine = findMachine(world, machineName);
  if (!machine || machine.memberId === undefined) return undefined;
  const member = findMember(world, machine.memberId);
  if (!member) return undefined;
  return {
    kind: "violation",
    rule: "3 member removed before its machine",
    message: `released the pre-terminate hook of machine ${machineName} while its member ${member.name || "(unstarted)"} ${member.id} is still in the cluster`,
  };
}

/** The spec is reached: the Machines, members and templates are (machinesAtSpec), and so is kubeadm (rule 10). */
export function converged(world: World): boolean {
  return machinesAtSpec(world) && kubeadmShortOfSpec(world) === undefined;
}

/**
 * replicas Machines at the spec, each with a Node and a healthy voter, nothing else; the templates the spec references
 * owned by the Cluster.
 */
export function machinesAtSpec(world: World): boolean {
  const spec = world.spec;
  if (spec.paused || spec.clusterPaused || world.leaderId === undefined) return false;
  if (world.machines.length !== spec.replicas || world.members.length !== spec.replicas) return false;
  for (const machine of world.machines) {
    if (
      machine.deleting !== undefined ||
      machine.remediationRequested ||
      machine.ownerRemediatedPending === true ||
      machine.phase !== "running" ||
      !machine.nodeRegistered ||
      // A kubelet lost for good is the MachineHealthCheck's to find (then Quorum's to replace), where it watches Node
      // readiness; where none does, a NotReady Node is not etcd's business and nothing replaces it.
      (machine.kubeletLost === true && !world.traits.noNodeReadyCheck)
    )
      return false;
    if (machine.version !== spec.version || machine.templateHash !== spec.templateHash) return false;
    // spec.rollout.before.certificatesExpiryDays: a Machine whose certificates expire within the notice is outdated.
    if (certificatesDue(world, machine)) return false;
    // spec.machineTemplate.metadata reaches every Machine in place (issue 15, item 2).
    if (JSON.stringify(sorted(machine.labels)) !== JSON.stringify(sorted(spec.machineLabels))) return false;
    // Each Machine says it is up to date, as the v1beta2 contract asks of its owner (issue 15, item 3).
    if (
      !machine.ownedConditions?.some(
        (condition) => condition.type === UP_TO_DATE_CONDITION && condition.status === "True",
      )
    )
      return false;
    // kubeadm worlds: every join labelled its Node, and the Machine says so (NodeKubeadmLabelSet True).
    if (
      world.traits.kubeadm &&
      !(
        nodeLabelled(world, machine) &&
        machine.ownedConditions?.some(
          (condition) => condition.type === NODE_KUBEADM_LABEL_CONDITION && condition.status === "True",
        )
      )
    )
      return false;
    const member = machine.memberId === undefined ? undefined : findMember(world, machine.memberId);
    if (!member || member.learner || !member.up) return false;
  }
  // clusterctl move carries only what the Cluster owns (issue 15, item 4): the spec's templates carry its reference.
  const bootstrap = bootstrapTemplateRef(world.traits.kubeadm);
  const owned = [`SimMachineTemplate/infra-${spec.templateHash}`, `${bootstrap.kind}/${bootstrap.name}`].every(
    (template) =>
      world.templateOwners.get(template)?.some((owner) => owner.kind === "Cluster" && owner.name === CLUSTER),
  );
  return owned;
}

/**
 * The Machines whose certificates expire within spec.rollout.before.certificatesExpiryDays, by the world's clock and
 * their true expiry (rule 4 counts them short of the spec); undefined when there are none.
 */
export function certificatesShortOfSpec(world: World): string | undefined {
  const due = world.machines.filter((machine) => certificatesDue(world, machine));
  if (due.length === 0) return undefined;
  const days = world.spec.certificatesExpiryDays;
  return `machine ${due.map((machine) => `${machine.name} (certificates expire ${new Date(machine.certificatesExpiry ?? 0).toISOString()})`).join(", ")} within certificatesExpiryDays ${days} of ${new Date(world.now).toISOString()}`;
}

/**
 * Whether a Machine's certificates fall within the notice in the next `steps` steps: a schedule at the spec does not
 * end before then, so that the rollout they need is part of it.
 */
export function certificatesDueWithin(world: World, steps: number): boolean {
  const horizon = world.now + steps * STEP_MS;
  return world.machines.some((machine) => {
    const dueAt = certificatesDueAt(world, machine);
    return dueAt !== undefined && dueAt >= world.now && dueAt < horizon;
  });
}

/**
 * Rule 10 (kubeadm worlds), what reaching the spec means beyond the Machines: every Machine's static pods run
 * spec.version (a rollout whose joiners read a stale kubeadm-config replaces every Machine and upgrades nothing),
 * kubeadm-config says spec.version (the next join reads it), kube-proxy's image is spec.version, and the
 * ClusterRoleBindings kubeadm of spec.version expects exist. Undefined when all hold, or in a generic world.
 */
export function kubeadmShortOfSpec(world: World): string | undefined {
  if (!world.kubeadm) return undefined;
  return staticPodsShortOfSpec(world) ?? kubeadmObjectsShortOfSpec(world);
}

/**
 * The Machines whose static pods do not run spec.version. Nothing changes a Machine's static pods after its join: once
 * the Machines are at the spec, no later step mends this, so rule 10 judges it within KUBEADM_BOUND (run.ts).
 */
export function staticPodsShortOfSpec(world: World): string | undefined {
  if (!world.kubeadm) return undefined;
  const version = world.spec.version;
  const behind = world.machines.filter((machine) => machine.staticPodVersion !== version);
  if (behind.length === 0) return undefined;
  return `machine ${behind.map((machine) => `${machine.name} (spec.version ${machine.version}) runs static pods of ${machine.staticPodVersion ?? "(none)"}`).join(", ")}, not ${version}`;
}

/** kubeadm-config, kube-proxy and the bindings short of the spec: judged as convergence (rules 4 and 5). */
function kubeadmObjectsShortOfSpec(world: World): string | undefined {
  const objects = world.kubeadm;
  if (!objects) return undefined;
  const version = world.spec.version;
  const config = configVersion(world);
  if (config !== version) return `kubeadm-config says kubernetesVersion ${config ?? "(no document)"}, not ${version}`;
  const proxy = kubeProxyVersion(world);
  if (proxy !== version) return `kube-proxy runs ${objects.kubeProxyImage ?? "(no DaemonSet)"}, not ${version}`;
  const missing = bindingsExpected(version).filter((name) => !objects.bindings.has(name));
  if (missing.length > 0)
    return `ClusterRoleBinding ${missing.join(", ")}, which kubeadm ${version} expects, is missing`;
  return undefined;
}

/**
 * Rule 10, skew: kube-proxy's image never names a version newer than an API server that still runs (the version
 * skew policy: kube-proxy must not be newer than kube-apiserver). Every Machine not yet gone runs its static pods.
 */
function checkKubeProxySkew(world: World, image: string): Finding | undefined {
  const colon = image.lastIndexOf(":");
  const version = colon > image.lastIndexOf("/") ? image.slice(colon + 1) : "";
  const older = world.machines.filter(
    (machine) =>
      machine.staticPodVersion !== undefined &&
      machine.phase !== "broken" &&
      compareVersions(version, machine.staticPodVersion) > 0,
  );
  if (older.length === 0) return undefined;
  return {
    kind: "violation",
    rule: "10 kube-proxy never ahead of an API server",
    message: `moved kube-proxy to ${image} while ${older.map((machine) => `${machine.name}${machine.deleting !== undefined ? " (deleting)" : ""} runs an API server of ${machine.staticPodVersion}`).join(", ")}`,
  };
}

function sorted(values: Record<string, string>): [string, string][] {
  return Object.entries(values).sort(([a], [b]) => a.localeCompare(b));
}

/** What counts as progress: any change to Machines, members or the leader (raft indices do not count). */
export function fingerprint(world: World): string {
  const machines = world.machines
    .map(
      (m) =>
        `${m.name}:${m.phase}:${m.deleting ?? ""}:${m.hook}:${m.nodeRegistered}:${m.remediationRequested}:${m.ownerRemediatedPending === true}:${JSON.stringify(m.labels)}:${JSON.stringify(m.ownedConditions ?? [])}`,
    )
    .join(",");
  const members = world.members.map((m) => `${m.id}:${m.name}:${m.learner}:${m.up}`).join(",");
  const kubeadm = world.kubeadm
    ? `|${world.kubeadm.resourceVersion}:${[...world.kubeadm.bindings].join(",")}:${world.machines.map((m) => m.staticPodVersion ?? "").join(",")}`
    : "";
  return `${machines}|${members}|${world.leaderId ?? ""}|${world.spec.generation}${kubeadm}`;
}
