// The planners the simulator can drive: the real plan(), and the seed bugs of issues 2 and 12, each planted through
// makePlanner's parts (never by editing the real planner) so the simulator can prove it notices them.
import { assess, mapMembersToMachines, type Verdict } from "../../src/core/assess.ts";
import { makePlanner, plan } from "../../src/core/plan.ts";
import { activeMachines } from "../../src/core/selection.ts";
import type { Snapshot } from "../../src/core/snapshot.ts";
import type { PlannerFactory } from "./run.ts";

/** (a) The k3s ghost bug: members that map to no Machine are left out before the health check counts voters. */
const ghostBlind: PlannerFactory = () =>
  makePlanner({
    assess: (snapshot, op) => {
      const mapped = mapMembersToMachines(snapshot);
      const members = snapshot.etcd.members.filter((member) => mapped.has(member.id));
      return assess({ ...snapshot, etcd: { ...snapshot.etcd, members } }, op);
    },
  });

/**
 * (b) The KCP stuck-after-crash bug: the check demands as many Machines as members whatever the operation, so
 * after a crash between removing a member and deleting its Machine it refuses the very step that would finish.
 */
const oneToOne: PlannerFactory = () =>
  makePlanner({
    assess: (snapshot, op): Verdict => {
      const verdict = assess(snapshot, op);
      const machines = snapshot.machines.length;
      const members = snapshot.etcd.members.length;
      if (machines === members) return verdict;
      const blocker = { subject: "etcd", why: `${machines} control plane Machines, but ${members} etcd members` };
      return { ...verdict, allowed: false, blockers: [...verdict.blockers, blocker] };
    },
  });

/** (c) Scale-down picks any Machine at random instead of finishing the one whose member is already gone. */
const randomScaleDown: PlannerFactory = (rng) =>
  makePlanner({
    selectForScaleDown: (snapshot: Snapshot) => {
      const candidates = activeMachines(snapshot);
      if (candidates.length === 0) return undefined;
      return { machine: rng.pick(candidates).name, why: "picked at random" };
    },
  });

/**
 * (d) Issue 12, bug 2: members are mapped to Machines by name alone, and same-name claimants by member id, so a stale
 * member with a live Machine's name (at an address no Machine has) takes the Machine and the live member turns ghost.
 */
function mapByNameOnly(snapshot: Snapshot): Map<string, string> {
  const result = new Map<string, string>();
  const byId = [...snapshot.etcd.members].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const machine of snapshot.machines) {
    const claimant = byId.find(
      (member) =>
        member.name !== "" &&
        (member.name === machine.memberName || member.name === machine.nodeName || member.name === machine.name) &&
        !result.has(member.id),
    );
    if (claimant) result.set(claimant.id, machine.name);
  }
  return result;
}
const nameOnlyMapping: PlannerFactory = () =>
  makePlanner({ assess: (snapshot, op) => assess(snapshot, op, mapByNameOnly) });

/**
 * (e) Issue 12, bug 1: deleting, remediating or releasing a Machine is judged as if members that map to no Machine
 * (and are not ghosts) did not exist, so the Machine of a live member Quorum cannot identify yet is taken away.
 */
const remediateUnmapped: PlannerFactory = () =>
  makePlanner({
    assess: (snapshot, op) => {
      if (op.kind !== "DeleteMachine" && op.kind !== "ReleaseHook") return assess(snapshot, op);
      const unexplained = new Set(
        assess(snapshot, { kind: "Observe" })
          .members.filter((member) => member.machine === undefined && member.class !== "ghost")
          .map((member) => member.id),
      );
      const members = snapshot.etcd.members.filter((member) => !unexplained.has(member.id));
      return assess({ ...snapshot, etcd: { ...snapshot.etcd, members } }, op);
    },
  });

/** (f) Issue 12, bug 3: scale-down takes the oldest Machine whatever its member's health, and waits on a dead voter. */
const oldestFirstScaleDown: PlannerFactory = () =>
  makePlanner({
    selectForScaleDown: (snapshot: Snapshot) => {
      const oldest = [...activeMachines(snapshot)].sort(
        (a, b) => a.created - b.created || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
      )[0];
      return oldest ? { machine: oldest.name, why: "it is the oldest" } : undefined;
    },
  });

/** (g) Issue 12, bug 4: the Cluster's controlPlaneRef and other owners' Machines are never checked (a copy acts too). */
const labelOnlyOwner: PlannerFactory = () => makePlanner({ ownershipConflict: () => undefined });

/** Issue 13: a rollout went on with the workload API unreadable; nothing proved the new Machines serve. */
const servingBlind: PlannerFactory = () => makePlanner({ notServing: () => ({ machines: [] }) });

/**
 * Issue 17: the planner never looks at the bootstrap flavour's workload steps (as before the kubeadm flavour), so a
 * kubeadm rollout joins new-version Machines that render their static pods from a stale kubeadm-config, and kube-proxy
 * and kubeadm's RBAC never follow the version. The snapshot loses its workloadSteps before the real planner reads it.
 */
