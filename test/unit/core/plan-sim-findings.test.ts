// Planner behaviour the deterministic simulator (test/sim) found wrong, pinned as plain unit cases.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isDisruptive } from "../../../src/core/actions.ts";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import {
  dead,
  healthyMachines,
  machine,
  member,
  MINUTE,
  nodeFor,
  NOW,
  SECOND,
  snapshot,
  withLeader,
} from "./fixtures.ts";

describe("planner cases found by the simulator", () => {
  it("creates the first Machine when etcd is observed with an empty member list and no Machines exist", () => {
    // observe() reports an empty, observed membership when there is no Machine to ask yet.
    const decision = plan(
      snapshot({ machines: [], members: [], observed: true, cluster: { controlPlaneInitialized: false } }),
    );
    assert.equal(decision.action.kind, "CreateMachine", decision.action.reason);
  });
});

describe("planner cases found by the simulator: replacements before the last voter leaves", () => {
  it("creates a replacement when a user deletes the only Machine of a one-replica control plane", () => {
    const h = healthyMachines(1);
    h.machines[0].deleting = NOW - 30 * SECOND;
    const decision = plan(snapshot({ ...h, members: withLeader(h.members, "m-1"), controlPlane: { replicas: 1 } }));
    assert.equal(decision.action.kind, "CreateMachine", decision.action.reason);
  });

  it("still refuses that replacement while another voter is unhealthy", () => {
    const h = healthyMachines(3);
    h.machines[0].deleting = NOW - 30 * SECOND;
    h.members[1] = dead("m-2");
    const decision = plan(snapshot({ ...h, members: withLeader(h.members, "m-1") }));
    assert.equal(decision.action.kind, "Wait", decision.action.reason);
  });

  it("keeps the replacement of a one-replica control plane's only Machine, marked for remediation, while it joins (seed 2754155871)", () => {
    // Its only voter healthy (the kubelet stopped for good, so the MachineHealthCheck marked it): the surge Machine,
    // taken for one whose member is gone, was deleted as soon as it was created, and created again, forever.
    const h = healthyMachines(1);
    const marked = { ...h.machines[0], remediationRequested: true };
    const fresh = machine("n-1", {
      created: NOW - 10 * SECOND,
      nodeName: undefined,
      addresses: [],
      infrastructureReady: false,
      bootstrapReady: false,
    });
    const decision = plan(
      snapshot({ machines: [marked, fresh], members: withLeader(h.members, "m-1"), controlPlane: { replicas: 1 } }),
    );
    assert.equal(decision.action.kind, "Wait", decision.action.reason);
    assert.match(decision.action.reason, /machine n-1 is joining/);
  });
});

describe("planner cases found by the simulator: members that map to no Machine", () => {
  it("does not hand the cluster to a member that maps to no Machine when the last managed voter's Machine is deleted", () => {
    const h = healthyMachines(1);
    h.machines[0].deleting = NOW - 30 * SECOND;
    const stray = member("stray", { peerURLs: ["https://10.9.9.7:2380"], firstObserved: NOW - 20 * SECOND });
    const decision = plan(
      snapshot({ ...h, members: [...withLeader(h.members, "m-1"), stray], controlPlane: { replicas: 1 } }),
    );
    // Creating a replacement is fine; removing m-1's member or moving leadership to the stray is not.
    assert.ok(!isDisruptive(decision.action), `${decision.action.kind}: ${decision.action.reason}`);
    const removal = assess(
      snapshot({ ...h, members: [...withLeader(h.members, "m-1"), stray], controlPlane: { replicas: 1 } }),
      { kind: "RemoveMember", memberId: h.members[0].id },
    );
    assert.equal(removal.allowed, false);
    assert.ok(
      removal.blockers.some((blocker) => blocker.subject.includes("stray")),
      JSON.stringify(removal.blockers),
    );
  });

  it("removes one of two dead ghosts instead of letting each block the other's removal", () => {
    const h = healthyMachines(3);
    const ghosts = [
      dead("old-1", { peerURLs: ["https://10.9.9.5:2380"], firstObserved: NOW - 30 * MINUTE }),
      dead("old-2", { peerURLs: ["https://10.9.9.6:2380"], firstObserved: NOW - 30 * MINUTE }),
    ];
    const decision = plan(snapshot({ machines: h.machines, members: [...withLeader(h.members, "m-1"), ...ghosts] }));
    assert.equal(decision.action.kind, "RemoveGhost", decision.action.reason);
  });

  it("leaves two healthy members that map to no Machine alone, and removes the one a user names even while the other stays", () => {
    const h = healthyMachines(3);
    const strays = [
      member("old-1", { peerURLs: ["https://10.9.9.5:2380"], firstObserved: NOW - 30 * MINUTE }),
      member("old-2", { peerURLs: ["https://10.9.9.6:2380"], firstObserved: NOW - 30 * MINUTE }),
    ];
    const members = [...withLeader(h.members, "m-1"), ...strays];
    const alone = plan(snapshot({ machines: h.machines, members }));
    assert.ok(!isDisruptive(alone.action), `${alone.action.kind}: ${alone.action.reason}`);
    assert.deepEqual(
      alone.assessment.members.filter((candidate) => candidate.class === "unmapped").map((candidate) => candidate.name),
      ["old-1", "old-2"],
    );
    const named = plan(snapshot({ machines: h.machines, members, controlPlane: { removeMemberIds: [strays[1].id] } }));
    assert.equal(named.action.kind, "RemoveMember", named.action.reason);
    assert.equal(named.action.kind === "RemoveMember" && named.action.memberName, "old-2");
  });
});

