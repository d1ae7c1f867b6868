// Issue 17: a kubeadm control plane upgrades for real only if the workload cluster is prepared before a new Machine
// joins (kubeadm join renders its static pods from kube-system/kubeadm-config) and kube-proxy follows once the
// rollout is done. The planner takes the bootstrap flavour's steps (snapshot.workloadSteps) in order, one per reconcile.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { plan } from "../../../src/core/plan.ts";
import type { Snapshot, WorkloadStepView, WorkloadStepsView } from "../../../src/core/snapshot.ts";
import { healthyMachines, OLD_VERSION, snapshot, VERSION } from "./fixtures.ts";

const PERMISSIONS: WorkloadStepView = { name: "kubeadm-permissions", when: "BeforeCreate", done: true, detail: "" };
const CONFIG_OUTDATED: WorkloadStepView = {
  name: "kubeadm-config",
  when: "BeforeCreate",
  done: false,
  detail: `/kubernetesVersion: "${OLD_VERSION}" → "${VERSION}"`,
};
const PROXY_OUTDATED: WorkloadStepView = {
  name: "kube-proxy",
  when: "AfterRollout",
  done: false,
  detail: `kube-proxy runs registry.k8s.io/kube-proxy:${OLD_VERSION}`,
};

function kubeadm(steps: WorkloadStepView[], error?: string): WorkloadStepsView {
  return { flavour: "kubeadm", steps, ...(error ? { error } : {}) };
}

/** Three healthy Machines at the old version while the spec asks for the new one: the rollout's first create. */
function rolloutStart(steps: WorkloadStepsView | undefined): Snapshot {
  const { machines, members } = healthyMachines(3, "m", { version: OLD_VERSION });
  const base = snapshot({ machines, members });
  return steps ? { ...base, workloadSteps: steps } : base;
}

function idle(steps: WorkloadStepsView): Snapshot {
  const { machines, members } = healthyMachines(3);
  return { ...snapshot({ machines, members }), workloadSteps: steps };
}

describe("the bootstrap flavour's workload steps", () => {
  it("syncs kubeadm-config before the first Machine of a new version is created", () => {
    const { action } = plan(rolloutStart(kubeadm([PERMISSIONS, CONFIG_OUTDATED, PROXY_OUTDATED])));
    assert.equal(action.kind, "PrepareWorkload", action.reason);
    assert.equal(action.kind === "PrepareWorkload" && action.step, "kubeadm-config");
    assert.match(action.reason, /rollout: 3 of 3 Machines outdated/);
    assert.match(action.reason, /kubernetesVersion/);
  });

  it("takes the steps in their order: the permissions before the config", () => {
    const permissions = { ...PERMISSIONS, done: false, detail: "ClusterRoleBinding kubeadm:apiserver-kubelet-client" };
    const { action } = plan(rolloutStart(kubeadm([permissions, CONFIG_OUTDATED])));
    assert.equal(action.kind === "PrepareWorkload" && action.step, "kubeadm-permissions", action.reason);
  });

  it("creates the Machine once every BeforeCreate step is done, leaving kube-proxy for after the rollout", () => {
    const { action } = plan(rolloutStart(kubeadm([PERMISSIONS, { ...CONFIG_OUTDATED, done: true }, PROXY_OUTDATED])));
    assert.equal(action.kind, "CreateMachine", action.reason);
  });

  it("moves kube-proxy once every Machine is up to date, and then has nothing to do", () => {
    const { action } = plan(idle(kubeadm([PERMISSIONS, { ...CONFIG_OUTDATED, done: true }, PROXY_OUTDATED])));
    assert.equal(action.kind === "PrepareWorkload" && action.step, "kube-proxy", action.reason);
    const after = plan(
      idle(kubeadm([PERMISSIONS, { ...CONFIG_OUTDATED, done: true }, { ...PROXY_OUTDATED, done: true }])),
    );
    assert.equal(after.action.kind, "Wait");
    assert.match(after.action.reason, /^nothing to do/);
  });

  it("waits, saying why, while kubeadm init has not uploaded kubeadm-config", () => {
    const blocked = {
      ...CONFIG_OUTDATED,
      detail: "ConfigMap kube-system/kubeadm-config does not exist",
      blocked: "ConfigMap kube-system/kubeadm-config does not exist: kubeadm init uploads it",
    };
    const { machines, members } = healthyMachines(1);
    const s = { ...snapshot({ machines, members }), workloadSteps: kubeadm([PERMISSIONS, blocked]) };
    const { action } = plan(s);
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /scale up: 1 of 3 Machines, but ConfigMap kube-system\/kubeadm-config does not exist/);
    assert.equal(action.kind === "Wait" && action.blockedBy, "kubeadm-config");
  });

  it("creates nothing while the steps could not be checked, and does not hold an idle cluster for it", () => {
    const error = "workload API server https://10.0.0.1:6443 did not answer within 10000 ms";
    const { action } = plan(rolloutStart(kubeadm([], error)));
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(
      action.reason,
      /what a new kubeadm Machine needs in the workload cluster could not be checked: workload API server/,
    );
    const quiet = plan(idle(kubeadm([], error)));
    assert.match(quiet.action.reason, /^nothing to do/);
  });

  it("creates as before for a bootstrap provider with no workload steps", () => {
    assert.equal(plan(rolloutStart(undefined)).action.kind, "CreateMachine");
  });
});
