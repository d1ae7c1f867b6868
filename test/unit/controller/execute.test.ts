import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { execute, UnsupportedTemplateError, type ExecutionContext } from "../../../src/controller/execute.ts";
import type { EtcdClusterClient, EtcdMember, ManagementApi } from "../../../src/ports/index.ts";
import { MEMBER_REMOVED_ANNOTATION } from "../../../src/api/constants.ts";
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
    patchAnnotations: async (_apiVersion, kind, namespace, name, annotations) => {
      calls.push(`patchAnnotations ${kind} ${namespace}/${name} ${JSON.stringify(annotations)}`);
      return undefined;
    },
    setOwnerReferences: record("setOwnerReferences"),
    patchInPlace: record("patchInPlace"),
    setMachineConditions: record("setMachineConditions"),
    setFinalizers: record("setFinalizers"),
    patchStatus: async (_qcp, status) => {
      calls.push(`patchStatus ${JSON.stringify(status)}`);
      return controlPlane();
    },
    event: record("event"),
  };
}

function context(calls: string[]): ExecutionContext {
  const qcp = controlPlane();
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
    prepareWorkload: async (step) => {
      calls.push(`prepare ${step}`);
      return `prepared ${step}`;
    },
    clock: () => Date.parse("2026-11-29T12:00:01Z"),
  };
}

/** A fake etcd (unit test only): three started voters a, b, c; `down` stop answering status calls. */
function threeVoters(calls: string[], down: Set<string>): { members: EtcdMember[]; client: EtcdClusterClient } {
  const members: EtcdMember[] = ["a", "b", "c"].map((name, index) => ({
    id: String(index + 1),
    name,
    peerURLs: [`https://10.0.0.${index + 1}:2380`],
    clientURLs: [`https://10.0.0.${index + 1}:2379`],
    learner: false,
  }));
  const refuse = async (): Promise<never> => assert.fail("unexpected etcd call");
  const client: EtcdClusterClient = {
    listMembers: async () => members,
    memberStatuses: async (asked = members) => {
      calls.push(`memberStatuses ${asked.map((member) => member.name).join(",")}`);
      return asked.map((member) => ({
        memberId: member.id,
        reachable: !down.has(member.name),
        leader: member.name === "a",
        errors: down.has(member.name) ? ["connection refused"] : [],
      }));
    },
    alarms: async () => [],
    addMember: refuse,
    promoteLearner: refuse,
    removeMember: async (memberId) => {
      calls.push(`removeMember ${memberId}`);
      return { removed: true };
    },
    moveLeader: refuse,
    close: async () => {},
  };
  return { members, client };
}

function removalContext(calls: string[], down: Set<string>): ExecutionContext {
  const base = context(calls);
  const { members, client } = threeVoters(calls, down);
  const snapshot = buildSnapshot({
    now: Date.parse("2026-11-29T12:00:00Z"),
    controlPlane: base.controlPlane,
    cluster: cluster(),
    machines: base.machines,
    nodes: [],
    etcd: {
      observed: true,
      members: members.map((member) => ({
        ...member,
        reachable: true,
        leader: member.name === "a",
        errors: [],
        firstObserved: 0,
        startedObserved: 0,
        lastProgress: 0,
      })),
      alarms: [],
    },
  });
  return { ...base, snapshot, etcd: async () => client };
}

