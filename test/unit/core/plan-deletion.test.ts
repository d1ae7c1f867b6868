// Deleting a QuorumControlPlane is bounded (issue 13, item 1): members go one at a time while etcd can be read and
// keeps quorum; when it cannot, or once spec.deletion.etcdMemberRemovalTimeout has passed since the deletion, the
// hooks are released and the Machines deleted without removing their members, and every such step names them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Action } from "../../../src/core/actions.ts";
import { assess } from "../../../src/core/assess.ts";
import { forcedDeletion } from "../../../src/core/deletion.ts";
import { plan } from "../../../src/core/plan.ts";
import type { Snapshot } from "../../../src/core/snapshot.ts";
import {
  applyIdeal,
  dead,
  healthyMachines,
  idOf,
  machine,
  MINUTE,
  NOW,
  passesTime,
  SECOND,
  snapshot,
} from "./fixtures.ts";

const deleting = (startedAt = NOW - MINUTE) => ({
  deleting: true,
  deletion: { startedAt, etcdMemberRemovalTimeoutMs: 10 * MINUTE },
});

/** Plans and applies until no Machine is left (or a Wait the idealised world never ends), returning the actions. */
function walk(start: Snapshot, limit = 40): { actions: Action[]; end: Snapshot } {
  const actions: Action[] = [];
  let current = start;
  for (let i = 0; i < limit && current.machines.length > 0; i++) {
    const { action } = plan(current);
    actions.push(action);
    if (action.kind === "Wait" && !passesTime(action)) break;
    current = applyIdeal(current, action);
  }
  return { actions, end: current };
}

const membersLeftOf = (action: Action) => ("membersLeft" in action ? (action.membersLeft ?? []) : []);

describe("deleting a control plane", () => {
  it("removes every member but the last one first while etcd is healthy, and leaves none in etcd", () => {
    const { actions, end } = walk(snapshot({ ...healthyMachines(3), controlPlane: deleting() }));
    assert.equal(end.machines.length, 0, actions.map((action) => `${action.kind}: ${action.reason}`).join("\n"));
    assert.equal(actions.filter((action) => action.kind === "RemoveMember").length, 2);
    assert.deepEqual(actions.flatMap(membersLeftOf), []);
  });

  it("deletes the Machines at once when etcd cannot be read, naming each member it leaves", () => {
    const start = snapshot({
      machines: healthyMachines(3).machines,
      observed: false,
      error: "dial tcp 10.0.0.2:2379: i/o timeout",
      controlPlane: deleting(NOW - 5 * SECOND),
    });
    const first = plan(start).action;
    assert.equal(first.kind, "DeleteMachine");
    assert.match(first.reason, /etcd cannot be read \(dial tcp 10\.0\.0\.2:2379: i\/o timeout\)/);
    const { actions, end } = walk(start);
    assert.equal(end.machines.length, 0);
    assert.deepEqual(
      actions.filter((action) => action.kind === "ReleaseHook").map((action) => membersLeftOf(action)),
      ["m-1", "m-2", "m-3"].map((name) => [`etcd member ${name} (machine ${name}), if it has one`]),
    );
    assert.ok(actions.every((action) => action.kind !== "RemoveMember" && action.kind !== "Wait"));
  });

  it("releases the hook of a Machine already being deleted before deleting the next one", () => {
    const { machines } = healthyMachines(2);
    machines[1] = { ...machines[1], deleting: NOW - 30 * SECOND };
    const { action } = plan(snapshot({ machines, observed: false, error: "refused", controlPlane: deleting() }));
    assert.equal(action.kind, "ReleaseHook");
    assert.equal(action.machine, "m-2");
  });

  it("deletes the Machines without removing members when etcd has lost quorum, naming the members by id", () => {
    const parts = healthyMachines(3);
    parts.members[1] = dead("m-2");
    parts.members[2] = dead("m-3");
    const decision = plan(snapshot({ ...parts, controlPlane: deleting() }));
    assert.equal(decision.action.kind, "DeleteMachine");
    assert.match(decision.action.reason, /lost quorum \(1 of 3 voters healthy, quorum 2\)/);
    assert.match(decision.action.reason, new RegExp(`member m-1 \\(id ${idOf("m-1")}, machine m-1\\)`));
  });

  it("keeps waiting on a blocked removal until the bound, then lets the Machines go", () => {
    const parts = healthyMachines(3);
    const alarm = [{ memberId: idOf("m-2"), alarm: "NOSPACE" }];
    const before = plan(snapshot({ ...parts, alarms: alarm, controlPlane: deleting(NOW - 9 * MINUTE) })).action;
    assert.equal(before.kind, "Wait", before.reason);
    const after = plan(snapshot({ ...parts, alarms: alarm, controlPlane: deleting(NOW - 10 * MINUTE) })).action;
    assert.equal(after.kind, "DeleteMachine", after.reason);
    assert.match(after.reason, /spec\.deletion\.etcdMemberRemovalTimeout \(10m\)/);
  });

  it("counts the bound from the deletion, not from when Quorum first saw it", () => {
    const view = snapshot({ ...healthyMachines(3), controlPlane: deleting(NOW - 11 * MINUTE) });
    assert.ok(forcedDeletion(view, assess(view, { kind: "Observe" })));
    const fresh = snapshot({ ...healthyMachines(3), controlPlane: deleting(NOW) });
    assert.equal(forcedDeletion(fresh, assess(fresh, { kind: "Observe" })), undefined);
  });

  it("names the member of a Machine without Quorum's hook when deleting it, since nothing holds its infrastructure", () => {
    const parts = healthyMachines(1);
    parts.machines[0] = { ...parts.machines[0], hasPreTerminateHook: false };
    const { action } = plan(snapshot({ ...parts, controlPlane: deleting(NOW - 20 * MINUTE) }));
    assert.equal(action.kind, "DeleteMachine");
    assert.deepEqual(membersLeftOf(action), [`member m-1 (id ${idOf("m-1")}, machine m-1)`]);
  });

  it("waits for CAPI, naming the Machines, once every hook is released", () => {
    const machines = [machine("m-1", { deleting: NOW - MINUTE, hasPreTerminateHook: false })];
    const { action } = plan(snapshot({ machines, observed: false, error: "refused", controlPlane: deleting() }));
    assert.equal(action.kind, "Wait");
    assert.match(action.reason, /waiting for CAPI to delete machine m-1/);
  });

  it("stays paused while the Cluster is paused, even with etcd unreadable", () => {
    const view = snapshot({
      machines: healthyMachines(3).machines,
      observed: false,
      error: "refused",
      cluster: { paused: true },
      controlPlane: deleting(NOW - 20 * MINUTE),
    });
    const { action } = plan(view);
    assert.equal(action.kind, "Wait");
    assert.match(action.reason, /paused/);
  });

  it("does not delete its Machines beside another owner's Machines in the same Cluster, but still releases hooks", () => {
    const foreignMachines = [{ name: "kcp-1", owner: "KubeadmControlPlane default/kcp", sameCluster: true, why: "x" }];
    const { machines } = healthyMachines(2);
    const held = plan(
      snapshot({ machines, observed: false, error: "refused", cluster: { foreignMachines }, controlPlane: deleting() }),
    ).action;
    assert.equal(held.kind, "Wait", held.reason);
    machines[0] = { ...machines[0], deleting: NOW - MINUTE };
    const released = plan(
      snapshot({ machines, observed: false, error: "refused", cluster: { foreignMachines }, controlPlane: deleting() }),
    ).action;
    assert.equal(released.kind, "ReleaseHook", released.reason);
  });
});
