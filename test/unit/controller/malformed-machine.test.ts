// Issue 13: one malformed Machine carrying the control-plane label stopped every reconcile (InvalidSpec), hook
// releases included. It is now reported by name and the safe steps around it go on.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Machine } from "../../../src/api/capi.ts";
import { buildSnapshot, type Observation } from "../../../src/controller/snapshot-builder.ts";
import { computeStatus } from "../../../src/controller/status.ts";
import { plan } from "../../../src/core/plan.ts";
import { outdatedReasons } from "../../../src/core/selection.ts";
import type { MemberView } from "../../../src/core/snapshot.ts";
import { cluster, controlPlane, machine } from "./fixtures.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const HOUR = 3_600_000;

function at(address: string, object: Machine): Machine {
  return { ...object, status: { ...object.status, addresses: [{ type: "InternalIP", address }] } };
}

function voter(name: string, address: string, leader = false): MemberView {
  return {
    id: String(100 + Number(address.split(".").at(-1))),
    name,
    peerURLs: [`https://${address}:2380`],
    clientURLs: [`https://${address}:2379`],
    learner: false,
    reachable: true,
    leader,
    raftAppliedIndex: 10,
    errors: [],
    firstObserved: NOW - HOUR,
    startedObserved: NOW - HOUR,
    lastProgress: NOW,
  };
}

/** A Machine with the control-plane label whose spec lacks what every CAPI Machine has (bootstrap, version). */
function malformed(name: string): Machine {
  const base = machine(name);
  const { bootstrap: _bootstrap, version: _version, ...spec } = base.spec;
  return { ...base, spec: spec as Machine["spec"], status: {} };
}

function observation(): Observation {
  return {
    now: NOW,
    controlPlane: controlPlane(),
    cluster: cluster(),
    machines: [
      at("127.0.1.1", machine("cp-a", { node: "cp-a" })),
      at("127.0.1.2", machine("cp-b", { node: "cp-b" })),
      at("127.0.1.3", machine("cp-c", { node: "cp-c" })),
      // Deleted by a user; its member is already gone: its hook is what CAPI waits on.
      at("127.0.1.4", machine("cp-d", { deleting: "2026-11-29T11:59:00Z" })),
      malformed("cp-x"),
    ],
    nodes: [],
    etcd: {
      observed: true,
      members: [voter("cp-a", "127.0.1.1", true), voter("cp-b", "127.0.1.2"), voter("cp-c", "127.0.1.3")],
      alarms: [],
    },
  };
}

describe("a malformed Machine carrying the control-plane label", () => {
  it("does not stop the snapshot: the Machine is read as far as it can be and says what is wrong", () => {
    const snapshot = buildSnapshot(observation());
    const view = snapshot.machines.find((candidate) => candidate.name === "cp-x");
    assert.ok(view, "the malformed Machine is still counted");
    assert.match(view.malformed ?? "", /spec\.bootstrap/);
    assert.match(view.malformed ?? "", /spec\.version/);
    assert.equal(snapshot.machines.find((candidate) => candidate.name === "cp-a")?.malformed, undefined);
  });

  it("does not hold back releasing the hook of a Machine whose member is gone", () => {
    const { action } = plan(buildSnapshot(observation()));
    assert.equal(action.kind, "ReleaseHook", action.reason);
    assert.equal((action as { machine: string }).machine, "cp-d");
  });

  it("is named in MachinesReady with what is wrong and the fix", () => {
    const snapshot = buildSnapshot(observation());
    const decision = plan(snapshot);
    const status = computeStatus({
      controlPlane: controlPlane(),
      snapshot,
      action: decision.action,
      verdict: decision.assessment,
    });
    const condition = status.conditions?.find((candidate) => candidate.type === "MachinesReady");
    assert.equal(condition?.status, "False");
    assert.equal(condition?.reason, "MachineMalformed");
    assert.match(condition?.message ?? "", /Machine ns\/cp-x cannot be read \(it has no spec\.bootstrap/);
    assert.match(condition?.message ?? "", /fix or delete it/);
  });

  it("is not judged outdated, and leaves on a scale-down only as a Machine without a member", () => {
    const snapshot = buildSnapshot(observation());
    const view = snapshot.machines.find((candidate) => candidate.name === "cp-x")!;
    const bumped = { ...snapshot, controlPlane: { ...snapshot.controlPlane, version: "v1.32.0" } };
    assert.deepEqual(outdatedReasons(bumped, view), []);
    // Four active Machines for three replicas: the one without a member goes, and nothing is removed from etcd.
    const withoutDeleting = { ...snapshot, machines: snapshot.machines.filter((m) => m.name !== "cp-d") };
    const { action } = plan(withoutDeleting);
    assert.equal(action.kind, "DeleteMachine", action.reason);
    assert.match(action.reason, /cp-x .*already gone/);
  });
});
