import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  LABEL_CLUSTER_NAME,
  LABEL_CONTROL_PLANE_NAME,
  LABEL_WATCH_FILTER,
  PRE_TERMINATE_HOOK,
  REMEDIATION_FOR_ANNOTATION,
} from "../../../src/api/constants.ts";
import { claimMachines, concernsControlPlane, controllingControlPlaneName } from "../../../src/api/ownership.ts";
import {
  buildMachineObjects,
  nextMachineName,
  type MachineInputs,
  type NewMachineObjects,
  type Unstructured,
} from "../../../src/controller/machine-factory.ts";
import { inPlaceUpdates } from "../../../src/core/in-place.ts";
import { buildSnapshot } from "../../../src/controller/snapshot-builder.ts";
import { cluster, controlPlane } from "./fixtures.ts";

const infraTemplate: Unstructured = {
  apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
  kind: "ProcessMachineTemplate",
  metadata: { name: "cp-infra", namespace: "ns" },
  spec: { template: { metadata: { labels: { tier: "gold" } }, spec: { image: "etcd-3.4" } } },
};
const bootTemplate: Unstructured = {
  apiVersion: "bootstrap.cluster.x-k8s.io/v1beta1",
  kind: "ProcessBootstrapConfigTemplate",
  metadata: { name: "cp-boot", namespace: "ns" },
  spec: { template: { spec: { joinAs: "learner" } } },
};

/** The objects for one Machine of the fixture's control plane, with the inputs a test changes. */
function build(inputs: Partial<MachineInputs> = {}): NewMachineObjects {
  return buildMachineObjects({
    controlPlane: controlPlane(),
    clusterName: "c1",
    machineName: "cp-x-0",
    templateHash: "h1",
    infrastructureTemplate: infraTemplate,
    bootstrapConfigTemplate: bootTemplate,
    ...inputs,
  });
}

