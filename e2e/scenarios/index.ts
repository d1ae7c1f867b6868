// Every scenario `make e2e` runs, in order, each on its own fresh stack, and those it runs only by name.
import { clusterClass } from "./clusterclass.ts";
import { clusterctlMove } from "./clusterctl-move.ts";
import { clusterctlUpgrade } from "./clusterctl-upgrade.ts";
import { crash } from "./crash.ts";
import { ghost } from "./ghost.ts";
import { kubeadm } from "./kubeadm.ts";
import { leaderElection } from "./leader-election.ts";
import { lifecycle } from "./lifecycle.ts";
import { memberDown } from "./member-down.ts";
import type { ScenarioDefinition } from "./types.ts";
import { userDelete } from "./user-delete.ts";

export const scenarios: ScenarioDefinition[] = [
  lifecycle,
  crash,
  memberDown,
  ghost,
  leaderElection,
  userDelete,
  clusterClass,
  clusterctlMove,
  clusterctlUpgrade,
];

/**
 * Scenarios `make e2e` runs only when named (`make e2e SCENARIOS=kubeadm`). kubeadm is not in the default list yet:
 * one of its two runs saw the monitor count a quorum loss in the 1 → 2 voter step, where kubeadm promotes its own
 * learner before it answers status calls (e2e/README.md).
 */
export const optInScenarios: ScenarioDefinition[] = [kubeadm];
