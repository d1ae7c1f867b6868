// Issue 17: a kubeadm control plane upgrades for real only if the workload cluster is prepared before a new Machine
// joins (kubeadm join renders its static pods from kube-system/kubeadm-config) and kube-proxy follows once the
// rollout is done. The planner takes the bootstrap flavour's steps (snapshot.workloadSteps) in order, one per reconcile.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { computeStatus } from "../../../src/controller/status.ts";
import { assess } from "../../../src/core/assess.ts";
import { plan, RECHECK_MS } from "../../../src/core/plan.ts";
import type {
  ComponentView,
  MachineView,
  Snapshot,
  WorkloadStepView,
  WorkloadStepsView,
} from "../../../src/core/snapshot.ts";
import {
  healthyMachines,
  idOf,
  machine,
  member,
  MINUTE,
  NOW,
  nodeFor,
  OLD_VERSION,
  snapshot,
  VERSION,
  withLeader,
} from "./fixtures.ts";
import { controlPlane } from "../controller/fixtures.ts";

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

  it("takes the steps in the order the flavour lists them, one per reconcile", () => {
    const permissions = { ...PERMISSIONS, done: false, detail: "ClusterRoleBinding kubeadm:apiserver-kubelet-client" };
    const first = plan(rolloutStart(kubeadm([CONFIG_OUTDATED, permissions])));
    assert.equal(first.action.kind === "PrepareWorkload" && first.action.step, "kubeadm-config", first.action.reason);
    const second = plan(rolloutStart(kubeadm([{ ...CONFIG_OUTDATED, done: true }, permissions])));
    assert.equal(second.action.kind === "PrepareWorkload" && second.action.step, "kubeadm-permissions");
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

  it("waits at the blocked pace, saying why, for an after-rollout step only the user can unblock", () => {
    const coredns: WorkloadStepView = {
      name: "coredns",
      when: "AfterRollout",
      done: false,
      detail: "Deployment kube-system/coredns stays at registry.k8s.io/coredns/coredns:v1.14.6",
      blocked:
        "Deployment kube-system/coredns stays at registry.k8s.io/coredns/coredns:v1.14.6: dns.imageTag v1.12.1 is older",
    };
    const { action } = plan(idle(kubeadm([PERMISSIONS, { ...CONFIG_OUTDATED, done: true }, coredns])));
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /3 of 3 Machines up to date at .*, but Deployment kube-system\/coredns stays at/);
    assert.equal(action.kind === "Wait" && action.blockedBy, "coredns");
    assert.equal(action.kind === "Wait" && action.recheckAfterMs, RECHECK_MS.blocked);
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

const COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

/** A surge rollout at its removal step (n-1 joined and leading), every Node Ready, with each node's static pods. */
function rolloutAtRemoval(components: (node: string) => ComponentView[]): Snapshot {
  const old = healthyMachines(3, "m", { version: OLD_VERSION });
  const fresh = machine("n-1", { failureDomain: "fd-a", created: NOW - 5 * MINUTE });
  const machines = [...old.machines, fresh];
  const base = snapshot({
    machines,
    members: withLeader([...old.members, member("n-1")], "n-1"),
    nodes: machines.map(nodeFor),
  });
  const done = [PERMISSIONS, { ...CONFIG_OUTDATED, done: true }, PROXY_OUTDATED];
  return {
    ...base,
    workload: { expected: true, readable: true },
    workloadSteps: {
      ...kubeadm(done),
      components: base.nodes.flatMap((node) => components(node.name)),
      componentNames: COMPONENTS,
    },
  };
}

const allReady = (node: string): ComponentView[] =>
  COMPONENTS.map((component) => ({ node, component, ready: true, detail: `pod kube-system/${component}-${node}` }));

describe("a rollout of kubeadm Machines gates on their control-plane components", () => {
  it("removes the old member once every Machine that stays runs all four static pods ready", () => {
    const { action } = plan(rolloutAtRemoval(allReady));
    assert.equal(action.kind, "RemoveMember", action.reason);
    assert.equal(action.kind === "RemoveMember" && action.memberId, idOf("m-1"));
  });

  it("stops after the new Machine whose kube-apiserver crashes, naming the Machine and the component", () => {
    const crashing = (node: string): ComponentView[] =>
      allReady(node).map((component) =>
        node === "n-1" && component.component === "kube-apiserver"
          ? {
              ...component,
              ready: false,
              detail:
                "pod kube-system/kube-apiserver-n-1 is not Ready: CrashLoopBackOff, last exit 1 (Error), 4 restarts",
            }
          : component,
      );
    const { action } = plan(rolloutAtRemoval(crashing));
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(
      action.reason,
      /machine n-1's control plane is not serving \(kube-apiserver: pod kube-system\/kube-apiserver-n-1 is not Ready: CrashLoopBackOff/,
    );
    assert.equal(action.kind === "Wait" && action.blockedBy, "machine n-1");
  });

  it("waits for a static pod the kubelet has not mirrored yet", () => {
    const missing = (node: string) =>
      allReady(node).filter((component) => !(node === "n-1" && component.component === "kube-scheduler"));
    const { action } = plan(rolloutAtRemoval(missing));
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /kube-scheduler has no pod on Node n-1/);
  });

  it("does not remove a voter while the components could not be seen", () => {
    const s = rolloutAtRemoval(allReady);
    const { action } = plan({
      ...s,
      workloadSteps: { ...s.workloadSteps!, error: "workload API server did not answer" },
    });
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /the workload API cannot be read \(workload API server did not answer\)/);
  });
});

describe("a kubeadm Machine whose static pods run another version than it claims", () => {
  it("is outdated and replaced, though its spec.version is the spec's (it joined from a stale kubeadm-config)", () => {
    const images = (node: string): ComponentView[] =>
      allReady(node).map((component) => ({
        ...component,
        image: `registry.k8s.io/${component.component}:${node === "m-2" ? OLD_VERSION : VERSION}`,
      }));
    const { machines, members } = healthyMachines(3);
    const base = snapshot({ machines, members });
    const s: Snapshot = {
      ...base,
      workload: { expected: true, readable: true },
      workloadSteps: {
        ...kubeadm([PERMISSIONS, { ...CONFIG_OUTDATED, done: true }]),
        components: base.nodes.flatMap((node) => images(node.name)),
        componentNames: COMPONENTS,
      },
    };
    const { action } = plan(s);
    assert.equal(action.kind, "CreateMachine", action.reason);
    assert.match(
      action.reason,
      new RegExp(
        `rollout: 1 of 3 Machines outdated \\(m-2: its kube-apiserver static pod runs ${OLD_VERSION}, not ${VERSION}`,
      ),
    );
  });
});

/**
 * kubeadm's kubelet on a control-plane node talks to its local API server only (kubeadm ≥ 1.36 always writes the
 * local endpoint into kubelet.conf on join): a new Machine whose kube-apiserver cannot start (a bad extra arg in the
 * template) has a healthy etcd voter (etcd-join ran) but no Node and no mirror Pods. Only dialling its API server names
 * what is wrong.
 */
function brokenJoiner(outdatedJoiner: boolean): Snapshot {
  const s = rolloutAtRemoval(allReady);
  return withBrokenApiServer(
    { ...s, machines: s.machines.map((view) => ({ ...view, apiServer: { ready: true, detail: "ok" } })) },
    "n-1",
    outdatedJoiner ? { templateHash: "older" } : {},
  );
}

/** Machine `name` joined with a template whose kube-apiserver cannot start: its dial fails, no Node, no mirror Pods. */
function withBrokenApiServer(s: Snapshot, name: string, overrides: Partial<MachineView> = {}): Snapshot {
  const apiServer = { ready: false, detail: "https://10.0.0.9:6443/readyz: connect ECONNREFUSED 10.0.0.9:6443" };
  return {
    ...s,
    machines: s.machines.map((view) =>
      view.name === name ? { ...view, apiServer, nodeName: undefined, ...overrides } : view,
    ),
    nodes: s.nodes.filter((node) => node.name !== name),
    workloadSteps: {
      ...s.workloadSteps!,
      components: s.workloadSteps!.components!.filter((component) => component.node !== name),
    },
  };
}

describe("a new kubeadm Machine whose API server cannot start", () => {
  it("stops the rollout after it: no old voter leaves, and the wait names the Machine and its kube-apiserver", () => {
    const { action } = plan(brokenJoiner(false));
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(
      action.reason,
      /machine n-1's control plane is not serving \(kube-apiserver: https:\/\/10\.0\.0\.9:6443\/readyz: connect ECONNREFUSED/,
    );
  });

  it("is the first to leave once a newer template makes it outdated too, so the rollout cannot wedge on it", () => {
    // The user fixed the template: the three old Machines and the broken one are all outdated. Taking an old one first
    // would wait forever on the broken one that stays.
    const s = brokenJoiner(true);
    const { action } = plan({
      ...s,
      machines: s.machines.map((view) => (view.name === "n-1" ? view : { ...view, templateHash: "older" })),
    });
    assert.equal(action.kind === "RemoveMember" || action.kind === "ForwardLeadership", true, action.reason);
    assert.match(action.reason, /n-1/);
    assert.match(action.reason, /its control plane is down \(kube-apiserver: https:\/\/10\.0\.0\.9:6443\/readyz/);
  });
});

/** brokenJoiner(true) with m-2 broken the same way: it joined with the bad template too, and every Machine is outdated. */
function twoBrokenOutdated(): Snapshot {
  const s = brokenJoiner(true);
  return withBrokenApiServer({ ...s, machines: s.machines.map((view) => ({ ...view, templateHash: "older" })) }, "m-2");
}

describe("several Machines whose API server cannot start", () => {
  it("leave one by one once a newer template makes them outdated: neither waits on the other to serve", () => {
    // sim seeds 1920616473 and 1039215307 (2026-12-05): each such Machine's removal waited on the other forever.
    const { action } = plan(twoBrokenOutdated());
    assert.notEqual(action.kind, "Wait", action.reason);
    assert.match(action.reason, /machine (n-1|m-2) goes because its control plane is down \(kube-apiserver: /);
  });

  it("go before a Machine marked for deletion, whose healthy voter could not leave while they stay", () => {
    // sim seed 2611003251: the marked Machine was chosen and waited on the broken one forever.
    const s = brokenJoiner(true);
    const { action } = plan({
      ...s,
      machines: s.machines.map((view) =>
        view.name === "n-1"
          ? view
          : { ...view, templateHash: "older", ...(view.name === "m-3" ? { markedForDeletion: true } : {}) },
      ),
    });
    assert.notEqual(action.kind, "Wait", action.reason);
    assert.match(action.reason, /machine n-1 goes because its control plane is down/);
  });

  it("still hold back a Machine whose API server serves, though another of its components is down", () => {
    // m-1's kube-scheduler crash-loops, but its API server serves: it leaves only once the new n-1 serves too.
    const s = brokenJoiner(false);
    const components = s.workloadSteps!.components!.map((component) =>
      component.node === "m-1" && component.component === "kube-scheduler"
        ? { ...component, ready: false, detail: "pod kube-system/kube-scheduler-m-1 is not Ready: CrashLoopBackOff" }
        : component,
    );
    const { action } = plan({ ...s, workloadSteps: { ...s.workloadSteps!, components } });
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /machine m-1 goes because its control plane is down \(kube-scheduler: /);
    assert.match(action.reason, /machine n-1's control plane is not serving \(kube-apiserver: /);
    assert.equal(action.kind === "Wait" && action.blockedBy, "machine n-1");
  });
});

describe("the QuorumControlPlane of a rollout stopped by a Machine whose API server cannot start", () => {
  it("says in its RollingOut condition which Machine and which component it waits on", () => {
    const s = brokenJoiner(false);
    const { action } = plan(s);
    const status = computeStatus({
      controlPlane: controlPlane(),
      snapshot: s,
      action,
      verdict: assess(s, { kind: "Observe" }),
    });
    const rollingOut = status.conditions?.find((condition) => condition.type === "RollingOut");
    assert.equal(rollingOut?.status, "True");
    assert.match(rollingOut?.message ?? "", /^3 Machine\(s\) to replace: m-1, m-2, m-3; waiting: /);
    assert.match(rollingOut?.message ?? "", /machine n-1's control plane is not serving \(kube-apiserver: /);
  });
});
