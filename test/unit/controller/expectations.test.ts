import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Machine } from "../../../src/api/capi.ts";
import { cachedManagement, type ManagementCaches } from "../../../src/controller/cached-management.ts";
import { Expectations } from "../../../src/controller/expectations.ts";
import type { ManagementApi } from "../../../src/ports/index.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";

const KEY = "ns/cp";

function object(name: string, resourceVersion: string, extra: Partial<Machine["metadata"]> = {}): Machine {
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Machine",
    metadata: {
      name,
      namespace: "ns",
      resourceVersion,
      labels: { "cluster.x-k8s.io/control-plane-name": "cp" },
      ...extra,
    },
    spec: {
      clusterName: "c1",
      bootstrap: {},
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "ProcessMachine", name },
    },
  };
}

/** Caches the test edits directly, as watch events would. */
function fakeCaches() {
  const controlPlanes = new Map<string, QuorumControlPlane>();
  const machines = new Map<string, Machine>();
  const caches: ManagementCaches = {
    controlPlane: (key) => controlPlanes.get(key),
    cluster: () => undefined,
    machines: (namespace) => [...machines.values()].filter((machine) => machine.metadata.namespace === namespace),
    machine: (key) => machines.get(key),
  };
  return { controlPlanes, machines, caches };
}

function fakeApi(): ManagementApi & { created: string[] } {
  const created: string[] = [];
  let version = 100;
  return {
    created,
    getControlPlane: async () => undefined,
    getCluster: async () => undefined,
    listControlPlaneMachines: async () => [],
    getReferenced: async () => ({ metadata: { name: "t" } }) as never,
    createIfAbsent: async (obj) => {
      created.push(obj.metadata.name);
      return "created";
    },
    deleteMachine: async () => {},
    patchAnnotations: async () => String(++version),
    setOwnerReferences: async () => {},
    patchInPlace: async () => undefined,
    setMachineConditions: async () => undefined,
    setFinalizers: async () => String(++version),
    patchStatus: async (controlPlane) => ({
      ...controlPlane,
      metadata: { ...controlPlane.metadata, resourceVersion: String(++version) },
    }),
    event: async () => {},
  };
}