describe("machine factory", () => {
  it("picks the same Machine name again after a crash and a new one only when it is taken", () => {
    const first = nextMachineName("cp", "v1.31.2", "abc", new Set());
    assert.equal(nextMachineName("cp", "v1.31.2", "abc", new Set()), first);
    const second = nextMachineName("cp", "v1.31.2", "abc", new Set([first]));
    assert.notEqual(second, first);
    assert.notEqual(nextMachineName("cp", "v1.32.0", "abc", new Set()), first, "a new version gets new names");
  });

  it("keeps Machine names within 63 characters for a ClusterClass control plane named <cluster>-<random> at 63", () => {
    // The names ClusterClass gives two clusters of one long prefix: CAPI cuts <cluster>-<random> to 63 characters.
    const prefix = "platform-team-production-eu-west-1-payments-cluster-2026";
    const [one, two] = [`${prefix}-x7k2p`, `${prefix}-q9mzt`];
    assert.equal(one.length, 62);
    const taken = new Set<string>();
    for (const name of [one, one, two, two]) {
      const made = nextMachineName(name, "v1.36.3", "abc", taken);
      assert.ok(made.length <= 63, `${made}: ${made.length} characters`);
      assert.match(made, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, `${made} is a DNS name`);
      assert.ok(made.startsWith(prefix.slice(0, 50)), `${made} still says which control plane it belongs to`);
      assert.equal(nextMachineName(name, "v1.36.3", "abc", taken), made, "the same name again after a crash");
      assert.ok(!taken.has(made), `${made} is new`);
      taken.add(made);
    }
    assert.equal(taken.size, 4, "two long names that share their kept prefix name their Machines apart");
    // A cut that would end on "-" or "." drops those: a host name may not end there.
    const dashed = nextMachineName(`${"a".repeat(53)}-.${"b".repeat(20)}`, "v1.36.3", "abc", new Set());
    assert.match(dashed, /^a{53}-[0-9a-f]{5}-0$/);
    assert.equal(nextMachineName("cp", "v1.31.2", "abc", new Set()).length, 10, "short names are not changed");
  });

  it("clones both templates and points the Machine at the clones, with the hook, labels and owner", () => {
    const objects = build({ failureDomain: "fd-a" });
    assert.equal(objects.infrastructure.kind, "ProcessMachine");
    assert.deepEqual(objects.infrastructure.spec, { image: "etcd-3.4" });
    assert.equal(objects.infrastructure.metadata.labels?.tier, "gold");
    assert.equal(objects.bootstrap.kind, "ProcessBootstrapConfig");
    const machine = objects.machine;
    assert.equal(machine.spec.infrastructureRef.name, "cp-x-0");
    assert.equal(machine.spec.infrastructureRef.apiGroup, "infrastructure.cluster.x-k8s.io");
    assert.equal(machine.spec.bootstrap.configRef?.kind, "ProcessBootstrapConfig");
    assert.equal(machine.spec.version, "v1.31.2");
    assert.equal(machine.spec.failureDomain, "fd-a");
    assert.equal(machine.spec.deletion?.nodeDrainTimeoutSeconds, 120);
    assert.equal(machine.metadata.annotations?.[PRE_TERMINATE_HOOK], "");
    assert.equal(machine.metadata.labels?.[LABEL_CLUSTER_NAME], "c1");
    assert.equal(machine.metadata.labels?.[LABEL_CONTROL_PLANE_NAME], "cp");
    assert.equal(machine.metadata.ownerReferences?.[0].uid, "uid-cp");
  });

  it("copies the machine template's deletion timeouts, readiness gates and taints to the Machine, and no empty ones", () => {
    const qcp = controlPlane();
    qcp.spec.machineTemplate.spec.deletion = { nodeDrainTimeoutSeconds: 300, nodeDeletionTimeoutSeconds: 0 };
    qcp.spec.machineTemplate.spec.readinessGates = [{ conditionType: "example.com/Ready", polarity: "Negative" }];
    qcp.spec.machineTemplate.spec.taints = [{ key: "example.com/etcd", effect: "NoSchedule", propagation: "Always" }];
    const inputs = {
      clusterName: "c1",
      machineName: "cp-x-0",
      templateHash: "h1",
      infrastructureTemplate: infraTemplate,
      bootstrapConfigTemplate: bootTemplate,
    };
    const { machine } = buildMachineObjects({ ...inputs, controlPlane: qcp });
    assert.deepEqual(machine.spec.deletion, { nodeDrainTimeoutSeconds: 300, nodeDeletionTimeoutSeconds: 0 });
    assert.deepEqual(machine.spec.readinessGates, [{ conditionType: "example.com/Ready", polarity: "Negative" }]);
    assert.deepEqual(machine.spec.taints, [{ key: "example.com/etcd", effect: "NoSchedule", propagation: "Always" }]);
    qcp.spec.machineTemplate.spec.taints![0].key = "changed";
    assert.equal(machine.spec.taints?.[0].key, "example.com/etcd", "the Machine holds a copy, not the spec's object");

    const bare = controlPlane();
    delete bare.spec.machineTemplate.spec.deletion;
    bare.spec.machineTemplate.spec.readinessGates = [];
    const { machine: plain } = buildMachineObjects({ ...inputs, controlPlane: bare });
    assert.deepEqual(
      [plain.spec.deletion, plain.spec.readinessGates, plain.spec.taints],
      [undefined, undefined, undefined],
      "CAPI's Machine schema rejects an empty readinessGates list (minItems 1)",
    );
  });

  it("gives the Machine and both clones the template's metadata and records its keys, so in-place updates start in step", () => {
    const labelled = controlPlane();
    labelled.spec.machineTemplate.metadata = {
      labels: { team: "a", [LABEL_CLUSTER_NAME]: "forged" },
      annotations: { note: "n" },
    };
    const objects = build({ controlPlane: labelled });
    for (const object of [objects.machine, objects.infrastructure, objects.bootstrap]) {
      assert.equal(object.metadata.labels?.team, "a");
      assert.equal(object.metadata.labels?.[LABEL_CLUSTER_NAME], "c1", "the template cannot override Quorum's labels");
      assert.equal(object.metadata.annotations?.note, "n");
    }
    assert.deepEqual(
      inPlaceUpdates([objects.machine], {
        labels: { team: "a" },
        annotations: { note: "n" },
        deletion: { nodeDrainTimeoutSeconds: 120 },
        templateHash: "h1",
        legacyTemplateHash: "h0",
      }),
      [],
      "a new Machine needs no in-place update",
    );
  });

  it("records on a replacement the remediation it replaces, which in-place updates leave alone and the snapshot reads back", () => {
    const remediationFor = { machine: "cp-x-0", time: Date.parse("2026-11-29T11:59:00Z"), retryCount: 1 };
    const { machine } = build({ remediationFor });
    assert.equal(
      machine.metadata.annotations?.[REMEDIATION_FOR_ANNOTATION],
      '{"machine":"cp-x-0","time":"2026-11-29T11:59:00.000Z","retryCount":1}',
    );
    assert.equal(
      build().machine.metadata.annotations?.[REMEDIATION_FOR_ANNOTATION],
      undefined,
      "only on a replacement",
    );
    const template = { labels: {}, annotations: {}, deletion: { nodeDrainTimeoutSeconds: 120 }, templateHash: "h1" };
    assert.deepEqual(inPlaceUpdates([machine], { ...template, legacyTemplateHash: "h0" }), []);
    machine.metadata.creationTimestamp = "2026-11-29T12:00:00Z";
    const snapshot = buildSnapshot({
      now: Date.parse("2026-11-29T12:01:00Z"),
      controlPlane: controlPlane(),
      cluster: cluster(),
      machines: [machine],
      nodes: [],
      etcd: { observed: true, members: [], alarms: [] },
    });
    assert.deepEqual(snapshot.machines[0].remediationFor, remediationFor);
  });

  it("creates a Machine the shell's ownership rule claims as this QuorumControlPlane's, and nobody else's", () => {
    const { machine } = build();
    const ours = controlPlane();
    assert.deepEqual(claimMachines([machine], ours, "c1").owned, [machine]);
    const copy = { ...ours, metadata: { ...ours.metadata, name: "cp-copy", uid: "uid-copy" } };
    assert.deepEqual(claimMachines([machine], copy, "c1").owned, []);
  });

  it("refuses to create a Machine for a QuorumControlPlane without a UID, which no ownership check could claim", () => {
    const noUid = controlPlane();
    delete noUid.metadata.uid;
    assert.throws(
      () => build({ controlPlane: noUid, machineName: "m", templateHash: "h" }),
      /QuorumControlPlane ns\/cp has no metadata\.uid/,
    );
  });

  it("refuses a reference that is not a template, naming it", () => {
    assert.throws(
      () =>
        build({
          machineName: "m",
          templateHash: "h",
          infrastructureTemplate: { ...infraTemplate, kind: "ProcessMachine" },
        }),
      /ProcessMachine ns\/cp-infra is not a template/,
    );
  });
});

