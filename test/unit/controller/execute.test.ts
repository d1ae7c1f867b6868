import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { execute, type ExecutionContext } from "../../../src/controller/execute.ts";
import type { ManagementApi } from "../../../src/ports/index.ts";
import { buildSnapshot } from "../../../src/controller/snapshot-builder.ts";
import { cluster, controlPlane, machine } from "./fixtures.ts";

function recordingManagement(calls: string[]): ManagementApi {
  const record =
    (name: string) =>
    async (...args: unknown[]) => {
      calls.push(`${name} ${JSON.stringify(args.slice(-2))}`);
      return undefined as never;
    };
  return {
    getControlPlane: record("getControlPlane"),
    getCluster: record("getCluster"),
    listControlPlaneMachines: record("listControlPlaneMachines"),
    getReferenced: record("getReferenced"),
    createIfAbsent: record("createIfAbsent"),
    deleteMachine: async (namespace, name) => {
      calls.push(`deleteMachine ${namespace}/${name}`);
    },
    patchAnnotations: record("patchAnnotations"),
    setFinalizers: record("setFinalizers"),
    patchStatus: async (_qcp, status) => {
      calls.push(`patchStatus ${JSON.stringify(status)}`);
      return controlPlane();
    },
    event: record("event"),
  };
}

function context(calls: string[], last?: { machine: string; time: string; retryCount: number }): ExecutionContext {
  const qcp = controlPlane();
  if (last) qcp.status = { lastRemediation: last };
  const machines = [machine("cp-a")];
  const snapshot = buildSnapshot({
    now: Date.parse("2026-11-29T12:00:00Z"),
    controlPlane: qcp,
    cluster: cluster(),
    machines,
    nodes: [],
    etcd: { observed: true, members: [], alarms: [] },
  });
  return {
    controlPlane: qcp,
    clusterName: "c1",
    machines,
    snapshot,
    management: recordingManagement(calls),
    etcd: async () => assert.fail("no etcd call expected"),
  };
}

describe("executor", () => {
  it("records a remediation in status before deleting the Machine, so a crash in between keeps the retry count", async () => {
    const calls: string[] = [];
    await execute({ kind: "Remediate", machine: "cp-a", reason: "test" }, context(calls));
    assert.equal(calls.length, 2);
    assert.match(calls[0], /^patchStatus .*"lastRemediation":\{"machine":"cp-a".*"retryCount":0/);
    assert.equal(calls[1], "deleteMachine ns/cp-a");
  });

  it("keeps the retry count when it remediates the same Machine again after a crash", async () => {
    const calls: string[] = [];
    await execute(
      { kind: "Remediate", machine: "cp-a", reason: "test" },
      context(calls, { machine: "cp-a", time: "2026-11-29T11:59:00Z", retryCount: 2 }),
    );
    assert.match(calls[0], /"machine":"cp-a","time":"2026-11-29T11:59:00.000Z","retryCount":2/);
  });

  it("counts a new retry when another Machine is remediated within the healthy period", async () => {
    const calls: string[] = [];
    await execute(
      { kind: "Remediate", machine: "cp-a", reason: "test" },
      context(calls, { machine: "cp-old", time: "2026-11-29T11:50:00Z", retryCount: 1 }),
    );
    assert.match(calls[0], /"retryCount":2/);
  });
});
