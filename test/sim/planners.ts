// The planners the simulator can drive: the real plan(), and the seed bugs of issue 2, each planted through
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

export const PLANNERS = {
  real: () => plan,
  "ghost-blind": ghostBlind,
  "one-to-one": oneToOne,
  "random-scale-down": randomScaleDown,
} satisfies Record<string, PlannerFactory>;

export type PlannerName = keyof typeof PLANNERS;
