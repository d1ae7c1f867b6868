// One line per step for --trace: what broke, what the planner decided and why, which calls ran (and where the
// controller crashed), and the world afterwards, compact enough to read a whole schedule.
import type { Action } from "../../src/core/actions.ts";
import { configVersion, kubeProxyVersion } from "./kubeadm.ts";
import { findMember, foreignHookHeld, type SimMachine, type SimMember, type World } from "./world.ts";

export function describeSetup(seed: number, world: World): string {
  const spec = world.spec;
  return [
    `schedule seed ${seed}: replicas ${spec.replicas}, ${spec.version}, maxSurge ${spec.maxSurge}, memberRemoval ${spec.memberRemoval}`,
    `join ${world.joinMode}, node names ${world.nodeNaming}, failure domains [${world.failureDomains.join(",")}], faults until step ${world.faultsUntil}${world.traits.nodeRefLag ? ", nodeRefs lag" : ""}${world.traits.addressLag ? ", addresses lag" : ""}${world.traits.racingOutage ? ", voters go down between plan and removal" : ""}${world.traits.kubeadm ? ", kubeadm" : ""}${world.traits.longName ? `, control plane ${world.controlPlaneName}` : ""}${world.traits.refusedNodes ? ", kubelet registrations refused" : ""}${world.traits.foreignHooks ? ", another controller's pre-terminate hooks" : ""}${world.traits.noStartupTimeout ? ", no node startup timeout" : ""}${spec.certificatesExpiryDays !== undefined ? `, certificatesExpiryDays ${spec.certificatesExpiryDays}` : ""}`,
    `start: ${describeWorld(world)}`,
  ].join("\n");
}

export function describeAction(action: Action): string {
  const { kind, reason } = action;
  switch (action.kind) {
    case "CreateMachine":
      return `${kind}(${action.failureDomain ?? "-"}): ${reason}`;
    case "PromoteLearner":
    case "RemoveMember":
    case "RemoveGhost":
      return `${kind}(${action.memberName || "(unstarted)"} ${action.memberId}): ${reason}`;
    case "ForwardLeadership":
      return `${kind}(${action.fromMemberId} -> ${action.toMemberName}): ${reason}`;
    case "DeleteMachine":
    case "ReleaseHook":
    case "AddHook":
    case "Remediate":
      return `${kind}(${action.machine}): ${reason}`;
    case "PrepareWorkload":
      return `${kind}(${action.step}): ${reason}`;
    case "Wait":
      return `Wait: ${reason}${action.blockedBy ? ` [blocked by ${action.blockedBy}]` : ""}`;
  }
}

export function describeWorld(world: World): string {
  const machines = world.machines.map((machine) => describeMachine(world, machine)).join(" ");
  const members = world.members.map((member) => describeMember(world, member)).join(" ");
  const spec = world.spec;
  const paused = spec.paused || spec.clusterPaused ? " PAUSED" : "";
  return `spec ${spec.replicas}x${spec.version}/${spec.templateHash} surge${spec.maxSurge} ${spec.memberRemoval}${paused} | machines ${machines || "-"} | members ${members || "-"}${describeKubeadm(world)}`;
}

/** A kubeadm world's objects: kubeadm-config's version, kube-proxy's tag, the bindings. */
function describeKubeadm(world: World): string {
  const objects = world.kubeadm;
  if (!objects) return "";
  if (objects.clusterConfiguration === undefined)
    return ` | kubeadm: not uploaded${objects.uploadAt !== undefined ? ` (init uploads at step ${objects.uploadAt})` : ""}`;
  return ` | kubeadm-config ${configVersion(world) ?? "?"}, kube-proxy ${kubeProxyVersion(world) ?? "?"}, bindings [${[...objects.bindings].join(",")}]`;
}

function describeMachine(world: World, machine: SimMachine): string {
  const flags = [
    machine.phase,
    machine.version !== world.spec.version || machine.templateHash !== world.spec.templateHash ? "outdated" : "",
    machine.nodeRegistered ? "node" : "",
    machine.nodeRegistered && world.step < (machine.nodeRefAt ?? 0) ? "no-nodeRef" : "",
    machine.joinStopped ? "half-joined" : "",
    machine.nodeRefused ? "node-refused" : "",
    world.step < (machine.addressAt ?? 0)
      ? machine.addressesBefore === "none"
        ? "no-address"
        : "external-address-only"
      : "",
    machine.deleting !== undefined ? "DELETING" : "",
    machine.hook ? "" : "no-hook",
    machine.deleting !== undefined && foreignHookHeld(world, machine) ? "other-hook" : "",
    machine.remediationRequested ? "MHC" : "",
    machine.failed ? "failed" : "",
    machine.markedForDeletion ? "marked" : "",
    machine.staticPodVersion !== undefined && machine.staticPodVersion !== machine.version
      ? `pods-${machine.staticPodVersion}`
      : "",
    machine.memberId !== undefined && !findMember(world, machine.memberId) ? "member-gone" : "",
  ].filter((flag) => flag !== "");
  return `${machine.name}[${flags.join(",")}]`;
}

function describeMember(world: World, member: SimMember): string {
  const role = member.learner ? "learner" : "voter";
  const state = member.up
    ? "up"
    : member.downUntil !== undefined
      ? `down<${member.downUntil}`
      : member.started
        ? "dead"
        : "unstarted";
  const leader = world.leaderId === member.id ? ",LEADER" : "";
  const owner = member.machine === undefined ? ",stray" : member.name === member.machine ? "" : `,of ${member.machine}`;
  return `${member.name || "?"}:${member.id.slice(-4)}(${role},${state}${leader}${owner})`;
}