describe("executor", () => {
  it("removes a member only after every other voter that was healthy in the plan answers again", async () => {
    const calls: string[] = [];
    const result = await execute(
      { kind: "RemoveMember", memberId: "3", memberName: "c", machine: "cp-c", reason: "test" },
      removalContext(calls, new Set()),
    );
    assert.deepEqual(calls, ["memberStatuses a,b", "removeMember 3"]);
    assert.equal(result.deferred, undefined);
    assert.equal(result.logMeta?.votersConfirmedAt, "2026-11-29T12:00:01.000Z");
  });

  it("does not remove a member when a voter stopped answering since the plan (the e2e member-down race)", async () => {
    const calls: string[] = [];
    const result = await execute(
      { kind: "RemoveMember", memberId: "3", memberName: "c", machine: "cp-c", reason: "test" },
      removalContext(calls, new Set(["b"])),
    );
    assert.deepEqual(calls, ["memberStatuses a,b"]);
    assert.equal(result.deferred, true);
    assert.match(result.message, /voter b stopped answering since the plan/);
  });

  it("records on the Machine which member it removes before removing it, once, and goes on when the Machine is gone", async () => {
    const calls: string[] = [];
    const base = removalContext(calls, new Set());
    const leaving = machine("cp-c");
    const action = { kind: "RemoveMember", memberId: "3", memberName: "c", machine: "cp-c", reason: "test" } as const;
    await execute(action, { ...base, machines: [...base.machines, leaving] });
    assert.deepEqual(calls, [
      "memberStatuses a,b",
      `patchAnnotations Machine ns/cp-c {"${MEMBER_REMOVED_ANNOTATION}":"3"}`,
      "removeMember 3",
    ]);

    calls.length = 0;
    leaving.metadata.annotations = { ...leaving.metadata.annotations, [MEMBER_REMOVED_ANNOTATION]: "3" };
    await execute(action, { ...base, machines: [...base.machines, leaving] });
    assert.deepEqual(calls, ["memberStatuses a,b", "removeMember 3"]);

    calls.length = 0;
    const gone: ManagementApi = {
      ...base.management,
      patchAnnotations: async () => {
        calls.push("patchAnnotations 404");
        throw Object.assign(new Error('machines.cluster.x-k8s.io "cp-c" not found'), { code: 404 });
      },
    };
    await execute(action, { ...base, management: gone, machines: [...base.machines, machine("cp-c")] });
    assert.deepEqual(calls, ["memberStatuses a,b", "patchAnnotations 404", "removeMember 3"]);
  });

  it("refuses to create a Machine from a bootstrap template with external etcd, creating nothing and naming the field", async () => {
    const calls: string[] = [];
    const ctx = context(calls);
    ctx.management.getReferenced = async (ref) => {
      calls.push(`getReferenced ${ref.kind}`);
      return {
        apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
        kind: ref.kind,
        metadata: { name: ref.name, namespace: "ns" },
        spec: {
          template: { spec: { clusterConfiguration: { etcd: { external: { endpoints: ["https://e:2379"] } } } } },
        },
      };
    };
    await assert.rejects(execute({ kind: "CreateMachine", reason: "test" }, ctx), (error: unknown) => {
      assert.ok(error instanceof UnsupportedTemplateError);
      assert.equal(error.reason, "UnsupportedTemplate");
      assert.match(
        error.message,
        /ProcessBootstrapConfigTemplate ns\/cp-boot sets spec\.template\.spec\.clusterConfiguration\.etcd\.external/,
      );
      return true;
    });
    assert.deepEqual(
      calls.filter((call) => call.startsWith("createIfAbsent")),
      [],
    );
  });

  it("records the planned remediation in an annotation before deleting the Machine, so neither a crash in between nor clusterctl move (which drops status) loses the retry count", async () => {
    const calls: string[] = [];
    const remediation = { machine: "cp-a", time: Date.parse("2026-11-29T11:59:00Z"), retryCount: 2 };
    const result = await execute({ kind: "Remediate", machine: "cp-a", remediation, reason: "test" }, context(calls));
    assert.deepEqual(calls, [
      `patchAnnotations QuorumControlPlane ns/cp {"controlplane.cluster.x-k8s.io/quorum-last-remediation":"{\\"machine\\":\\"cp-a\\",\\"time\\":\\"2026-11-29T11:59:00.000Z\\",\\"retryCount\\":2}"}`,
      "deleteMachine ns/cp-a",
    ]);
    assert.deepEqual(result.statusUpdate, {
      lastRemediation: { machine: "cp-a", time: "2026-11-29T11:59:00.000Z", retryCount: 2 },
    });
  });
});
