// What status.etcd.members must carry so a restarted controller plans as the one before it: first sighting (grace
// periods), first sighting started (etcd's removal window), and a learner's progress. Round trip through
// computeStatus -> core/memory.ts recall().
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { recall } from "../../../src/core/memory.ts";
import { plan } from "../../../src/core/plan.ts";
import { computeStatus } from "../../../src/controller/status.ts";
import { healthyMachines, machine, member, NOW, SECOND, snapshot, withLeader } from "../core/fixtures.ts";
import { controlPlane } from "./fixtures.ts";

describe("status memory", () => {
  it("keeps when each member was first seen and first seen started, so etcd's removal window survives a restart", () => {
    const h = healthyMachines(2);
    const young = member("n-1", { firstObserved: NOW - 20 * SECOND, startedObserved: NOW - 2 * SECOND });
    const unstarted = member("n-2", {
      name: "",
      learner: true,
      reachable: false,
      firstObserved: NOW - SECOND,
      startedObserved: undefined,
    });
    const s = snapshot({
      machines: [...h.machines, machine("n-1"), machine("n-2")],
      members: withLeader([...h.members, young, unstarted], "m-2"),
    });
    const { action } = plan(s);
    const status = computeStatus({
      controlPlane: controlPlane(),
      snapshot: s,
      action,
      verdict: assess(s, { kind: "Observe" }),
    });
    const entry = (id: string) => status.etcd?.members?.find((candidate) => candidate.id === id);
    assert.equal(entry(young.id)?.startedObserved, new Date(NOW - 2 * SECOND).toISOString());
    assert.equal(entry(unstarted.id)?.startedObserved, undefined);

    const byId = recall(status.etcd?.members, NOW + 10 * SECOND);
    assert.equal(byId.get(young.id)?.startedObserved, NOW - 2 * SECOND);
    assert.equal(byId.get(young.id)?.firstObserved, NOW - 20 * SECOND);
    assert.equal(byId.get(unstarted.id)?.startedObserved, undefined);
  });
});

describe("status memory when etcd cannot be read", () => {
  it("keeps the last member list and first sightings, but trusts no member's health or connection age", () => {
    const h = healthyMachines(1);
    const seen = snapshot({ machines: h.machines, members: withLeader(h.members, h.members[0].id) });
    const before = computeStatus({
      controlPlane: controlPlane(),
      snapshot: seen,
      action: plan(seen).action,
      verdict: assess(seen, { kind: "Observe" }),
    });
    const blind = {
      ...seen,
      now: NOW + SECOND,
      etcd: { observed: false, error: "no etcd member answered", members: [], alarms: [] },
    };
    const after = computeStatus({
      controlPlane: { ...controlPlane(), status: before },
      snapshot: blind,
      action: plan(blind).action,
      verdict: assess(blind, { kind: "Observe" }),
    });
    assert.deepEqual(
      after.etcd?.members?.map((entry) => [entry.id, entry.firstObserved, entry.healthy, entry.startedObserved]),
      before.etcd?.members?.map((entry) => [entry.id, entry.firstObserved, false, undefined]),
    );
    assert.equal(after.etcd?.summary, "unknown");
  });
});

describe("status.etcd.lastObserved", () => {
  const statusAt = (s: ReturnType<typeof snapshot>, previous?: ReturnType<typeof computeStatus>) =>
    computeStatus({
      controlPlane: { ...controlPlane(), ...(previous ? { status: previous } : {}) },
      snapshot: s,
      action: plan(s).action,
      verdict: assess(s, { kind: "Observe" }),
    });

  it("is written when the member list changes and kept while it does not, so an idle cluster's status stays the same", () => {
    const h = healthyMachines(3);
    const first = statusAt(snapshot({ machines: h.machines, members: h.members }));
    assert.equal(first.etcd?.lastObserved, new Date(NOW).toISOString());

    const idle = statusAt(snapshot({ machines: h.machines, members: h.members, now: NOW + 60 * SECOND }), first);
    assert.equal(idle.etcd?.lastObserved, first.etcd?.lastObserved);
    assert.deepEqual(idle.etcd, first.etcd);

    const shrunk = statusAt(
      snapshot({ machines: h.machines, members: h.members.slice(0, 2), now: NOW + 120 * SECOND }),
      idle,
    );
    assert.equal(shrunk.etcd?.lastObserved, new Date(NOW + 120 * SECOND).toISOString());
  });

  it("keeps the last change while etcd cannot be read", () => {
    const h = healthyMachines(3);
    const first = statusAt(snapshot({ machines: h.machines, members: h.members }));
    const blind = statusAt(snapshot({ machines: h.machines, observed: false, now: NOW + 60 * SECOND }), first);
    assert.equal(blind.etcd?.lastObserved, first.etcd?.lastObserved);
  });
});
