// The controller's part of keeping the referenced templates owned by their Cluster: what it reads and writes
// through the management port, what it remembers between reconciles, and what it reports when a write is refused.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Unstructured } from "../../../src/api/objects.ts";
import type { ObjectRef, OwnerReference } from "../../../src/api/types.ts";
import { PatchForbiddenError, ReferenceNotFoundError } from "../../../src/adapters/capi/management.ts";
import {
  keepTemplatesOwned,
  OWNER_REFERENCE_ATTEMPTS,
  OwnedTemplates,
  TEMPLATE_RECHECK_MS,
} from "../../../src/controller/template-owners.ts";
import type { ManagementApi } from "../../../src/ports/index.ts";
import { cluster, controlPlane } from "./fixtures.ts";

const OWNED_BY_C1: OwnerReference = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "Cluster",
  name: "c1",
  uid: "uid-c1",
};

/** A template's kind → its owner references; `conflicts` writes are refused (409), each after another Cluster's lands. */
function world(
  templates: Record<string, OwnerReference[] | undefined>,
  options: { forbidden?: boolean; conflicts?: number } = {},
) {
  const calls: string[] = [];
  let conflicts = options.conflicts ?? 0;
  const management = {
    getReferenced: async (ref: ObjectRef, namespace: string) => {
      calls.push(`get ${ref.kind}`);
      const object: Unstructured = {
        apiVersion: ref.apiVersion ?? `${ref.apiGroup}/v1beta1`,
        kind: ref.kind,
        metadata: { name: ref.name, namespace, resourceVersion: "7", uid: `uid-${ref.name}` },
      };
      const owners = templates[ref.kind];
      return owners ? { ...object, metadata: { ...object.metadata, ownerReferences: owners } } : object;
    },
    setOwnerReferences: async (object: Unstructured, ownerReferences: OwnerReference[]) => {
      if (options.forbidden) throw new PatchForbiddenError(object, "ownerReferences");
      if (conflicts > 0) {
        const landedFirst = { ...OWNED_BY_C1, name: `other-${conflicts}`, uid: `uid-other-${conflicts}` };
        templates[object.kind] = [...(templates[object.kind] ?? []), landedFirst];
        conflicts--;
        calls.push(`conflict ${object.kind}`);
        throw Object.assign(new Error("the object has been modified"), { code: 409 });
      }
      calls.push(`patch ${object.kind} rv=${object.metadata.resourceVersion} ${JSON.stringify(ownerReferences)}`);
      templates[object.kind] = ownerReferences;
    },
  } as unknown as ManagementApi;
  return { management, calls };
}

const theCluster = () => ({ ...cluster(), metadata: { ...cluster().metadata, uid: "uid-c1" } });

