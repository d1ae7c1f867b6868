// A QuorumControlPlane being deleted through the real reconcile(): no certificate work at all (in a namespace being
// deleted creates are Forbidden, and a garbage CA must not keep the finalizer), etcd read with the existing CA when
// it can be, and when it cannot the Machines go without their members, with a Warning Event naming them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Machine } from "../../../src/api/capi.ts";
import { FINALIZER, LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { SecretGarbageError } from "../../../src/adapters/errors.ts";
import { silentLogger } from "../../../src/adapters/kube/log.ts";
import { plan } from "../../../src/core/plan.ts";
import { reconcile, type ReconcilerDeps } from "../../../src/controller/reconcile.ts";
import type { ManagementApi, WorkloadAccess } from "../../../src/ports/index.ts";
import { cluster, controlPlane, machine } from "./fixtures.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");

function world(machines: Machine[]) {
  const calls: string[] = [];
  const qcp: QuorumControlPlane = {
    ...controlPlane(),
    metadata: {
      ...controlPlane().metadata,
      finalizers: [FINALIZER],
      deletionTimestamp: "2026-11-29T11:59:00Z",
      labels: { [LABEL_CLUSTER_NAME]: "c1" },
    },
  };
  const management: ManagementApi = {
    getControlPlane: async () => qcp,
    getCluster: async () => cluster(),
    listControlPlaneMachines: async () => machines,
    getReferenced: async () => assert.fail("a deletion reads no template"),
    createIfAbsent: async () => assert.fail("a deletion creates nothing"),
    deleteMachine: async (_namespace, name) => {
      calls.push(`delete ${name}`);
    },
    patchAnnotations: async (_apiVersion, _kind, _namespace, name, annotations) => {
      calls.push(`annotate ${name} ${JSON.stringify(annotations)}`);
      return undefined;
    },
    setOwnerReferences: async (object) => assert.fail(`no owner reference patch expected (${object.kind})`),
    patchInPlace: async (ref) => assert.fail(`no in-place patch expected (${ref.kind} ${ref.name})`),
    setMachineConditions: async (_namespace, name) => assert.fail(`no Machine condition write expected (${name})`),
    setFinalizers: async (_object, finalizers) => {
      calls.push(`finalizers ${JSON.stringify(finalizers)}`);
      return undefined;
    },
    patchStatus: async () => qcp,
    event: async (_object, type, reason, message) => {
      calls.push(`event ${type} ${reason}: ${message}`);
    },
  };
  const workload: WorkloadAccess = {
    ensureCertificates: async () => assert.fail("a deletion must not ensure certificates"),
    etcd: async () => {
      throw new SecretGarbageError(
        { namespace: "ns", name: "c1-etcd" },
        "tls.crt",
        "is not a PEM certificate",
        "restore it",
      );
    },
    nodes: async () => [],
    // A bootstrap flavour with no workload steps (the generic one).
    workloadSteps: async () => ({ steps: [] }),
    prepareWorkload: async () => assert.fail("no workload step was planned"),
    forget: async () => {
      calls.push("forget");
    },
  };
  const deps: ReconcilerDeps = {
    management,
    workload,
    planner: plan,
    clock: () => NOW,
    log: silentLogger,
    crash: { afterAction: () => undefined },
    etcdPollIntervalMs: 1_000,
  };
  return { deps, calls };
}

describe("reconcile of a QuorumControlPlane being deleted", () => {
  it("with a garbage etcd CA deletes a Machine instead of failing on the certificates", async () => {
    const { deps, calls } = world(["a", "b"].map((name) => machine(name)));
    const result = await reconcile("ns", "cp", deps);
    assert.equal(result.action?.kind, "DeleteMachine");
    assert.deepEqual(
      calls.filter((call) => !call.startsWith("event")),
      ["delete a"],
    );
  });

  it("releases the hook of a deleting Machine with a Warning Event naming the member it leaves in etcd", async () => {
    const { deps, calls } = world([machine("a", { deleting: "2026-11-29T11:59:30Z" })]);
    const result = await reconcile("ns", "cp", deps);
    assert.equal(result.action?.kind, "ReleaseHook");
    const warning = calls.find((call) => call.startsWith("event Warning EtcdMembersNotRemoved"));
    assert.ok(warning, calls.join("\n"));
    assert.match(warning, /without removing etcd member a \(machine a\), if it has one/);
    assert.match(warning, /Secret ns\/c1-etcd: data key "tls\.crt" is not a PEM certificate/);
  });

  it("releases the finalizer once no Machine is left, without touching the certificates", async () => {
    const { deps, calls } = world([]);
    await reconcile("ns", "cp", deps);
    assert.deepEqual(calls, ["finalizers []", "forget"]);
  });
});
