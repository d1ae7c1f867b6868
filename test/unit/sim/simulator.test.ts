// The simulator must catch a planner that breaks the rules, and replay a schedule exactly from its seed;
// otherwise "0 violations" would prove nothing. These use deliberately wrong toy planners, not the real one.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Action } from "../../../src/core/actions.ts";
import type { Snapshot } from "../../../src/core/snapshot.ts";
import { Prng, scheduleSeed } from "../../sim/prng.ts";
import { runSchedule, type PlannerFactory } from "../../sim/run.ts";

const wait: Action = { kind: "Wait", reason: "toy planner waits", recheckAfterMs: 10_000 };

/** Removes some voter every reconcile, however unhealthy the cluster is. */
const removesAnyVoter: PlannerFactory = () => (snapshot: Snapshot) => {
  const voter = snapshot.etcd.members.find((member) => !member.learner);
  return { action: voter ? { kind: "RemoveMember", memberId: voter.id, memberName: voter.name, reason: "toy" } : wait };
};

/** Deletes the oldest Machine straight away, never touching its member. */
const deletesMachinesFirst: PlannerFactory = () => (snapshot: Snapshot) => {
  const machine = snapshot.machines.find((candidate) => candidate.deleting === undefined);
  return {
    action:
      machine && snapshot.machines.length > 1 ? { kind: "DeleteMachine", machine: machine.name, reason: "toy" } : wait,
  };
};

/** Lets every deleting Machine go at once, and otherwise deletes Machines down to one. */
const releasesHooksEagerly: PlannerFactory = () => (snapshot: Snapshot) => {
  const deleting = snapshot.machines.find(
    (candidate) => candidate.deleting !== undefined && candidate.hasPreTerminateHook,
  );
  if (deleting) return { action: { kind: "ReleaseHook", machine: deleting.name, reason: "toy" } };
  const machine = snapshot.machines.find((candidate) => candidate.deleting === undefined);
  return {
    action:
      machine && snapshot.machines.length > 1 ? { kind: "DeleteMachine", machine: machine.name, reason: "toy" } : wait,
  };
};

/** Never does anything. */
const alwaysWaits: PlannerFactory = () => () => ({ action: wait });

async function outcomes(
  planner: PlannerFactory,
  schedules: number,
): Promise<{ violation: number; stuck: number; ok: number; rules: Set<string> }> {
  const counts = { violation: 0, stuck: 0, ok: 0, rules: new Set<string>() };
  for (let index = 0; index < schedules; index++) {
    const result = await runSchedule(scheduleSeed(7, index), planner);
    counts[result.outcome]++;
    if (result.finding) counts.rules.add(result.finding.rule);
  }
  return counts;
}

describe("simulator", () => {
  it("reports a violation when a planner removes voters without regard to quorum", async () => {
    const result = await outcomes(removesAnyVoter, 50);
    assert.ok(
      result.violation > 0,
      `expected violations, got ${JSON.stringify({ ...result, rules: [...result.rules] })}`,
    );
    assert.ok(result.rules.has("2 projected healthy majority") || result.rules.has("1 quorum kept"));
  });

  it("reports a violation when a planner deletes a Machine whose member is a healthy voter", async () => {
    const result = await outcomes(deletesMachinesFirst, 50);
    assert.ok(result.rules.has("3 member removed before its machine"), `rules seen: ${[...result.rules].join(", ")}`);
  });

  it("reports a violation when a planner releases the hook of a Machine whose member is still in etcd", async () => {
    let released = false;
    for (let index = 0; index < 50 && !released; index++) {
      const result = await runSchedule(scheduleSeed(7, index), releasesHooksEagerly);
      released = result.finding?.message.startsWith("released the pre-terminate hook") ?? false;
    }
    assert.ok(released);
  });

  it("reports stuck, not a violation, when a planner only waits while the spec needs work", async () => {
    const result = await outcomes(alwaysWaits, 50);
    assert.ok(result.stuck > 0, "a planner that never acts must be stuck in schedules whose spec changed");
    assert.equal(result.violation, 0);
  });

  it("replays a schedule step by step identically from its seed", async () => {
    const seed = scheduleSeed(3, 11);
    const first = await runSchedule(seed, deletesMachinesFirst, { trace: true });
    const second = await runSchedule(seed, deletesMachinesFirst, { trace: true });
    assert.deepEqual(second.trace, first.trace);
    assert.ok(first.trace.length > 1);
  });
});

describe("prng", () => {
  it("gives the same sequence for the same seed and another for another seed", () => {
    const draw = (seed: number) =>
      Array.from(
        { length: 5 },
        (
          (rng) => () =>
            rng.uint32()
        )(new Prng(seed)),
      );
    assert.deepEqual(draw(42), draw(42));
    assert.notDeepEqual(draw(42), draw(43));
  });

  it("keeps int() within its inclusive bounds", () => {
    const rng = new Prng(1);
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) seen.add(rng.int(2, 4));
    assert.deepEqual([...seen].sort(), [2, 3, 4]);
  });

  it("derives distinct schedule seeds from one run seed", () => {
    const seeds = new Set(Array.from({ length: 1000 }, (_, index) => scheduleSeed(1, index)));
    assert.equal(seeds.size, 1000);
  });
});
