// A paused control plane through the real reconcile(): `clusterctl move` creates the Cluster paused in the target,
// then the QuorumControlPlane, then (a moment later) the Secrets it owns. A reconcile in that gap must not create
// certificates (a second CA for a running cluster) or write anything else but status.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CONDITION, FINALIZER, LABEL_CLUSTER_NAME, PAUSED_ANNOTATION } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { silentLogger } from "../../../src/adapters/kube/log.ts";
import { plan } from "../../../src/core/plan.ts";
import { reconcile, type ReconcilerDeps } from "../../../src/controller/reconcile.ts";
import type { ManagementApi, WorkloadAccess } from "../../../src/ports/index.ts";
import { cluster, controlPlane, machine } from "./fixtures.ts";

const NOW = Date.parse("2026-12-02T05:00:00Z");

function world(pause: { cluster: boolean; annotation: boolean }, finalizers: string[] = []) {
  const writes: string[] = [];
  let status: QuorumControlPlane["status"];
  const base = controlPlane();
  const qcp: QuorumControlPlane = {
    ...base,
    metadata: {
      ...base.metadata,
      labels: { [LABEL_CLUSTER_NAME]: "c1" },
      finalizers,
      ...(pause.annotation ? { annotations: { [PAUSED_ANNOTATION]: "" } } : {}),
    },
  };
  const owner = { ...cluster(), spec: { ...cluster().spec, paused: pause.cluster } };
  const refuse = (what: string) => async () => {
    writes.push(what);
    return undefined as never;
  };
  const management: ManagementApi = {
    getControlPlane: async () => qcp,
    getCluster: async () => owner,
    listControlPlaneMachines: async () => ["a", "b", "c"].map((name) => machine(name)),
    getReferenced: refuse("read a template"),
    createIfAbsent: refuse("create"),
    deleteMachine: refuse("delete a Machine"),
    patchAnnotations: refuse("patch annotations"),
    setOwnerReferences: refuse("set owner references"),
    patchInPlace: refuse("patch in place"),
    setMachineConditions: refuse("set Machine conditions"),
    setFinalizers: refuse("set finalizers"),
    patchStatus: async (_object, written) => {
      status = written as QuorumControlPlane["status"];
      return qcp;
    },
    event: async () => undefined,
  };
  const workload: WorkloadAccess = {
    ensureCertificates: refuse("ensure certificates"),
    etcd: async () => {
      throw new Error("Secret ns/c1-etcd not found");
    },
    nodes: async () => [],
    // A bootstrap flavour with no workload steps (the generic one).
    workloadSteps: async () => ({ steps: [] }),
    prepareWorkload: async () => assert.fail("no workload step was planned"),
    forget: async () => undefined,
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
  return { deps, writes, status: () => status };
}

describe("reconcile of a paused QuorumControlPlane", () => {
  for (const [what, pause] of [
    ["whose Cluster has spec.paused", { cluster: true, annotation: false }],
    ["with the paused annotation", { cluster: false, annotation: true }],
  ] as const) {
    it(`${what} writes neither certificates nor its finalizer, only a status saying it is paused`, async () => {
      const { deps, writes, status } = world(pause);
      const result = await reconcile("ns", "cp", deps);
      assert.equal(result.action?.kind, "Wait");
      assert.deepEqual(writes, []);
      const paused = status()?.conditions?.find((condition) => condition.type === CONDITION.Paused);
      assert.equal(paused?.status, "True", JSON.stringify(status()?.conditions));
    });
  }

  it("unpaused, the same world gets the finalizer, then its certificates ensured", async () => {
    const first = world({ cluster: false, annotation: false });
    await reconcile("ns", "cp", first.deps);
    assert.deepEqual(first.writes, ["set finalizers"]);
    const next = world({ cluster: false, annotation: false }, [FINALIZER]);
    await reconcile("ns", "cp", next.deps).catch(() => undefined);
    assert.equal(next.writes[0], "ensure certificates", next.writes.join(", "));
  });
});