describe("reads from the informer caches with read-your-writes", () => {
  it("waits after creating a Machine until the cache lists it, then plans again", async () => {
    let now = 0;
    const expectations = new Expectations(() => now);
    const { machines, caches } = fakeCaches();
    const management = cachedManagement(fakeApi(), caches, expectations, KEY);
    await management.createIfAbsent({
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Machine",
      metadata: { name: "cp-1", namespace: "ns" },
    });
    const lookup = (kind: string, key: string) => (kind === "Machine" ? caches.machine(key) : caches.controlPlane(key));
    assert.deepEqual(expectations.pending(KEY, lookup).waitingFor, ["Machine ns/cp-1 (created)"]);
    machines.set("ns/cp-1", object("cp-1", "7"));
    assert.deepEqual(expectations.pending(KEY, lookup).waitingFor, []);
    now += 1;
    assert.deepEqual(expectations.pending(KEY, lookup).waitingFor, [], "a met expectation is dropped, not re-checked");
  });

  it("after two status writes over one version, waits for the second write, not just any newer version", async () => {
    const expectations = new Expectations(() => 0);
    const { controlPlanes, caches } = fakeCaches();
    const qcp = {
      apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
      kind: "QuorumControlPlane",
      metadata: { name: "cp", namespace: "ns", resourceVersion: "5" },
      spec: {},
    } as unknown as QuorumControlPlane;
    controlPlanes.set(KEY, qcp);
    const management = cachedManagement(fakeApi(), caches, expectations, KEY);
    await management.patchStatus(qcp, { lastRemediation: {} }); // → 101
    await management.patchStatus(qcp, { observedGeneration: 1 }); // → 102
    const lookup = (_kind: string, key: string) => caches.controlPlane(key);
    assert.equal(expectations.pending(KEY, lookup).waitingFor.length, 1);
    controlPlanes.set(KEY, {
      ...qcp,
      metadata: { ...qcp.metadata, resourceVersion: "101" },
    });
    assert.equal(
      expectations.pending(KEY, lookup).waitingFor.length,
      1,
      "the first write's version still misses the second write",
    );
    controlPlanes.set(KEY, {
      ...qcp,
      metadata: { ...qcp.metadata, resourceVersion: "102" },
    });
    assert.equal(expectations.pending(KEY, lookup).waitingFor.length, 0);
  });

  it("accepts a deleted Machine that is gone from the cache, and gives up waiting after the timeout", async () => {
    let now = 0;
    const expectations = new Expectations(() => now, 10_000);
    const { machines, caches } = fakeCaches();
    machines.set("ns/cp-1", object("cp-1", "3"));
    machines.set("ns/cp-2", object("cp-2", "4"));
    const management = cachedManagement(fakeApi(), caches, expectations, KEY);
    await management.deleteMachine("ns", "cp-1");
    await management.patchAnnotations("cluster.x-k8s.io/v1beta2", "Machine", "ns", "cp-2", { hook: null }, "4");
    const lookup = (_kind: string, key: string) => caches.machine(key);
    const first = expectations.pending(KEY, lookup);
    assert.equal(first.waitingFor.length, 2);
    assert.equal(first.retryInMs, 10_000);
    machines.delete("ns/cp-1");
    assert.deepEqual(expectations.pending(KEY, lookup).waitingFor, ["Machine ns/cp-2 (changed)"]);
    now = 10_000;
    assert.deepEqual(expectations.pending(KEY, lookup).waitingFor, [], "a lost watch event costs at most the timeout");
  });

  it("does not wait for a patched Machine that CAPI deleted meanwhile (a released pre-terminate hook), nor for one it never cached", async () => {
    const expectations = new Expectations(() => 0, 10_000);
    const { machines, caches } = fakeCaches();
    machines.set("ns/cp-1", object("cp-1", "3"));
    const management = cachedManagement(fakeApi(), caches, expectations, KEY);
    await management.patchAnnotations("cluster.x-k8s.io/v1beta2", "Machine", "ns", "cp-1", { hook: null }, "3");
    await management.setMachineConditions("ns", "cp-1", [], "3");
    const lookup = (_kind: string, key: string) => caches.machine(key);
    assert.deepEqual(expectations.pending(KEY, lookup).waitingFor, ["Machine ns/cp-1 (changed)"]);
    // CAPI removes the Machine once the hook is released; the informer drops it before showing the patch.
    machines.delete("ns/cp-1");
    assert.deepEqual(expectations.pending(KEY, lookup).waitingFor, [], "gone is later than the write");
    // A Machine the cache never held proves nothing by being absent: still waited for.
    await management.patchAnnotations("cluster.x-k8s.io/v1beta2", "Machine", "ns", "cp-9", { hook: null }, "7");
    assert.deepEqual(expectations.pending(KEY, lookup).waitingFor, ["Machine ns/cp-9 (changed)"]);
  });

  it("hands out the cached objects read-only, so a reconcile cannot change what the cache holds and copies nothing", async () => {
    const { machines, caches } = fakeCaches();
    machines.set("ns/cp-1", object("cp-1", "3"));
    const management = cachedManagement(fakeApi(), caches, new Expectations(() => 0), KEY);
    const [machine] = await management.listControlPlaneMachines("ns", "cp");
    assert.throws(() => {
      (machine.metadata.labels as Record<string, string>).changed = "yes";
    }, TypeError);
    assert.equal(machines.get("ns/cp-1")?.metadata.labels?.changed, undefined);
    const [again] = await management.listControlPlaneMachines("ns", "cp");
    assert.equal(again, machine, "the same object, not a copy");
  });
});
