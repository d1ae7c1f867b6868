// The planner marks a Wait `settled` only when nothing can call for a step but etcd itself: the controller then
// polls that cluster at --etcd-idle-poll-interval instead of --etcd-poll-interval (issue 19: a real etcd round
// costs about 5 ms of CPU, so polling 2,000 settled clusters every 10 s would take a core).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Action } from "../../../src/core/actions.ts";
import { plan } from "../../../src/core/plan.ts";
import type { Snapshot } from "../../../src/core/snapshot.ts";
import { dead, healthyMachines, machine, member, MINUTE, NOW, snapshot } from "./fixtures.ts";

function decide(start: Snapshot): Action {
  return plan(start).action;
}

function settled(action: Action): boolean {
  return action.kind === "Wait" && action.settled === true;
}

describe("plan: settled clusters", () => {
  it("marks the Wait of a control plane that matches its spec with every member a healthy voter", () => {
    const action = decide(snapshot(healthyMachines(3)));
    assert.equal(action.kind, "Wait");
    assert.ok(settled(action), JSON.stringify(action));
    const one = decide(snapshot({ ...healthyMachines(1), controlPlane: { replicas: 1 } }));
    assert.ok(settled(one), `a single healthy Machine is settled too: ${one.reason}`);
  });

  it("does not mark it while a voter is down, though there is nothing to do", () => {
    const three = healthyMachines(3);
    const members = three.members.map((candidate) => (candidate.name === "m-3" ? dead("m-3") : candidate));
    const action = decide(snapshot({ machines: three.machines, members }));
    assert.equal(action.kind, "Wait");
    assert.ok(!settled(action), `a down member must be watched at the short interval: ${action.reason}`);
  });

  it("does not mark it while a member maps to no Machine (a ghost in its grace period)", () => {
    const three = healthyMachines(3);
    const ghost = member("stray", { firstObserved: NOW - 10_000, startedObserved: NOW - 10_000 });
    const action = decide(snapshot({ machines: three.machines, members: [...three.members, ghost] }));
    assert.ok(!settled(action), `${action.kind}: ${action.reason}`);
  });

  it("does not mark it while a learner catches up or a Machine has not joined", () => {
    const three = healthyMachines(3);
    const learning = three.members.map((candidate) =>
      candidate.name === "m-3" ? { ...candidate, learner: true } : candidate,
    );
    const withLearner = decide(snapshot({ machines: three.machines, members: learning }));
    assert.ok(!settled(withLearner), `${withLearner.kind}: ${withLearner.reason}`);

    const booting = machine("m-4", { created: NOW - MINUTE, nodeName: undefined });
    const joining = decide(snapshot({ machines: [...three.machines, booting], members: three.members }));
    assert.ok(!settled(joining), `${joining.kind}: ${joining.reason}`);
  });

  it("does not mark it when etcd could not be read", () => {
    const action = decide(snapshot({ ...healthyMachines(3), observed: false, error: "no endpoint answered" }));
    assert.ok(!settled(action), `${action.kind}: ${action.reason}`);
  });
});
