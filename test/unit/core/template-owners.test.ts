// Which referenced templates get a Cluster owner reference (so clusterctl move carries them), and what their
// ownerReferences become.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ObjectRef, OwnerReference } from "../../../src/api/types.ts";
import { templatesToOwn, withOwner } from "../../../src/core/template-owners.ts";

const CLUSTER = { kind: "Cluster" as const, name: "c1", uid: "uid-c1" };
const INFRA: ObjectRef = { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "ProcessMachineTemplate", name: "pm" };
const BOOTSTRAP: ObjectRef = {
  apiGroup: "bootstrap.cluster.x-k8s.io",
  kind: "ProcessBootstrapConfigTemplate",
  name: "pb",
};
const CLUSTER_OWNER: OwnerReference = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "Cluster",
  name: "c1",
  uid: "uid-c1",
};
const OTHER_OWNER: OwnerReference = {
  apiVersion: "addons.example.com/v1",
  kind: "Bundle",
  name: "b",
  uid: "uid-b",
  controller: true,
  blockOwnerDeletion: true,
};

describe("templatesToOwn", () => {
  it("owns both templates of a Cluster that is not being deleted", () => {
    assert.deepEqual(templatesToOwn([INFRA, BOOTSTRAP], "ns", { ...CLUSTER, deleting: false, paused: false }), {
      own: [INFRA, BOOTSTRAP],
    });
  });

  it("owns a template whose reference names the control plane's own namespace", () => {
    const ref = { ...INFRA, namespace: "ns" };
    assert.deepEqual(templatesToOwn([ref], "ns", { ...CLUSTER, deleting: false, paused: false }).own, [ref]);
  });

  it("never touches a template in another namespace, since an ownerReference cannot cross namespaces", () => {
    assert.deepEqual(
      templatesToOwn([{ ...INFRA, namespace: "shared" }, BOOTSTRAP], "ns", {
        ...CLUSTER,
        deleting: false,
        paused: false,
      }),
      {
        own: [BOOTSTRAP],
        skipped: "other-namespace",
      },
    );
  });

  it("adds nothing while the Cluster is being deleted, which would only hand the templates to the garbage collector", () => {
    assert.deepEqual(templatesToOwn([INFRA, BOOTSTRAP], "ns", { ...CLUSTER, deleting: true, paused: false }), {
      own: [],
      skipped: "cluster-deleting",
    });
  });

  it("adds nothing while the Cluster or control plane is paused, as clusterctl move pauses it before copying", () => {
    assert.deepEqual(templatesToOwn([INFRA, BOOTSTRAP], "ns", { ...CLUSTER, deleting: false, paused: true }), {
      own: [],
      skipped: "paused",
    });
  });

  it("adds nothing for a Cluster without a uid, since an ownerReference needs one", () => {
    assert.deepEqual(templatesToOwn([INFRA], "ns", { name: "c1", deleting: false, paused: false }), {
      own: [],
      skipped: "cluster-uid-unknown",
    });
  });
});

describe("withOwner", () => {
  it("adds a Cluster owner that is neither controller nor blocks deletion to a template with no owners", () => {
    assert.deepEqual(withOwner(undefined, CLUSTER), [CLUSTER_OWNER]);
  });

  it("keeps every other owner reference as it was and appends the Cluster's", () => {
    assert.deepEqual(withOwner([OTHER_OWNER], CLUSTER), [OTHER_OWNER, CLUSTER_OWNER]);
  });

  it("asks for no write when the template already has the reference (no write at idle)", () => {
    assert.equal(withOwner([OTHER_OWNER, CLUSTER_OWNER], CLUSTER), undefined);
  });

  it("counts a reference to the same Cluster under the v1beta1 API version as present", () => {
    assert.equal(withOwner([{ ...CLUSTER_OWNER, apiVersion: "cluster.x-k8s.io/v1beta1" }], CLUSTER), undefined);
  });

  it("replaces, in place, a reference to a Cluster of the same name but another uid (recreated or restored)", () => {
    const stale = { ...CLUSTER_OWNER, uid: "uid-before" };
    assert.deepEqual(withOwner([stale, OTHER_OWNER], CLUSTER), [CLUSTER_OWNER, OTHER_OWNER]);
  });

  it("does not mistake another group's Cluster kind or another Cluster's name for this Cluster", () => {
    const foreign = { ...CLUSTER_OWNER, apiVersion: "example.com/v1", uid: "x" };
    const sibling = { ...CLUSTER_OWNER, name: "c2", uid: "uid-c2" };
    assert.deepEqual(withOwner([foreign, sibling], CLUSTER), [foreign, sibling, CLUSTER_OWNER]);
  });
});
