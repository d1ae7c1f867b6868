import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Informer } from "../../../src/adapters/kube/informer.ts";
import type { CacheReader } from "../../../src/adapters/kube/manager.ts";
import type { KubeObject } from "../../../src/adapters/kube/rest.ts";
import { quorumController } from "../../../src/controller/controller.ts";
import type { ReconcilerDeps } from "../../../src/controller/reconcile.ts";

function cacheOf(objects: KubeObject[]): CacheReader {
  const byKey = new Map(objects.map((object) => [`${object.metadata.namespace}/${object.metadata.name}`, object]));
  return { informer: <T extends KubeObject>() => ({ get: (key: string) => byKey.get(key) }) as unknown as Informer<T> };
}

function controlPlane(name: string, created: string, initialized?: boolean, uid?: string): KubeObject {
  return {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta2",
    kind: "QuorumControlPlane",
    metadata: { name, namespace: "ns", creationTimestamp: created, ...(uid ? { uid } : {}) },
    ...(initialized === undefined ? {} : { status: { initialization: { controlPlaneInitialized: initialized } } }),
  } as KubeObject;
}

describe("the controller's queue rank", () => {
  const controller = quorumController({ deps: { clock: () => 0 } as unknown as ReconcilerDeps });
  const caches = cacheOf([
    controlPlane("new-a", "2026-12-03T10:00:00Z"),
    controlPlane("new-b", "2026-12-03T10:00:05Z", false),
    controlPlane("running", "2026-12-03T11:00:00Z", true),
    controlPlane("same-second-1", "2026-12-03T10:00:01Z", undefined, "ffffffff-0000-4000-8000-000000000000"),
    controlPlane("same-second-2", "2026-12-03T10:00:01Z", undefined, "00000001-0000-4000-8000-000000000000"),
  ]);
  const rank = (name: string) => controller.rank?.(`ns/${name}`, caches);

  it("puts clusters being created in the order they were created", () => {
    assert.ok((rank("new-a") as number) < (rank("new-b") as number));
  });

  it("orders clusters created in the same second by their uid, all between the seconds before and after", () => {
    const [first, second] = [rank("same-second-2") as number, rank("same-second-1") as number];
    assert.ok(first < second, "a fixed order within the second");
    assert.ok((rank("new-a") as number) < first && second < (rank("new-b") as number));
  });

  it("puts running clusters, however young, before every cluster still being created, all at one rank", () => {
    assert.equal(rank("running"), 0);
    assert.ok((rank("running") as number) < (rank("new-a") as number));
  });

  it("ranks a key whose object is not in the cache (gone, or its Cluster came first) with the running clusters", () => {
    assert.equal(rank("gone"), 0);
  });
});