describe("planner cases found by the simulator: a member reported before its Machine's address", () => {
  it("keeps the hook of a deleting Machine that shows no member while a member not mapped yet may be its own", () => {
    // kubeadm init ran on m-1, but the cache still shows m-1 without addresses or Node: its member maps to nothing.
    const lone = machine("m-1", { deleting: NOW - 20 * SECOND, addresses: [], nodeName: undefined, memberName: "m-1" });
    const fresh = member("ip-10-7-0-2", {
      peerURLs: ["https://10.7.0.2:2380"],
      leader: true,
      firstObserved: NOW - 10 * SECOND,
    });
    const decision = plan(snapshot({ machines: [lone], members: [fresh], nodes: [], controlPlane: { replicas: 1 } }));
    assert.notEqual(decision.action.kind, "ReleaseHook", decision.action.reason);
    assert.ok(!isDisruptive(decision.action), `${decision.action.kind}: ${decision.action.reason}`);
  });
});

describe("planner cases found by the simulator: a Machine's own member that shows no evidence", () => {
  // Seed 1291496698: a remediated Machine with no nodeRef and only an external address; its member, named after the
  // host, was down past the ghost grace period. The hook was released while that member was still in etcd.
  function remediatedWithDownMember() {
    const h = healthyMachines(2);
    const remediated = machine("m-3", {
      deleting: NOW - MINUTE,
      nodeName: undefined,
      providerID: undefined,
      addresses: ["203.0.113.9"],
    });
    const own = dead("ip-10-0-77-9", { peerURLs: ["https://10.0.77.9:2380"], clientURLs: ["https://10.0.77.9:2379"] });
    return { machines: [...h.machines, remediated], members: [...withLeader(h.members, "m-1"), own] };
  }

  it("does not release the hook of a deleting Machine that shows no member while a ghost may be its member", () => {
    const decision = plan(snapshot(remediatedWithDownMember()));
    assert.notEqual(decision.action.kind, "ReleaseHook", decision.action.reason);
    assert.equal(decision.action.kind, "RemoveGhost", decision.action.reason);
  });

  it("releases that hook once the ghost is gone", () => {
    const world = remediatedWithDownMember();
    const decision = plan(snapshot({ ...world, members: world.members.slice(0, 2) }));
    assert.deepEqual(decision.action.kind === "ReleaseHook" && decision.action.machine, "m-3", decision.action.reason);
  });
});

/**
 * Four Machines for five replicas (a maxSurge 0 rollout took one out): n-1, created `ageMinutes` ago, has no Node (or
 * a NotReady one) and its voter is down. It died while joining, and no MachineHealthCheck node startup timeout marks
 * it (sim seed 2259926572, 2026-12-05: the scale-up waited on its dead voter forever).
 */
function deadJoiner(ageMinutes: number, node: "none" | "not-ready" = "none") {
  const h = healthyMachines(3);
  const fresh = machine("n-1", { failureDomain: "fd-b", created: NOW - ageMinutes * MINUTE, nodeName: undefined });
  const machines = [...h.machines, fresh];
  const nodes = machines
    .filter((view) => view.name !== "n-1" || node === "not-ready")
    .map((view) => ({ ...nodeFor(view), ready: view.name !== "n-1" }));
  const base = snapshot({
    machines,
    members: withLeader([...h.members, dead("n-1")], "m-1"),
    nodes,
    controlPlane: { replicas: 5 },
  });
  return { ...base, workload: { expected: true, readable: true } };
}

describe("planner cases found by the simulator: a Machine that never came up", () => {
  it("evicts the down voter of a Machine that got no Node within memberJoinGracePeriod, so it can be replaced", () => {
    const decision = plan(deadJoiner(11));
    assert.equal(decision.action.kind, "RemoveMember", decision.action.reason);
    assert.equal(decision.action.kind === "RemoveMember" && decision.action.machine, "n-1");
    assert.match(decision.action.reason, /got no Node in the 11m since its creation .*: it never came up/);
  });

  it("waits for it while the Machine is younger than memberJoinGracePeriod: its member may be back", () => {
    const decision = plan(deadJoiner(5));
    assert.equal(decision.action.kind, "Wait", decision.action.reason);
    assert.match(decision.action.reason, /unhealthy voter/);
  });

  it("leaves a Machine whose Node exists (NotReady) to the MachineHealthCheck", () => {
    const decision = plan(deadJoiner(11, "not-ready"));
    assert.equal(decision.action.kind, "Wait", decision.action.reason);
  });

  it("does nothing of the kind while the workload API cannot be read: no Node is not known then", () => {
    const s = deadJoiner(11);
    const decision = plan({ ...s, workload: { expected: true, readable: false, error: "connection refused" } });
    assert.equal(decision.action.kind, "Wait", decision.action.reason);
  });
});
