// The simulator earns its "0 violations" only if it catches the bugs that hurt real clusters. Each seed bug of
// issues 2 and 12 is planted into a copy of the planner through makePlanner's parts (test/sim/planners.ts), never into
// the real one, and must be reported within 2,000 schedules; the real planner must come through clean.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { REMOVE_MEMBER_ANNOTATION } from "../../../src/api/constants.ts";
import { PLANNERS, type PlannerName } from "../../sim/planners.ts";
import { scheduleSeed } from "../../sim/prng.ts";
import { runSchedule, type ScheduleResult } from "../../sim/run.ts";

const RUN_SEED = 1;
const BUDGET = 2000;

/** Runs schedules until one ends with `outcome` (under `rule`, if given); undefined after `budget` schedules. */
function firstWith(variant: PlannerName, outcome: ScheduleResult["outcome"], rule?: RegExp, budget = BUDGET): ScheduleResult | undefined {
  for (let index = 0; index < budget; index++) {
    const result = runSchedule(scheduleSeed(RUN_SEED, index), PLANNERS[variant]);
    if (result.outcome === outcome && (!rule || rule.test(result.finding?.rule ?? ""))) return result;
  }
  return undefined;
}

describe("seed bugs the simulator must catch", () => {
  it("reports a violation when the health check ignores members that map to no Machine (the k3s ghost bug)", () => {
    // The unsafe removal itself (rule 2), not merely a slow convergence.
    const found = firstWith("ghost-blind", "violation", /^2 /);
    assert.ok(found, `no removal violation within ${BUDGET} schedules`);
  });

  it("reports stuck when the health check demands as many Machines as members whatever the operation (the KCP bug)", () => {
    const found = firstWith("one-to-one", "stuck");
    assert.ok(found, `no stuck schedule within ${BUDGET} schedules`);
    assert.equal(found.finding!.rule, "5 never stuck");
  });

  it("reports a violation when scale-down picks a random Machine instead of finishing the one whose member is gone", () => {
    const found = firstWith("random-scale-down", "violation", /^2 /);
    assert.ok(found, `no removal violation within ${BUDGET} schedules`);
  });

  it("reports a violation when members are mapped to Machines by name only, ties by member id (issue 12, bug 2)", () => {
    const found = firstWith("name-only-mapping", "violation");
    assert.ok(found, `no violation within ${BUDGET} schedules`);
  });

  it("reports a violation when scale-down takes the oldest Machine whatever its member's health (issue 12, bug 3)", () => {
    const found = firstWith("oldest-first-scale-down", "violation", /^2 /);
    assert.ok(found, `no removal violation within ${BUDGET} schedules`);
  });

  it("finds neither violations nor stuck schedules with the real planner over 200 schedules", () => {
    const failures: string[] = [];
    for (let index = 0; index < 200; index++) {
      const result = runSchedule(scheduleSeed(RUN_SEED, index), PLANNERS.real);
      // An alive stray member (the ghost-stray fault) is unmapped: by design only a user may remove it, with the
      // annotation the Wait names. Until the simulated world has that user, such a schedule waits on them, not stuck.
      const waitsOnUser = result.outcome === "stuck" && (result.finding?.message ?? "").includes(`${REMOVE_MEMBER_ANNOTATION}=`);
      if (result.outcome !== "ok" && !waitsOnUser) failures.push(`seed ${result.seed}: ${result.outcome} [${result.finding?.rule}] ${result.finding?.message}`);
    }
    assert.deepEqual(failures, []);
  });
});
