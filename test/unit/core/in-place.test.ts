import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Machine } from "../../../src/api/capi.ts";
import {
  LABEL_CLUSTER_NAME,
  LABEL_CONTROL_PLANE_NAME,
  PRE_TERMINATE_HOOK,
  TEMPLATE_HASH_ANNOTATION,
  TEMPLATE_METADATA_ANNOTATION,
} from "../../../src/api/constants.ts";
import {
  inPlaceUpdates,
  recordedTemplateKeys,
  templateKeysRecord,
  type InPlaceTarget,
} from "../../../src/core/in-place.ts";

const target = (overrides: Partial<InPlaceTarget> = {}): InPlaceTarget => ({
  labels: { tier: "gold" },
  annotations: { owner: "team-a" },
  deletion: {},
  templateHash: "new-hash",
  legacyTemplateHash: "old-hash",
  ...overrides,
});

/** A Machine as this release makes it from `made` (the template's keys and the record of them). */
function machine(
  name: string,
  made: Pick<InPlaceTarget, "labels" | "annotations">,
  extra: Partial<Machine> = {},
): Machine {
  return {
    metadata: {
      name,
      resourceVersion: "7",
      labels: { ...made.labels, [LABEL_CLUSTER_NAME]: "c1", [LABEL_CONTROL_PLANE_NAME]: "cp" },
      annotations: {
        ...made.annotations,
        [PRE_TERMINATE_HOOK]: "",
        [TEMPLATE_HASH_ANNOTATION]: "new-hash",
        [TEMPLATE_METADATA_ANNOTATION]: templateKeysRecord(made),
      },
      ...extra.metadata,
    },
    spec: {
      clusterName: "c1",
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TestMachine", name },
      bootstrap: { configRef: { apiGroup: "bootstrap.cluster.x-k8s.io", kind: "TestBootstrapConfig", name } },
      ...extra.spec,
    },
  };
}

