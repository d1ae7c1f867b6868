// Planner behaviour the deterministic simulator (test/sim) found wrong, pinned as plain unit cases.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { plan } from "../../../src/core/plan.ts";
import { snapshot } from "./fixtures.ts";

describe("planner cases found by the simulator", () => {
  it("creates the first Machine when etcd is observed with an empty member list and no Machines exist", () => {
    // observe() reports an empty, observed membership when there is no Machine to ask yet.
    const decision = plan(snapshot({ machines: [], members: [], observed: true, cluster: { controlPlaneInitialized: false } }));
    assert.equal(decision.action.kind, "CreateMachine", decision.action.reason);
  });
});
