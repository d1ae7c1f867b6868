// Whatever way a QuorumControlPlane goes, what the workload adapters keep for its Cluster (etcd client, Quorum's
// private keys, parsed CAs) goes with it: the finalizer's release is not the only way out (clusterctl move removes
// the finalizers of the source's objects before deleting them; a control plane can leave --watch-filter's scope).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Informer, WatchTarget } from "../../../src/adapters/kube/informer.ts";
import type { ReconcileContext } from "../../../src/adapters/kube/manager.ts";
import type { KubeObject } from "../../../src/adapters/kube/rest.ts";
import { silentLogger } from "../../../src/adapters/kube/log.ts";
import { LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { plan } from "../../../src/core/plan.ts";
import { quorumController } from "../../../src/controller/controller.ts";
import type { WorkloadAccess } from "../../../src/ports/index.ts";
import { controlPlane, fakeManagement } from "./fixtures.ts";

function labelledFor(name: string, clusterName: string): QuorumControlPlane {
  const qcp = controlPlane();
  return { ...qcp, metadata: { ...qcp.metadata, name, labels: { [LABEL_CLUSTER_NAME]: clusterName } } };
}

function world() {
  const controlPlanes = new Map<string, QuorumControlPlane>();
  const forgotten: string[] = [];
  const workload: WorkloadAccess = {
    ensureCertificates: async () => assert.fail("no Cluster exists: nothing gets as far as certificates"),
    etcd: async () => assert.fail("no etcd read expected"),
    nodes: async () => [],
    workloadSteps: async () => ({ steps: [] }),
    prepareWorkload: async () => assert.fail("no workload step expected"),
    forget: async (namespace, clusterName) => void forgotten.push(`${namespace}/${clusterName}`),
  };
  const controller = quorumController({
    deps: {
      // No Cluster exists: each reconcile stops at "ClusterNotFound" after reading the control plane.
      management: fakeManagement(controlPlane(), () => [], { getCluster: async () => undefined }),
      workload,
      planner: plan,
      clock: () => 0,
      log: silentLogger,
      crash: { afterAction: () => undefined },
      etcdPollIntervalMs: 10_000,
    },
  });
  const informer = (target: WatchTarget) => {
    const objects = target.resource.plural === "quorumcontrolplanes" ? controlPlanes : new Map<string, KubeObject>();
    return { get: (key: string) => objects.get(key), list: () => [...objects.values()] };
  };
  const context = {
    informer: (target: WatchTarget) => informer(target) as unknown as Informer<KubeObject>,
    signal: new AbortController().signal,
  } as ReconcileContext;
  return { controlPlanes, forgotten, reconcile: (key: string) => controller.reconcile(key, context) };
}

describe("the controller, when a QuorumControlPlane is gone", () => {
  it("drops what the workload adapters keep for its Cluster, though its finalizer was never released", async () => {
    const w = world();
    w.controlPlanes.set("ns/cp", labelledFor("cp", "c1"));
    await w.reconcile("ns/cp");
    assert.deepEqual(w.forgotten, []);
    w.controlPlanes.delete("ns/cp");
    await w.reconcile("ns/cp");
    assert.deepEqual(w.forgotten, ["ns/c1"]);
    await w.reconcile("ns/cp");
    assert.deepEqual(w.forgotten, ["ns/c1"], "nothing is left to forget a second time");
  });

  it("keeps it while another QuorumControlPlane of the same Cluster remains, and drops it with the last", async () => {
    const w = world();
    w.controlPlanes.set("ns/cp", labelledFor("cp", "c1"));
    w.controlPlanes.set("ns/copy", labelledFor("copy", "c1"));
    await w.reconcile("ns/cp");
    await w.reconcile("ns/copy");
    w.controlPlanes.delete("ns/copy");
    await w.reconcile("ns/copy");
    assert.deepEqual(w.forgotten, []);
    w.controlPlanes.delete("ns/cp");
    await w.reconcile("ns/cp");
    assert.deepEqual(w.forgotten, ["ns/c1"]);
  });

  it("drops the old Cluster's when a QuorumControlPlane is relabelled for another Cluster", async () => {
    const w = world();
    w.controlPlanes.set("ns/cp", labelledFor("cp", "c1"));
    await w.reconcile("ns/cp");
    w.controlPlanes.set("ns/cp", labelledFor("cp", "c2"));
    await w.reconcile("ns/cp");
    assert.deepEqual(w.forgotten, ["ns/c1"]);
  });
});
