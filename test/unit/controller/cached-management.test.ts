import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Unstructured } from "../../../src/api/objects.ts";
import type { ObjectRef } from "../../../src/api/types.ts";
import { cachedManagement, type ManagementCaches } from "../../../src/controller/cached-management.ts";
import { Expectations } from "../../../src/controller/expectations.ts";
import type { ManagementApi } from "../../../src/ports/index.ts";
import { controlPlane, fakeManagement } from "./fixtures.ts";

const KEY = "ns/cp";
const INFRA: ObjectRef = controlPlane().spec.machineTemplate.spec.infrastructureRef;
const BOOT: ObjectRef = controlPlane().spec.machineTemplate.spec.bootstrapConfigTemplateRef;
const caches: ManagementCaches = {
  controlPlane: () => undefined,
  cluster: () => undefined,
  machines: () => [],
  machine: () => undefined,
};

/** An API server holding two templates that counts the reads of each; `failFirst` makes each first read fail. */
function templatesApi(failFirst = false): ManagementApi & { reads: string[] } {
  const reads: string[] = [];
  const qcp = controlPlane();
  return {
    reads,
    ...fakeManagement(qcp, () => [], {
      getReferenced: async (ref) => {
        reads.push(ref.name);
        if (failFirst && reads.filter((name) => name === ref.name).length === 1)
          throw new Error(`${ref.kind} ns/${ref.name}: connection reset`);
        return {
          apiVersion: ref.apiVersion ?? "",
          kind: ref.kind,
          metadata: { name: ref.name, namespace: "ns", resourceVersion: "7" },
          spec: { template: { spec: { image: `${ref.name}-image` } } },
        } as Unstructured;
      },
      setOwnerReferences: async () => {},
    }),
  };
}

const reconcileOf = (api: ManagementApi) => cachedManagement(api, caches, new Expectations(() => 0), KEY);

describe("template reads of one reconcile", () => {
  it("reads each template from the API server once however often the reconcile asks for it", async () => {
    const api = templatesApi();
    const management = reconcileOf(api);
    const [first, again, boot] = await Promise.all([
      management.getReferenced(INFRA, "ns", "spec.machineTemplate.spec.infrastructureRef"),
      management.getReferenced(INFRA, "ns", "spec.machineTemplate.spec.infrastructureRef"),
      management.getReferenced(BOOT, "ns", "spec.machineTemplate.spec.bootstrapConfigTemplateRef"),
    ]);
    await management.getReferenced(BOOT, "ns", "spec.machineTemplate.spec.bootstrapConfigTemplateRef");
    assert.deepEqual(api.reads.sort(), ["cp-boot", "cp-infra"]);
    assert.equal(first, again);
    assert.equal(boot.metadata.name, "cp-boot");
  });

  it("reads the templates again in the next reconcile, so an edited template is seen", async () => {
    const api = templatesApi();
    await reconcileOf(api).getReferenced(INFRA, "ns", "ref");
    await reconcileOf(api).getReferenced(INFRA, "ns", "ref");
    assert.deepEqual(api.reads, ["cp-infra", "cp-infra"]);
  });

  it("asks the API server again after a failed read instead of repeating the failure", async () => {
    const api = templatesApi(true);
    const management = reconcileOf(api);
    await assert.rejects(management.getReferenced(INFRA, "ns", "ref"), /connection reset/);
    const template = await management.getReferenced(INFRA, "ns", "ref");
    assert.equal(template.metadata.name, "cp-infra");
    assert.deepEqual(api.reads, ["cp-infra", "cp-infra"]);
  });

  it("shows the owner references written earlier in the reconcile, with the resourceVersion it read", async () => {
    const api = templatesApi();
    const management = reconcileOf(api);
    const read = await management.getReferenced(INFRA, "ns", "ref");
    const owner = { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name: "c", uid: "uid-c" };
    await management.setOwnerReferences(read, [owner]);
    const later = await management.getReferenced(INFRA, "ns", "ref");
    assert.deepEqual(later.metadata.ownerReferences, [owner]);
    assert.equal(later.metadata.resourceVersion, "7");
    assert.deepEqual(later.spec, read.spec);
    assert.deepEqual(api.reads, ["cp-infra"]);
  });

  it("reads a template again after a write to it was refused (a conflict), so the retry sees the new version", async () => {
    const api = templatesApi();
    api.setOwnerReferences = async () => {
      throw Object.assign(new Error("the object has been modified"), { code: 409 });
    };
    const management = reconcileOf(api);
    const read = await management.getReferenced(INFRA, "ns", "ref");
    await assert.rejects(management.setOwnerReferences(read, []), /modified/);
    await management.getReferenced(INFRA, "ns", "ref");
    assert.deepEqual(api.reads, ["cp-infra", "cp-infra"]);
  });
});