describe("machine factory with a control plane name over 63 characters", () => {
  const longName = "a-very-long-control-plane-name-that-is-definitely-longer-than-sixty-three-characters";

  it("labels the Machine and its clones with CAPI's hash of the name, which the shell's selection still finds", () => {
    const ours = controlPlane();
    ours.metadata.name = longName;
    const objects = build({ controlPlane: ours, machineName: `${longName}-x-0` });
    for (const object of [objects.machine, objects.infrastructure, objects.bootstrap])
      assert.equal(object.metadata.labels?.[LABEL_CONTROL_PLANE_NAME], "hash_E6ub4A_z");
    assert.equal(concernsControlPlane(objects.machine, longName), true);
    assert.equal(concernsControlPlane(objects.machine, "cp"), false);
  });
});

describe("which control plane a Machine event concerns", () => {
  it("is the QuorumControlPlane that is the Machine's controller, whatever its labels say", () => {
    const { machine } = build();
    assert.equal(controllingControlPlaneName(machine), "cp");
    const kcpOwned = {
      metadata: {
        ownerReferences: [
          {
            apiVersion: "controlplane.cluster.x-k8s.io/v1beta2",
            kind: "KubeadmControlPlane",
            name: "k",
            uid: "u",
            controller: true,
          },
        ],
      },
    };
    assert.equal(controllingControlPlaneName(kcpOwned), undefined);
  });
});

describe("machine factory under --watch-filter", () => {
  it("gives the Machine and its clones the QuorumControlPlane's watch-filter label, so a CAPI core in the same shard reconciles them", () => {
    const labelled = controlPlane();
    labelled.metadata.labels = { [LABEL_WATCH_FILTER]: "team-a" };
    const objects = build({ controlPlane: labelled });
    for (const object of [objects.machine, objects.infrastructure, objects.bootstrap])
      assert.equal(object.metadata.labels?.[LABEL_WATCH_FILTER], "team-a");
    const unlabelled = build();
    assert.equal(unlabelled.machine.metadata.labels?.[LABEL_WATCH_FILTER], undefined);
  });
});

describe("machine factory with spec.version written without the v", () => {
  it("gives the Machine the canonical v-prefixed version", () => {
    const { machine } = build({ controlPlane: controlPlane({ version: "1.31.2" }) });
    assert.equal(machine.spec.version, "v1.31.2");
  });
});