describe("keepTemplatesOwned", () => {
  it("gives both templates the Cluster owner reference, at the resourceVersion it read, keeping other owners", async () => {
    const other: OwnerReference = { apiVersion: "v1", kind: "ConfigMap", name: "keep", uid: "uid-keep" };
    const qcp = controlPlane();
    const infraKind = qcp.spec.machineTemplate.spec.infrastructureRef.kind;
    const bootstrapKind = qcp.spec.machineTemplate.spec.bootstrapConfigTemplateRef.kind;
    const { management, calls } = world({ [infraKind]: [other] });
    const result = await keepTemplatesOwned(qcp, theCluster(), management, undefined);
    assert.equal(result.problem, undefined);
    assert.equal(result.adopted.length, 2);
    assert.ok(calls.includes(`patch ${infraKind} rv=7 ${JSON.stringify([other, OWNED_BY_C1])}`), calls.join("\n"));
    assert.ok(calls.includes(`patch ${bootstrapKind} rv=7 ${JSON.stringify([OWNED_BY_C1])}`), calls.join("\n"));
  });

  it("gives the bootstrap template a ClusterClass shares to that ClusterClass, so deleting one of its Clusters does not delete it", async () => {
    // What CAPI's topology controller makes: the control plane labelled as its own, the Cluster naming its class.
    const qcp = controlPlane();
    qcp.metadata.labels = { ...qcp.metadata.labels, "topology.cluster.x-k8s.io/owned": "" };
    const topologyCluster = theCluster();
    topologyCluster.spec = { ...topologyCluster.spec, topology: { classRef: { name: "quorum-class" } } };
    const infraKind = qcp.spec.machineTemplate.spec.infrastructureRef.kind;
    const bootstrapKind = qcp.spec.machineTemplate.spec.bootstrapConfigTemplateRef.kind;
    const { management, calls } = world({});
    const result = await keepTemplatesOwned(qcp, topologyCluster, management, undefined);
    assert.equal(result.problem, undefined);
    const byClass = {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "ClusterClass",
      name: "quorum-class",
      uid: "uid-quorum-class",
    };
    assert.ok(calls.includes(`patch ${bootstrapKind} rv=7 ${JSON.stringify([byClass])}`), calls.join("\n"));
    assert.ok(calls.includes(`patch ${infraKind} rv=7 ${JSON.stringify([OWNED_BY_C1])}`), calls.join("\n"));

    // A class in another namespace cannot own it: the template is left alone rather than given to one Cluster.
    topologyCluster.spec.topology = { classRef: { name: "quorum-class", namespace: "platform" } };
    const elsewhere = world({});
    await keepTemplatesOwned(qcp, topologyCluster, elsewhere.management, undefined);
    assert.equal(elsewhere.calls.filter((call) => call.startsWith(`patch ${bootstrapKind}`)).length, 0);
  });

  it("writes nothing for templates that already have the reference", async () => {
    const qcp = controlPlane();
    const { management, calls } = world({
      [qcp.spec.machineTemplate.spec.infrastructureRef.kind]: [OWNED_BY_C1],
      [qcp.spec.machineTemplate.spec.bootstrapConfigTemplateRef.kind]: [OWNED_BY_C1],
    });
    const result = await keepTemplatesOwned(qcp, theCluster(), management, undefined);
    assert.deepEqual(result, { adopted: [] });
    assert.equal(calls.filter((call) => call.startsWith("patch")).length, 0);
  });

  it("reads a template seen owned again only after the recheck interval, so an idle reconcile costs no request", async () => {
    let now = 1_000_000;
    const owned = new OwnedTemplates(() => now);
    const { management, calls } = world({});
    await keepTemplatesOwned(controlPlane(), theCluster(), management, owned);
    const afterFirst = calls.length;
    now += TEMPLATE_RECHECK_MS - 1;
    await keepTemplatesOwned(controlPlane(), theCluster(), management, owned);
    assert.equal(calls.length, afterFirst, "no read within the interval");
    now += 1;
    await keepTemplatesOwned(controlPlane(), theCluster(), management, owned);
    assert.equal(calls.filter((call) => call.startsWith("get")).length, 4, "both read again after it");
  });

  it("reads again at once for a Cluster with a new uid (a Cluster moved or recreated)", async () => {
    const owned = new OwnedTemplates(() => 0);
    const { management, calls } = world({});
    await keepTemplatesOwned(controlPlane(), theCluster(), management, owned);
    const moved = { ...theCluster(), metadata: { ...theCluster().metadata, uid: "uid-after-move" } };
    await keepTemplatesOwned(controlPlane(), moved, management, owned);
    assert.equal(calls.filter((call) => call.startsWith("patch")).length, 4, calls.join("\n"));
  });

  it("touches nothing while the Cluster is being deleted", async () => {
    const { management, calls } = world({});
    const deleting = {
      ...theCluster(),
      metadata: { ...theCluster().metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
    };
    assert.deepEqual(await keepTemplatesOwned(controlPlane(), deleting, management, undefined), { adopted: [] });
    assert.deepEqual(calls, []);
  });

  it("touches nothing while the Cluster is paused (clusterctl move in progress)", async () => {
    const { management, calls } = world({});
    const paused = { ...theCluster(), spec: { ...theCluster().spec, paused: true } };
    assert.deepEqual(await keepTemplatesOwned(controlPlane(), paused, management, undefined), { adopted: [] });
    assert.deepEqual(calls, []);
  });

  it("reports a missing template naming the field that references it and the fix", async () => {
    const management = {
      getReferenced: async (ref: ObjectRef, namespace: string, referencedBy: string) => {
        throw new ReferenceNotFoundError(ref.kind, namespace, ref.name, referencedBy);
      },
    } as unknown as ManagementApi;
    const { problem } = await keepTemplatesOwned(controlPlane(), theCluster(), management, undefined);
    assert.match(
      problem?.message ?? "",
      /ProcessMachineTemplate ns\/cp-infra referenced by QuorumControlPlane ns\/cp spec\.machineTemplate\.spec\.infrastructureRef was not found: create it or correct the reference/,
    );
  });

  it("reports a refused patch naming the template, the verb, the resource and the ClusterRole label that grants it", async () => {
    const { management } = world({}, { forbidden: true });
    const qcp = controlPlane();
    const { problem } = await keepTemplatesOwned(qcp, theCluster(), management, undefined);
    const ref = qcp.spec.machineTemplate.spec.infrastructureRef;
    assert.equal(problem?.reason, "TemplateOwnerReferenceFailed");
    assert.match(problem?.message ?? "", new RegExp(`${ref.kind} ns/${ref.name}`));
    assert.match(
      problem?.message ?? "",
      /grant the "patch" verb on processmachinetemplates\.infrastructure\.cluster\.x-k8s\.io in a ClusterRole labelled/,
    );
    assert.match(problem?.message ?? "", /controlplane\.cluster\.x-k8s\.io\/aggregate-to-quorum-manager: "true"/);
  });

  it("reads and writes again when another Cluster's reference landed first, keeping it, with no problem", async () => {
    const qcp = controlPlane();
    const infraKind = qcp.spec.machineTemplate.spec.infrastructureRef.kind;
    const { management, calls } = world({}, { conflicts: 2 });
    const result = await keepTemplatesOwned(qcp, theCluster(), management, undefined);
    assert.equal(result.problem, undefined);
    assert.equal(result.adopted.length, 2);
    const others = [2, 1].map((n) => ({ ...OWNED_BY_C1, name: `other-${n}`, uid: `uid-other-${n}` }));
    assert.ok(calls.includes(`patch ${infraKind} rv=7 ${JSON.stringify([...others, OWNED_BY_C1])}`), calls.join("\n"));
    assert.equal(calls.filter((call) => call === `get ${infraKind}`).length, 3, calls.join("\n"));
  });

  it(`leaves a template still in conflict after ${OWNER_REFERENCE_ATTEMPTS} writes to the next reconcile, as a problem`, async () => {
    const { management, calls } = world({}, { conflicts: OWNER_REFERENCE_ATTEMPTS });
    const { problem, adopted } = await keepTemplatesOwned(controlPlane(), theCluster(), management, undefined);
    assert.equal(problem?.reason, "TemplateOwnerReferenceFailed");
    assert.deepEqual(adopted, []);
    assert.equal(calls.filter((call) => call.startsWith("conflict")).length, OWNER_REFERENCE_ATTEMPTS);
  });

  it("does not read a template again that another Cluster sharing it saw owned by this one within the interval", async () => {
    let now = 0;
    const owned = new OwnedTemplates(() => now);
    const { management, calls } = world({});
    const second = { ...theCluster(), metadata: { ...theCluster().metadata, name: "c2", uid: "uid-c2" } };
    await keepTemplatesOwned(controlPlane(), theCluster(), management, owned);
    now += TEMPLATE_RECHECK_MS / 2;
    await keepTemplatesOwned(controlPlane(), second, management, owned);
    const reads = calls.filter((call) => call.startsWith("get")).length;
    now += TEMPLATE_RECHECK_MS / 2 + 1;
    await keepTemplatesOwned(controlPlane(), theCluster(), management, owned);
    assert.equal(calls.filter((call) => call.startsWith("get")).length, reads, calls.join("\n"));
  });

  it("gives a reference back at once when another Cluster's read shows it removed by hand", async () => {
    const owned = new OwnedTemplates(() => 0);
    const qcp = controlPlane();
    const infraKind = qcp.spec.machineTemplate.spec.infrastructureRef.kind;
    const { management, calls } = world({});
    const second = { ...theCluster(), metadata: { ...theCluster().metadata, name: "c2", uid: "uid-c2" } };
    await keepTemplatesOwned(qcp, theCluster(), management, owned);
    const removedByHand = world({});
    await keepTemplatesOwned(qcp, second, removedByHand.management, owned);
    await keepTemplatesOwned(qcp, theCluster(), management, owned);
    assert.equal(calls.filter((call) => call.startsWith(`get ${infraKind}`)).length, 2, calls.join("\n"));
  });

  it("forgets what it saw of templates once it is older than the recheck interval", async () => {
    let now = 0;
    const owned = new OwnedTemplates(() => now);
    await keepTemplatesOwned(controlPlane(), theCluster(), world({}).management, owned);
    assert.equal(owned.size, 2);
    now += TEMPLATE_RECHECK_MS;
    const other = { ...theCluster(), metadata: { ...theCluster().metadata, name: "c2", uid: "uid-c2" } };
    const otherPlane = controlPlane();
    otherPlane.spec.machineTemplate.spec.infrastructureRef = {
      ...otherPlane.spec.machineTemplate.spec.infrastructureRef,
      name: "c2-infra",
    };
    otherPlane.spec.machineTemplate.spec.bootstrapConfigTemplateRef = {
      ...otherPlane.spec.machineTemplate.spec.bootstrapConfigTemplateRef,
      name: "c2-boot",
    };
    await keepTemplatesOwned(otherPlane, other, world({}).management, owned);
    assert.equal(owned.size, 2);
  });
});
