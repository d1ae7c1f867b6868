import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Machine, MetaV1Condition } from "../../../src/api/capi.ts";
import type { Action } from "../../../src/core/actions.ts";
import { keepMachineConditions } from "../../../src/controller/machine-conditions.ts";
import type { ManagementApi } from "../../../src/ports/index.ts";
import { machine as machineView, NOW, OLD_VERSION, snapshot } from "../core/fixtures.ts";
import { machine } from "./fixtures.ts";

const WAIT: Action = { kind: "Wait", reason: "nothing to do", recheckAfterMs: 10_000 };
const EARLIER = "2026-11-29T10:00:00Z";

/** A Machine as the API server holds it, with the conditions CAPI (and Quorum, earlier) set. */
function stored(name: string, conditions: MetaV1Condition[]): Machine {
  const object = machine(name);
  object.metadata.resourceVersion = `rv-${name}`;
  object.metadata.generation = 2;
  object.status = { ...object.status, conditions };
  return object;
}

/** Records every write; `fail` makes the write of that Machine throw. */
function management(fail?: { machine: string; error: unknown }) {
  const writes: { name: string; conditions: MetaV1Condition[]; resourceVersion: string }[] = [];
  const api = {
    setMachineConditions: async (_namespace: string, name: string, conditions: MetaV1Condition[], rv: string) => {
      if (fail?.machine === name) throw fail.error;
      writes.push({ name, conditions, resourceVersion: rv });
      return `${rv}+1`;
    },
  } as unknown as ManagementApi;
  return { api, writes };
}

const ready: MetaV1Condition = { type: "Ready", status: "True", reason: "Ready", lastTransitionTime: EARLIER };

describe("writing the conditions Quorum owns on its Machines", () => {
  it("writes nothing when every Machine already carries what Quorum would write", async () => {
    const { api, writes } = management();
    const upToDate: MetaV1Condition = { type: "UpToDate", status: "True", reason: "UpToDate", message: "" };
    const result = await keepMachineConditions(
      "ns",
      [stored("cp-a", [ready, upToDate])],
      snapshot({ machines: [machineView("cp-a")] }),
      WAIT,
      api,
    );
    assert.deepEqual(result, { updated: [] });
    assert.equal(writes.length, 0);
  });

  it("keeps CAPI's conditions where they are, updates its own in place and moves lastTransitionTime only on a flip", async () => {
    const { api, writes } = management();
    const stale: MetaV1Condition = {
      type: "UpToDate",
      status: "True",
      reason: "UpToDate",
      message: "",
      lastTransitionTime: EARLIER,
    };
    const available: MetaV1Condition = { type: "Available", status: "True", reason: "Available" };
    await keepMachineConditions(
      "ns",
      [stored("cp-a", [ready, stale, available])],
      snapshot({ machines: [machineView("cp-a", { version: OLD_VERSION })] }),
      WAIT,
      api,
    );
    assert.equal(writes.length, 1);
    assert.equal(writes[0].resourceVersion, "rv-cp-a", "the write carries the resourceVersion it was decided on");
    assert.deepEqual(
      writes[0].conditions.map((condition) => condition.type),
      ["Ready", "UpToDate", "Available"],
    );
    assert.deepEqual(writes[0].conditions[0], ready);
    assert.equal(writes[0].conditions[1].status, "False");
    assert.equal(writes[0].conditions[1].lastTransitionTime, new Date(NOW).toISOString());
    assert.equal(writes[0].conditions[1].observedGeneration, 2);
  });

  it("removes OwnerRemediated from a Machine that recovered and keeps every other condition", async () => {
    const { api, writes } = management();
    const healthy: MetaV1Condition = { type: "HealthCheckSucceeded", status: "True", reason: "HealthCheckSucceeded" };
    const stale: MetaV1Condition = { type: "OwnerRemediated", status: "False", reason: "WaitingForRemediation" };
    const result = await keepMachineConditions(
      "ns",
      [stored("cp-a", [ready, healthy, stale])],
      snapshot({ machines: [machineView("cp-a", { remediationWithdrawn: true })] }),
      WAIT,
      api,
    );
    assert.deepEqual(
      writes[0].conditions.map((condition) => condition.type),
      ["Ready", "HealthCheckSucceeded", "UpToDate"],
    );
    assert.match(result.updated[0], /OwnerRemediated removed/);
  });

  it("stops quietly on a conflict (CAPI wrote the Machine meanwhile) and reports any other failure naming the Machine", async () => {
    const conflict = management({ machine: "cp-a", error: { code: 409 } });
    const machines = [stored("cp-a", [ready]), stored("cp-b", [ready])];
    const view = snapshot({ machines: [machineView("cp-a"), machineView("cp-b")] });
    assert.deepEqual(await keepMachineConditions("ns", machines, view, WAIT, conflict.api), { updated: [] });
    assert.equal(conflict.writes.length, 0, "the next reconcile, on the new Machine, decides again");

    const forbidden = management({ machine: "cp-a", error: new Error("machines.cluster.x-k8s.io is forbidden") });
    const result = await keepMachineConditions("ns", machines, view, WAIT, forbidden.api);
    assert.equal(result.problem?.reason, "MachineConditionsFailed");
    assert.match(result.problem?.message ?? "", /UpToDate condition of Machine ns\/cp-a: .*forbidden/);
  });
});