describe("in-place updates from spec.machineTemplate", () => {
  it("leaves Machines made from the current template alone: an idle control plane sends nothing", () => {
    const made = target();
    assert.deepEqual(inPlaceUpdates([machine("cp-0", made), machine("cp-1", made)], made), []);
  });

  it("sets a changed label and annotation on the Machine and its clones, and records the keys", () => {
    const [update, ...rest] = inPlaceUpdates(
      [machine("cp-0", target())],
      target({ labels: { tier: "platinum" }, annotations: { owner: "team-a", note: "x" } }),
    );
    assert.equal(rest.length, 0);
    assert.deepEqual(update.clones, { labels: { tier: "platinum" }, annotations: { note: "x" } });
    assert.deepEqual(update.machinePatch.labels, { tier: "platinum" });
    assert.equal(update.machinePatch.annotations?.note, "x");
    assert.deepEqual(
      recordedTemplateKeys(update.machinePatch.annotations?.[TEMPLATE_METADATA_ANNOTATION] ?? undefined),
      { labels: ["tier"], annotations: ["note", "owner"] },
    );
    assert.deepEqual(update.changes, ["label tier=platinum", "annotation note=x"]);
  });

  it("removes a key the template no longer has, but never one a user or another controller put on the Machine", () => {
    const made = target({ labels: { tier: "gold", zone: "a" } });
    const base = machine("cp-0", made);
    base.metadata.labels = { ...base.metadata.labels, "user/added": "yes" };
    const [update] = inPlaceUpdates([base], target({ labels: { tier: "gold" } }));
    assert.deepEqual(update.machinePatch.labels, { zone: null });
    assert.deepEqual(update.clones?.labels, { zone: null });
    assert.ok(!("user/added" in (update.machinePatch.labels ?? {})));
  });

  it("never lets the template change or remove Quorum's own labels and annotations", () => {
    const hostile = target({
      labels: { [LABEL_CLUSTER_NAME]: "other", tier: "gold" },
      annotations: { [PRE_TERMINATE_HOOK]: "x", [TEMPLATE_HASH_ANNOTATION]: "forged", owner: "team-a" },
    });
    assert.deepEqual(inPlaceUpdates([machine("cp-0", target())], hostile), []);
  });

  it("gives a Machine of an earlier release (no record) its record and its clones every template key, removing nothing", () => {
    const old = machine("cp-0", target());
    delete old.metadata.annotations?.[TEMPLATE_METADATA_ANNOTATION];
    old.metadata.labels = { ...old.metadata.labels, zone: "a" };
    const [update] = inPlaceUpdates([old], target());
    assert.deepEqual(update.clones, { labels: { tier: "gold" }, annotations: { owner: "team-a" } });
    assert.equal(update.machinePatch.labels, undefined, "zone may be a user's label: it stays");
    assert.equal(
      update.machinePatch.annotations?.[TEMPLATE_METADATA_ANNOTATION],
      templateKeysRecord(target()),
      "the record is written",
    );
  });

  it("reads a garbage record as no record: nothing is removed on its word", () => {
    const garbled = machine("cp-0", target({ labels: { tier: "gold", zone: "a" } }));
    (garbled.metadata.annotations ?? {})[TEMPLATE_METADATA_ANNOTATION] = '{"labels": "zone"}';
    const [update] = inPlaceUpdates([garbled], target());
    assert.equal(update.machinePatch.labels, undefined);
    assert.equal(recordedTemplateKeys("not json"), undefined);
    assert.equal(recordedTemplateKeys('{"labels": [1], "annotations": []}'), undefined);
  });

  it("moves a Machine carrying the earlier release's hash of the current spec to the current hash", () => {
    const old = machine("cp-0", target());
    (old.metadata.annotations ?? {})[TEMPLATE_HASH_ANNOTATION] = "old-hash";
    const [update] = inPlaceUpdates([old], target());
    assert.equal(update.machinePatch.annotations?.[TEMPLATE_HASH_ANNOTATION], "new-hash");
    const outdated = machine("cp-1", target());
    (outdated.metadata.annotations ?? {})[TEMPLATE_HASH_ANNOTATION] = "some-other-template";
    assert.deepEqual(inPlaceUpdates([outdated], target()), [], "an outdated Machine keeps its hash: it is rolled out");
  });

  it("sets the deletion timeouts the spec sets and leaves the ones it does not set as CAPI defaulted them", () => {
    const defaulted = machine("cp-0", target(), {
      spec: {
        clusterName: "c1",
        infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TestMachine", name: "cp-0" },
        bootstrap: {},
        deletion: { nodeDeletionTimeoutSeconds: 10, nodeDrainTimeoutSeconds: 30 },
      },
    });
    const [update] = inPlaceUpdates([defaulted], target({ deletion: { nodeDrainTimeoutSeconds: 600 } }));
    assert.deepEqual(update.machinePatch, { deletion: { nodeDrainTimeoutSeconds: 600 } });
    assert.equal(update.clones, undefined, "timeouts are the Machine's alone");
  });

  it("replaces the readiness gates and taints the spec sets, and leaves them when the spec sets none", () => {
    const gates = [{ conditionType: "example.com/Ready" }];
    const [update] = inPlaceUpdates([machine("cp-0", target())], target({ readinessGates: gates, taints: [] }));
    assert.deepEqual(update.machinePatch, { readinessGates: gates });
    const inStep = machine("cp-1", target());
    inStep.spec.readinessGates = [{ conditionType: "example.com/Ready" }];
    assert.deepEqual(inPlaceUpdates([inStep], target({ readinessGates: gates })), []);
  });

  it("does not touch a Machine being deleted", () => {
    const leaving = machine("cp-0", target(), {
      metadata: { name: "cp-0", deletionTimestamp: "2026-12-02T00:00:00Z" },
    });
    assert.deepEqual(inPlaceUpdates([leaving], target({ labels: { tier: "platinum" } })), []);
  });
});
