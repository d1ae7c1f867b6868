// A kubeadm join that stops after its etcd phase and before mark-control-plane (upload-config or update-status failing,
// an API server that did not answer in time) leaves a healthy voter on a registered Node that is not labelled, nor
// tainted, a control-plane node: workloads may be scheduled on it. Quorum names it on the Machine
// (NodeKubeadmLabelSet) and in its nextAction, and keeps the short poll until the label is there.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { ownedMachineConditions } from "../../../src/core/machine-conditions.ts";
import { plan } from "../../../src/core/plan.ts";
import { selectMachineForScaleDown } from "../../../src/core/selection.ts";
import type { MachineView, NodeView, Snapshot } from "../../../src/core/snapshot.ts";
import { healthyMachines, machine, MINUTE, NOW, nodeFor, OLD_VERSION, snapshot, VERSION } from "./fixtures.ts";

const WAIT = { kind: "Wait", reason: "etcd is healthy", recheckAfterMs: 10_000 } as const;

/** Three healthy kubeadm Machines whose Nodes were listed; m-2's join never labelled its Node. */
function kubeadm(overrides: { flavour?: string; readable?: boolean; nodes?: NodeView[] } = {}): Snapshot {
  const three = healthyMachines(3);
  const base = snapshot(three);
  const nodes =
    overrides.nodes ??
    three.machines.map((candidate) => ({ ...nodeFor(candidate), controlPlaneLabel: candidate.name !== "m-2" }));
  return {
    ...base,
    nodes,
    workload: { expected: true, readable: overrides.readable ?? true },
    workloadSteps: { flavour: overrides.flavour ?? "kubeadm", steps: [] },
  };
}

function labelCondition(start: Snapshot, name: string) {
  return ownedMachineConditions(start, WAIT)
    .get(name)
    ?.set.find((condition) => condition.type === "NodeKubeadmLabelSet");
}

describe("a kubeadm join that did not label its Node", () => {
  it("is False on that Machine, naming the Node, the phase and the way out, and True on the others", () => {
    const start = kubeadm();
    assert.deepEqual(labelCondition(start, "m-1"), {
      type: "NodeKubeadmLabelSet",
      status: "True",
      reason: "NodeKubeadmLabelSet",
      message: "",
    });
    const unlabelled = labelCondition(start, "m-2");
    assert.equal(unlabelled?.status, "False");
    assert.equal(unlabelled?.reason, "NodeKubeadmLabelNotSet");
    assert.match(
      unlabelled?.message ?? "",
      /^Node m-2 of machine m-2 does not have the node-role\.kubernetes\.io\/control-plane label that kubeadm join's mark-control-plane phase sets: .*delete machine m-2 to replace it$/,
    );
  });

  it("is said in nothing to do, and the cluster is not settled, so the short poll sees the label come", () => {
    const action = plan(kubeadm()).action;
    assert.equal(action.kind, "Wait");
    assert.match(action.reason, /^nothing to do: .*; Node m-2 of machine m-2 does not have the node-role/);
    assert.ok(action.kind === "Wait" && action.settled !== true, "not settled while a Node lacks the label");
    const labelled = kubeadm({ nodes: healthyMachines(3).machines.map(nodeFor) });
    const idle = plan(labelled).action;
    assert.ok(idle.kind === "Wait" && idle.settled === true, `settled once every Node is labelled: ${idle.reason}`);
    assert.doesNotMatch(idle.reason, /label/);
  });

  it("is Unknown on a Machine whose nodeRef names a Node that does not exist", () => {
    const start = kubeadm({
      nodes: healthyMachines(3)
        .machines.filter((m) => m.name !== "m-3")
        .map(nodeFor),
    });
    assert.deepEqual(labelCondition(start, "m-3"), {
      type: "NodeKubeadmLabelSet",
      status: "Unknown",
      reason: "NodeNotFound",
      message:
        "Node m-3 (Machine status.nodeRef) does not exist: whether it carries node-role.kubernetes.io/control-plane is unknown",
    });
  });

  it("is not judged before a Machine has a Node, while it is deleting, when the Nodes cannot be read, or for another bootstrap", () => {
    const start = kubeadm();
    const fresh = machine("m-4", { nodeName: undefined, providerID: undefined, created: NOW - MINUTE });
    const deleting = { ...start.machines[1], deleting: NOW - MINUTE };
    const withMore = { ...start, machines: [start.machines[0], deleting, start.machines[2], fresh] };
    assert.equal(labelCondition(withMore, "m-4"), undefined, "no Node yet");
    assert.equal(labelCondition(withMore, "m-2"), undefined, "deleting");
    assert.equal(
      labelCondition(kubeadm({ readable: false }), "m-2"),
      undefined,
      "Nodes unreadable: the last word stays",
    );
    assert.equal(labelCondition(kubeadm({ flavour: "generic" }), "m-2"), undefined, "not a kubeadm control plane");
    assert.doesNotMatch(plan(kubeadm({ flavour: "generic" })).action.reason, /label/);
  });
});

describe("scaling down a kubeadm control plane with a half-joined Machine", () => {
  /** Five kubeadm Machines (m-1 oldest, two each in fd-a and fd-b), scaled to three; `unlabelled` lacks the label. */
  function five(unlabelled: string, overrides: Record<string, Partial<MachineView>> = {}): Snapshot {
    const { machines, members } = healthyMachines(5);
    const shaped = machines.map((candidate) => ({ ...candidate, ...overrides[candidate.name] }));
    return {
      ...snapshot({ machines: shaped, members, controlPlane: { replicas: 3 } }),
      nodes: shaped.map((candidate) => ({ ...nodeFor(candidate), controlPlaneLabel: candidate.name !== unlabelled })),
      workload: { expected: true, readable: true },
      workloadSteps: { flavour: "kubeadm", steps: [] },
    };
  }
  const pick = (start: Snapshot) => selectMachineForScaleDown(start, assess(start, { kind: "Observe" }));

  it("removes the Machine whose Node kubeadm never labelled first, before the oldest and before failure-domain balance", () => {
    assert.equal(pick(five("none"))?.machine, "m-1", "every Node labelled: the oldest in the fullest domain");
    assert.deepEqual(pick(five("m-5")), {
      machine: "m-5",
      why: "its kubeadm join did not label Node m-5 control-plane",
    });
    assert.equal(pick(five("m-3"))?.machine, "m-3", "alone in fd-c, still the one a user would remove");
    const action = plan(five("m-5")).action;
    assert.match(action.reason, /m-5.*its kubeadm join did not label Node m-5 control-plane/);
  });

  it("still removes outdated Machines before it, and says so when it is outdated too", () => {
    assert.equal(pick(five("m-5", { "m-4": { version: OLD_VERSION } }))?.machine, "m-4");
    assert.deepEqual(pick(five("m-5", { "m-4": { version: OLD_VERSION }, "m-5": { version: OLD_VERSION } })), {
      machine: "m-5",
      why: `its kubeadm join did not label Node m-5 control-plane and it is outdated (version ${OLD_VERSION} → ${VERSION})`,
    });
  });
});
