// Per-member memory (src/core/memory.ts): recalled from status, updated from one observation at one `now`, and
// what status keeps of it. A restarted controller must plan as the one before it did.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { observe, persisted, recall, type ObservedMember } from "../../../src/core/memory.ts";

const member = (id: string, fields: Partial<ObservedMember> = {}): ObservedMember => ({
  id,
  name: `cp-${id}`,
  peerURLs: [],
  clientURLs: [],
  learner: false,
  reachable: true,
  leader: false,
  errors: [],
  ...fields,
});

/** A started voter's status entry, as an older Quorum wrote it (no startedObserved). */
const voterEntry = {
  id: "7",
  name: "cp-a",
  learner: false,
  healthy: true,
  leader: false,
  firstObserved: "2026-11-29T11:00:00Z",
};

describe("member memory", () => {
  it("keeps when a member was first seen across rounds, and moves lastProgress only when its applied index moves", () => {
    const first = observe([member("1", { learner: true, raftAppliedIndex: 100 })], new Map(), 1000);
    const memory = (views: typeof first) =>
      new Map(
        views.map((view) => [
          view.id,
          {
            firstObserved: view.firstObserved,
            lastProgress: view.lastProgress,
            ...(view.raftAppliedIndex !== undefined ? { raftAppliedIndex: view.raftAppliedIndex } : {}),
          },
        ]),
      );
    const stalled = observe([member("1", { learner: true, raftAppliedIndex: 100 })], memory(first), 2000);
    assert.deepEqual([stalled[0].firstObserved, stalled[0].lastProgress], [1000, 1000]);
    const moved = observe([member("1", { learner: true, raftAppliedIndex: 150 })], memory(stalled), 3000);
    assert.deepEqual([moved[0].firstObserved, moved[0].lastProgress], [1000, 3000]);
  });

  it("records when a member was first seen started (named) and keeps it; a member not started yet has none", () => {
    const first = observe([member("1"), member("2", { name: "" })], new Map(), 1000);
    assert.deepEqual(
      first.map((view) => view.startedObserved),
      [1000, undefined],
    );
    const memory = new Map(
      first.map((view) => [
        view.id,
        {
          firstObserved: view.firstObserved,
          lastProgress: view.lastProgress,
          ...(view.startedObserved !== undefined ? { startedObserved: view.startedObserved } : {}),
        },
      ]),
    );
    const second = observe([member("1"), member("2")], memory, 4000);
    assert.deepEqual(
      second.map((view) => [view.firstObserved, view.startedObserved]),
      [
        [1000, 1000],
        [1000, 4000],
      ],
    );
  });

  it("restarts the started sighting when the member is seen not answering, because etcd's peer connections to it restart too", () => {
    const first = observe([member("1")], new Map(), 1000);
    const remembered = (views: typeof first) =>
      new Map(
        views.map((view) => [
          view.id,
          {
            firstObserved: view.firstObserved,
            lastProgress: view.lastProgress,
            ...(view.startedObserved !== undefined ? { startedObserved: view.startedObserved } : {}),
          },
        ]),
      );
    const down = observe([member("1", { reachable: false })], remembered(first), 2000);
    assert.equal(down[0].startedObserved, undefined);
    assert.equal(down[0].firstObserved, 1000);
    assert.equal(observe([member("1")], remembered(down), 3000)[0].startedObserved, 3000);
    assert.equal(
      recall(
        [
          {
            id: "1",
            name: "cp-1",
            learner: false,
            healthy: false,
            leader: false,
            firstObserved: "2026-11-29T11:00:00Z",
          },
        ],
        0,
      ).get("1")?.startedObserved,
      undefined,
    );
  });

  it("records since when a member has not answered, keeps it through a restart of Quorum, and drops it once it answers", () => {
    const up = observe([member("1")], new Map(), 1000);
    assert.equal(up[0].downObserved, undefined);
    const down = observe([member("1", { reachable: false })], recall([], 2000), 2000);
    assert.equal(down[0].downObserved, 2000);
    // Through status, as a restarted Quorum reads it: the outage is still counted from the first sighting.
    const entry = {
      id: "1",
      name: "cp-1",
      learner: false,
      healthy: false,
      leader: false,
      firstObserved: new Date(1000).toISOString(),
      downSince: new Date(persisted(down[0]).downObserved!).toISOString(),
    };
    const still = observe([member("1", { reachable: false })], recall([entry], 9000), 9000);
    assert.equal(still[0].downObserved, 2000);
    const back = observe([member("1")], recall([entry], 10_000), 10_000);
    assert.equal(back[0].downObserved, undefined);
    assert.equal(persisted(back[0]).downObserved, undefined);
  });

  it("recalls first sighting, started sighting and a learner's progress from status", () => {
    const memory = recall(
      [
        {
          id: "7",
          name: "cp-a",
          learner: true,
          healthy: true,
          leader: false,
          firstObserved: "2026-11-29T11:00:00Z",
          startedObserved: "2026-11-29T11:00:04Z",
          raftAppliedIndex: 40,
          lastProgress: "2026-11-29T11:30:00Z",
        },
      ],
      0,
    );
    assert.deepEqual(memory.get("7"), {
      firstObserved: Date.parse("2026-11-29T11:00:00Z"),
      startedObserved: Date.parse("2026-11-29T11:00:04Z"),
      lastProgress: Date.parse("2026-11-29T11:30:00Z"),
      raftAppliedIndex: 40,
    });
    assert.equal(recall(undefined, 0).size, 0);
  });

  it("keeps when etcd last refused removing a member across rounds and restarts, and a garbage time as none", () => {
    const entry = {
      ...voterEntry,
      startedObserved: "2026-11-29T11:00:04Z",
      removalRefused: "2026-11-29T11:00:06Z",
    };
    const refusedAt = Date.parse("2026-11-29T11:00:06Z");
    const [seen] = observe([member("7")], recall([entry], 0), Date.parse("2026-11-29T11:00:07Z"));
    assert.equal(seen.removalRefused, refusedAt);
    assert.equal(persisted(seen).removalRefused, refusedAt);
    assert.equal(recall([{ ...entry, removalRefused: "soon" }], 0).get("7")?.removalRefused, undefined);
  });

  it("counts a started member from an older status (no startedObserved) as started when first seen, and an unstarted one as not started", () => {
    const entry = voterEntry;
    assert.equal(recall([entry], 0).get("7")?.startedObserved, Date.parse("2026-11-29T11:00:00Z"));
    assert.equal(recall([{ ...entry, name: "" }], 0).get("7")?.startedObserved, undefined);
  });

  it("restarts a clock at `now` when status lost it or holds garbage, which only delays a removal", () => {
    const memory = recall(
      [{ id: "7", name: "cp-a", learner: false, healthy: true, leader: false, firstObserved: "yesterday" }],
      5000,
    );
    assert.equal(memory.get("7")?.firstObserved, 5000);
    assert.equal(observe([member("8")], memory, 6000)[0].firstObserved, 6000);
  });

  it("persists a learner's index and progress time but no voter's, so an idle cluster writes nothing", () => {
    const [voter, learner] = observe(
      [member("1", { raftAppliedIndex: 10 }), member("2", { learner: true, raftAppliedIndex: 9 })],
      new Map(),
      1000,
    );
    assert.deepEqual(persisted(voter), { firstObserved: 1000, startedObserved: 1000 });
    assert.deepEqual(persisted(learner), {
      firstObserved: 1000,
      startedObserved: 1000,
      learnerProgress: { raftAppliedIndex: 9, lastProgress: 1000 },
    });
  });
});
