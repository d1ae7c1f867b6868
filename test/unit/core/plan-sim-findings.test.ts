// Planner behaviour the deterministic simulator (test/sim) found wrong, pinned as plain unit cases.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isDisruptive } from "../../../src/core/actions.ts";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import { dead, healthyMachines, member, MINUTE, NOW, SECOND, snapshot, withLeader } from "./fixtures.ts";

describe("planner cases found by the simulator", () => {
  it("creates the first Machine when etcd is observed with an empty member list and no Machines exist", () => {
    // observe() reports an empty, observed membership when there is no Machine to ask yet.
    const decision = plan(snapshot({ machines: [], members: [], observed: true, cluster: { controlPlaneInitialized: false } }));
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
});

describe("planner cases found by the simulator: members that map to no Machine", () => {
  it("does not hand the cluster to a member that maps to no Machine when the last managed voter's Machine is deleted", () => {
    const h = healthyMachines(1);
    h.machines[0].deleting = NOW - 30 * SECOND;
    const stray = member("stray", { peerURLs: ["https://10.9.9.7:2380"], firstObserved: NOW - 20 * SECOND });
    const decision = plan(snapshot({ ...h, members: [...withLeader(h.members, "m-1"), stray], controlPlane: { replicas: 1 } }));
    // Creating a replacement is fine; removing m-1's member or moving leadership to the stray is not.
    assert.ok(!isDisruptive(decision.action), `${decision.action.kind}: ${decision.action.reason}`);
    const removal = assess(snapshot({ ...h, members: [...withLeader(h.members, "m-1"), stray], controlPlane: { replicas: 1 } }), { kind: "RemoveMember", memberId: h.members[0].id });
    assert.equal(removal.allowed, false);
    assert.ok(removal.blockers.some((blocker) => blocker.subject.includes("stray")), JSON.stringify(removal.blockers));
  });

  it("removes one of two healthy ghosts instead of letting each block the other's removal", () => {
    const h = healthyMachines(3);
    const ghosts = [member("old-1", { peerURLs: ["https://10.9.9.5:2380"], firstObserved: NOW - 30 * MINUTE }), member("old-2", { peerURLs: ["https://10.9.9.6:2380"], firstObserved: NOW - 30 * MINUTE })];
    const decision = plan(snapshot({ machines: h.machines, members: [...withLeader(h.members, "m-1"), ...ghosts] }));
    assert.equal(decision.action.kind, "RemoveGhost", decision.action.reason);
  });
});
