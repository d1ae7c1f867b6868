// Every scenario `make e2e` runs, in order, each on its own fresh stack.
import { clusterClass } from "./clusterclass.ts";
import { clusterctlMove } from "./clusterctl-move.ts";
import { clusterctlUpgrade } from "./clusterctl-upgrade.ts";
import { crash } from "./crash.ts";
import { ghost } from "./ghost.ts";
import { kubeadm } from "./kubeadm.ts";
import { kubeadmUpgrade } from "./kubeadm-upgrade.ts";
import { leaderElection } from "./leader-election.ts";
import { lifecycle } from "./lifecycle.ts";
import { machineLost } from "./machine-lost.ts";
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
  machineLost,
  clusterClass,
  clusterctlMove,
  clusterctlUpgrade,
  kubeadm,
  kubeadmUpgrade,
];
