// What status.etcd.members must carry so a restarted controller plans as the one before it: first sighting (grace
// periods), first sighting started (etcd's removal window), and a learner's progress. Round trip through
// computeStatus -> previousEtcdView.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import { previousEtcdView } from "../../../src/controller/snapshot-builder.ts";
import { computeStatus } from "../../../src/controller/status.ts";
import { healthyMachines, machine, member, NOW, SECOND, snapshot, withLeader } from "../core/fixtures.ts";
import { controlPlane } from "./fixtures.ts";

describe("status memory", () => {
  it("keeps when each member was first seen and first seen started, so etcd's removal window survives a restart", () => {
    const h = healthyMachines(2);
    const young = member("n-1", { firstObserved: NOW - 20 * SECOND, startedObserved: NOW - 2 * SECOND });
    const unstarted = member("n-2", { name: "", learner: true, reachable: false, firstObserved: NOW - SECOND, startedObserved: undefined });
    const s = snapshot({ machines: [...h.machines, machine("n-1"), machine("n-2")], members: withLeader([...h.members, young, unstarted], "m-2") });
    const { action } = plan(s);
    const status = computeStatus({ controlPlane: controlPlane(), snapshot: s, action, verdict: assess(s, { kind: "Observe" }) });
    const entry = (id: string) => status.etcd?.members?.find((candidate) => candidate.id === id);
    assert.equal(entry(young.id)?.startedObserved, new Date(NOW - 2 * SECOND).toISOString());
    assert.equal(entry(unstarted.id)?.startedObserved, undefined);

    const restored = previousEtcdView(status, NOW + 10 * SECOND);
    const byId = new Map(restored.members.map((candidate) => [candidate.id, candidate]));
    assert.equal(byId.get(young.id)?.startedObserved, NOW - 2 * SECOND);
    assert.equal(byId.get(young.id)?.firstObserved, NOW - 20 * SECOND);
    assert.equal(byId.get(unstarted.id)?.startedObserved, undefined);
  });
});