const skipWorkloadSteps: PlannerFactory = () => {
  const real = makePlanner();
  return (snapshot) => {
    const { workloadSteps: _ignored, ...withoutSteps } = snapshot;
    return real(withoutSteps);
  };
};

/**
 * kube-proxy's image moves before the first new-version Machine joins, like kubeadm-config: the real planner with the
 * kube-proxy step shown as a BeforeCreate one. kube-proxy is then newer than every API server (version skew policy).
 */
const proxyFirst: PlannerFactory = () => {
  const real = makePlanner();
  return (snapshot) => {
    const observed = snapshot.workloadSteps;
    if (!observed) return real(snapshot);
    const steps = observed.steps.map((step) =>
      step.name === "kube-proxy" ? { ...step, when: "BeforeCreate" as const } : step,
    );
    return real({ ...snapshot, workloadSteps: { ...observed, steps } });
  };
};

/**
 * spec.rollout.before.certificatesExpiryDays is never seen (as if the snapshot builder dropped it): Machines whose
 * certificates are about to expire stay until their API servers stop serving (the outage KCP's rule prevents).
 */
const certificatesBlind: PlannerFactory = () => {
  const real = makePlanner();
  return (snapshot) => {
    const { certificatesExpiryDays: _ignored, ...controlPlane } = snapshot.controlPlane;
    return real({ ...snapshot, controlPlane });
  };
};

/**
 * A voter that stays down is only counted: the Wait names neither its Machine nor the way out (as before 2026-12-05),
 * so where no MachineHealthCheck watches Node readiness a lost VM holds the cluster short of its spec forever.
 */
const silentDownVoter: PlannerFactory = () => {
  const real = makePlanner();
  return (snapshot) => {
    const decision = real(snapshot);
    if (decision.action.kind !== "Wait") return decision;
    const reason = decision.action.reason.replace(/; if machine \S+ is lost, delete it[^;]*/g, "");
    return { ...decision, action: { ...decision.action, reason } };
  };
};

/**
 * Since when a Node has been NotReady is never seen (as if the adapter dropped the Ready condition's
 * lastTransitionTime, as before 2026-12-06): a Wait on a Node that is only starting offers the way past a lost Machine.
 */
const lostAtOnce: PlannerFactory = () => {
  const real = makePlanner();
  return (snapshot) => real({ ...snapshot, nodes: snapshot.nodes.map(({ notReadySince: _ignored, ...node }) => node) });
};

/**
 * Since when a member has not answered is never seen (as before 2026-12-06, when status kept no downSince): a voter
 * down for one step of a restart is offered as lost at once.
 */
const downAtOnce: PlannerFactory = () => {
  const real = makePlanner();
  return (snapshot) =>
    real({
      ...snapshot,
      etcd: { ...snapshot.etcd, members: snapshot.etcd.members.map(({ downObserved: _ignored, ...member }) => member) },
    });
};

/**
 * A Machine's remediation-for record is never read (as before 2026-12-06, when the limits counted from the last
 * remediation of any Machine by name): a replacement that fails too is remediated again at once, retryPeriod ignored.
 */
const lineageBlind: PlannerFactory = () => {
  const real = makePlanner();
  return (snapshot) =>
    real({ ...snapshot, machines: snapshot.machines.map(({ remediationFor: _ignored, ...machine }) => machine) });
};

/**
 * The record of a member Quorum removed is never read (as before 2026-12-07): a deleting Machine whose member is gone
 * is judged by its Node alone, so a half-joined kubeadm Machine (its Node never labelled) has its hook held for its
 * join through the whole memberJoinGracePeriod.
 */
const removalBlind: PlannerFactory = () => {
  const real = makePlanner();
  return (snapshot) =>
    real({ ...snapshot, machines: snapshot.machines.map(({ memberRemoved: _ignored, ...machine }) => machine) });
};

export const PLANNERS = {
  real: () => plan,
  "ghost-blind": ghostBlind,
  "one-to-one": oneToOne,
  "random-scale-down": randomScaleDown,
  "name-only-mapping": nameOnlyMapping,
  "remediate-unmapped": remediateUnmapped,
  "oldest-first-scale-down": oldestFirstScaleDown,
  "label-only-owner": labelOnlyOwner,
  "serving-blind": servingBlind,
  "skip-workload-steps": skipWorkloadSteps,
  "proxy-first": proxyFirst,
  "certificates-blind": certificatesBlind,
  "silent-down-voter": silentDownVoter,
  "lost-at-once": lostAtOnce,
  "down-at-once": downAtOnce,
  "lineage-blind": lineageBlind,
  "removal-blind": removalBlind,
} satisfies Record<string, PlannerFactory>;

export type PlannerName = keyof typeof PLANNERS;
