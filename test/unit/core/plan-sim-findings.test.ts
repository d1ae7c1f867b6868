// Planner behaviour the deterministic simulator (test/sim) found wrong, pinned as plain unit cases.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { plan } from "../../../src/core/plan.ts";
import { dead, healthyMachines, NOW, SECOND, snapshot, withLeader } from "./fixtures.ts";

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
