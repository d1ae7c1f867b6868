// A Machine whose etcd member joined and is a healthy voter, but that never got a Node: its kubelet's registration was
// refused (an admission policy, a host name the API server rejects) or no cloud controller manager set the Node's
// providerID, so CAPI never sets its nodeRef. With no MachineHealthCheck node startup timeout nothing marks it; before,
// status said "nothing to do" while CAPI called the Machine not Ready, and every removal of another voter waited on it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import { selectMachineForScaleDown } from "../../../src/core/selection.ts";
import type { MachineView, Snapshot } from "../../../src/core/snapshot.ts";
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
  withLeader,
} from "./fixtures.ts";

const FIX = /if it never registers a Node, delete machine m-2 to replace it/;

/** Three healthy Machines whose Nodes were listed, but none for m-2 (no nodeRef, no providerID match). */
function threeWithoutNode(overrides: Partial<MachineView> = {}, readable = true): Snapshot {
  const { machines, members } = healthyMachines(3);
  const shaped = machines.map((candidate) =>
    candidate.name === "m-2" ? { ...candidate, nodeName: undefined, ...overrides } : candidate,
  );
  return {
    ...snapshot({ machines: shaped, members }),
    nodes: shaped.filter((candidate) => candidate.name !== "m-2").map(nodeFor),
    workload: { expected: true, readable },
  };
}

describe("a Machine whose healthy voter never got a Node", () => {
  it("is named in nothing to do with the way out, and the cluster is not settled", () => {
    const { action } = plan(threeWithoutNode());
    assert.equal(action.kind, "Wait");
    assert.match(action.reason, /^nothing to do: 3 of 3 Machines up to date; /);
    assert.match(
      action.reason,
      /machine m-2 has had no Node in the \S+ since its creation \(memberJoinGracePeriod 10m\) though its etcd member is a healthy voter: its kubelet has not registered, or no cloud controller manager has set the Node's spec\.providerID/,
    );
    assert.match(action.reason, FIX);
    assert.ok(action.kind === "Wait" && action.settled !== true, "not settled while a Machine has no Node");
  });

  it("says so when the Node its nodeRef names was deleted", () => {
    const { action } = plan(threeWithoutNode({ nodeName: "ip-10-0-0-2" }));
    assert.match(
      action.reason,
      /its Node ip-10-0-0-2 \(status\.nodeRef\) does not exist: it was deleted, .*\(restart the kubelet on its host\)/,
    );
    assert.match(action.reason, FIX);
  });

  it("is not named while young, deleting, unreadable, or when its member is not a healthy voter", () => {
    const cases: [string, Snapshot][] = [
      ["created 5 minutes ago: booting", threeWithoutNode({ created: NOW - 5 * MINUTE })],
      ["deleting", threeWithoutNode({ deleting: NOW - MINUTE })],
      ["Nodes unreadable", threeWithoutNode({}, false)],
    ];
    const start = threeWithoutNode();
    const down = start.etcd.members.map((candidate) =>
      candidate.name === "m-2" ? { ...candidate, reachable: false, error: "context deadline exceeded" } : candidate,
    );
    cases.push(["its voter is down", { ...start, etcd: { ...start.etcd, members: down } }]);
    for (const [what, state] of cases) assert.doesNotMatch(plan(state).action.reason, FIX, what);
    // With every Node there, the idle cluster is settled: the test above fails for the missing Node, not another reason.
    const whole = { ...start, nodes: start.machines.map(nodeFor) };
    const idle = plan(whole).action;
    assert.ok(idle.kind === "Wait" && idle.settled === true, idle.reason);
  });

  it("holds a rollout's removal with the way out once it is past memberJoinGracePeriod", () => {
    // A surge rollout at its removal step: the new n-1 joined and is healthy, and has had no Node for 15 minutes.
    const old = healthyMachines(3, "m", { version: OLD_VERSION });
    const fresh = machine("n-1", { failureDomain: "fd-a", created: NOW - 15 * MINUTE, nodeName: undefined });
    const machines = [...old.machines, fresh];
    const state: Snapshot = {
      ...snapshot({ machines, members: withLeader([...old.members, member("n-1")], "m-1") }),
      nodes: old.machines.map(nodeFor),
      workload: { expected: true, readable: true },
    };
    const { action } = plan(state);
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /a voter leaves only once the Machines that stay are seen serving/);
    assert.match(action.reason, /if it never registers a Node, delete machine n-1 to replace it/);
    // Five minutes old, it is most likely booting: named, without the way out.
    const young = plan({ ...state, machines: [...old.machines, { ...fresh, created: NOW - 5 * MINUTE }] }).action;
    assert.match(young.reason, /machine n-1 has no Node yet/);
    assert.doesNotMatch(young.reason, /never registers/);
  });

  it("goes first when scaling down, before the oldest and failure-domain balance, after outdated Machines", () => {
    const { machines, members } = healthyMachines(5);
    const shape = (overrides: Record<string, Partial<MachineView>>): Snapshot => {
      const shaped = machines.map((candidate) => ({ ...candidate, ...overrides[candidate.name] }));
      return {
        ...snapshot({ machines: shaped, members, controlPlane: { replicas: 3 } }),
        nodes: shaped.filter((candidate) => candidate.name !== "m-5").map(nodeFor),
        workload: { expected: true, readable: true },
      };
    };
    const pick = (state: Snapshot) => selectMachineForScaleDown(state, assess(state, { kind: "Observe" }));
    assert.deepEqual(pick(shape({ "m-5": { nodeName: undefined } })), {
      machine: "m-5",
      why: "it got no Node within memberJoinGracePeriod of its creation",
    });
    const withNode = shape({});
    assert.equal(pick({ ...withNode, nodes: machines.map(nodeFor) })?.machine, "m-1", "every Node there: the oldest");
    assert.equal(pick(shape({ "m-5": { nodeName: undefined }, "m-4": { version: OLD_VERSION } }))?.machine, "m-4");
    const { action } = plan(shape({ "m-5": { nodeName: undefined } }));
    assert.equal(action.kind, "RemoveMember", action.reason);
    assert.equal((action as { memberId: string }).memberId, idOf("m-5"));
  });
});
