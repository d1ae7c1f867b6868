import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  buildSnapshot,
  legacyMachineTemplateHash,
  machineTemplateHash,
  type Observation,
} from "../../../src/controller/snapshot-builder.ts";
import type { Node } from "../../../src/api/capi.ts";
import { claimMachines } from "../../../src/api/ownership.ts";
import { isUpToDate } from "../../../src/core/selection.ts";
import { cluster, controlPlane, machine, ownedBy } from "./fixtures.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");

function observation(overrides: Partial<Observation> = {}): Observation {
  return {
    now: NOW,
    controlPlane: controlPlane(),
    cluster: cluster(),
    machines: [machine("cp-b", { node: "node-b" }), machine("cp-a")],
    nodes: [],
    etcd: { observed: true, members: [], alarms: [] },
    ...overrides,
  };
}

describe("buildSnapshot", () => {
  it("uses the node name as a Machine's member name once the node is known, else the Machine name", () => {
    const snapshot = buildSnapshot(observation());
    assert.deepEqual(
      snapshot.machines.map((m) => [m.name, m.memberName]),
      [
        ["cp-a", "cp-a"],
        ["cp-b", "node-b"],
      ],
    );
  });

  it("reads since when a Node is NotReady from its Ready condition's lastTransitionTime, and nothing for a Ready one", () => {
    const condition = (status: string, lastTransitionTime?: string) => ({
      metadata: {},
      status: { conditions: [{ type: "Ready", status, ...(lastTransitionTime ? { lastTransitionTime } : {}) }] },
    });
    const nodes = [
      { ...condition("False", "2026-11-29T11:59:00Z"), metadata: { name: "joining" } },
      { ...condition("Unknown", "2026-11-29T11:00:00Z"), metadata: { name: "kubelet-stopped" } },
      { ...condition("True", "2026-11-29T10:00:00Z"), metadata: { name: "ready" } },
      { ...condition("False"), metadata: { name: "no-time" } },
      { metadata: { name: "no-status" } },
    ];
    const snapshot = buildSnapshot(observation({ nodes }));
    assert.deepEqual(
      snapshot.nodes.map((node) => [node.name, node.ready, node.notReadySince]),
      [
        ["joining", false, Date.parse("2026-11-29T11:59:00Z")],
        ["kubelet-stopped", false, Date.parse("2026-11-29T11:00:00Z")],
        ["no-status", false, undefined],
        ["no-time", false, undefined],
        ["ready", true, undefined],
      ],
    );
  });

  it("reads whether each Node carries kubeadm's control-plane label, whatever its value", () => {
    const nodes: Node[] = [
      { metadata: { name: "labelled", labels: { "node-role.kubernetes.io/control-plane": "" } } },
      { metadata: { name: "half-joined", labels: { "kubernetes.io/hostname": "half-joined" } } },
      { metadata: { name: "no-labels" } },
    ];
    const snapshot = buildSnapshot(observation({ nodes }));
    assert.deepEqual(
      snapshot.nodes.map((node) => [node.name, node.controlPlaneLabel]),
      [
        ["half-joined", false],
        ["labelled", true],
        ["no-labels", false],
      ],
    );
  });

  it("reads spec.version 1.31.2 as v1.31.2, so Machines at v1.31.2 are up to date and nothing rolls", () => {
    const snapshot = buildSnapshot(observation({ controlPlane: controlPlane({ version: "1.31.2" }) }));
    assert.equal(snapshot.controlPlane.version, "v1.31.2");
    assert.deepEqual(
      snapshot.machines.map((m) => isUpToDate(snapshot, m)),
      [true, true],
    );
  });

  it("waits for a controlPlaneEndpoint only on a Cluster whose infrastructure provider is to set it", () => {
    const awaiting = (spec: Partial<NonNullable<ReturnType<typeof cluster>["spec"]>>) => {
      const base = cluster();
      return buildSnapshot(observation({ cluster: { ...base, spec: { ...base.spec, ...spec } } })).cluster
        .awaitingEndpoint;
    };
    const infrastructureRef = { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "ProcessCluster", name: "c1" };
    assert.equal(awaiting({ infrastructureRef }), true, "no endpoint yet");
    assert.equal(awaiting({ infrastructureRef, controlPlaneEndpoint: { host: "10.0.0.1", port: 0 } }), true, "port 0");
    assert.equal(awaiting({ infrastructureRef, controlPlaneEndpoint: { host: "", port: 6443 } }), true, "empty host");
    assert.equal(awaiting({ infrastructureRef, controlPlaneEndpoint: { host: "10.0.0.1", port: 6443 } }), undefined);
    assert.equal(awaiting({}), undefined, "no infrastructure provider: etcd-only Machines need no endpoint");
  });

  it("lists only failure domains that may hold control-plane Machines, sorted", () => {
    assert.deepEqual(buildSnapshot(observation()).cluster.failureDomains, ["fd-a", "fd-b"]);
  });

  it("carries the Cluster's controlPlaneRef and the Machines claimMachines found not to be ours, for the planner's one-owner gate", () => {
    const kcp = machine("kcp-a", { controlPlaneName: "kcp", owner: ownedBy("kcp", "uid-kcp", "KubeadmControlPlane") });
    const { foreign } = claimMachines([machine("cp-a"), kcp], controlPlane(), "c1");
    const view = buildSnapshot(observation({ foreignMachines: foreign })).cluster;
    assert.deepEqual(view.controlPlaneRef, {
      apiGroup: "controlplane.cluster.x-k8s.io",
      kind: "QuorumControlPlane",
      name: "cp",
    });
    assert.deepEqual(view.foreignMachines, [
      {
        name: "kcp-a",
        owner: "KubeadmControlPlane ns/kcp",
        sameCluster: true,
        why: "its controller is KubeadmControlPlane ns/kcp",
      },
    ]);
  });

  it("marks a Machine whose OwnerRemediated condition is False as asking for remediation", () => {
    const snapshot = buildSnapshot(
      observation({
        machines: [machine("cp-a", { ownerRemediated: "False" }), machine("cp-b", { ownerRemediated: "True" })],
      }),
    );
    assert.deepEqual(
      snapshot.machines.map((m) => m.remediationRequested),
      [true, false],
    );
  });

  it("does not remediate a Machine that recovered before Quorum acted, and marks its stale OwnerRemediated for removal", () => {
    // The MachineHealthCheck sets HealthCheckSucceeded True again but leaves OwnerRemediated False to the owner.
    const snapshot = buildSnapshot(
      observation({ machines: [machine("cp-a", { ownerRemediated: "False", healthCheck: "True" })] }),
    );
    assert.equal(snapshot.machines[0].remediationRequested, false);
    assert.equal(snapshot.machines[0].remediationWithdrawn, true);
  });

  it("reads the remediation memory from its annotation, which clusterctl move carries, before status", () => {
    const qcp = controlPlane();
    qcp.metadata.annotations = {
      "controlplane.cluster.x-k8s.io/quorum-last-remediation": JSON.stringify({
        machine: "cp-x",
        time: "2026-11-29T11:00:00Z",
        retryCount: 2,
      }),
    };
    qcp.status = { lastRemediation: { machine: "cp-old", time: "2026-11-28T11:00:00Z", retryCount: 0 } };
    const last = buildSnapshot(observation({ controlPlane: qcp })).controlPlane.remediation.last;
    assert.deepEqual(last, { machine: "cp-x", time: Date.parse("2026-11-29T11:00:00Z"), retryCount: 2 });
  });

  it("falls back to status.lastRemediation when the annotation is not what Quorum writes", () => {
    for (const garbage of ["{not json", '{"machine":"cp-x","time":"yesterday","retryCount":1}', '{"machine":"cp-x"}']) {
      const qcp = controlPlane();
      qcp.metadata.annotations = { "controlplane.cluster.x-k8s.io/quorum-last-remediation": garbage };
      qcp.status = { lastRemediation: { machine: "cp-old", time: "2026-11-28T11:00:00Z", retryCount: 1 } };
      const last = buildSnapshot(observation({ controlPlane: qcp })).controlPlane.remediation.last;
      assert.equal(last?.machine, "cp-old", garbage);
    }
  });

  it("reads a replacement's remediation-for annotation, and one that is not what Quorum writes as none (a first try)", () => {
    const read = (text: string) => {
      const replacement = machine("cp-b");
      replacement.metadata.annotations = { "controlplane.cluster.x-k8s.io/quorum-remediation-for": text };
      return buildSnapshot(observation({ machines: [replacement] })).machines[0].remediationFor;
    };
    assert.deepEqual(read('{"machine":"cp-a","time":"2026-11-29T11:00:00Z","retryCount":0}'), {
      machine: "cp-a",
      time: Date.parse("2026-11-29T11:00:00Z"),
      retryCount: 0,
    });
    for (const garbage of ["{not json", '{"machine":"cp-a","time":"now","retryCount":0}', '{"retryCount":-1}', "null"])
      assert.equal(read(garbage), undefined, garbage);
  });

  it("names the object and the field when a duration in the spec is invalid", () => {
    assert.throws(
      () =>
        buildSnapshot(
          observation({ controlPlane: controlPlane({ etcd: { ghostMemberGracePeriod: "five minutes" } }) }),
        ),
      /QuorumControlPlane ns\/cp spec\.etcd\.ghostMemberGracePeriod: "five minutes" is not a duration/,
    );
  });

  it("takes a control plane being deleted down with the default in place of an invalid duration", () => {
    const deleted = controlPlane({
      etcd: { ghostMemberGracePeriod: "0s" },
      deletion: { etcdMemberRemovalTimeout: "five minutes" },
    });
    deleted.metadata.deletionTimestamp = "2026-11-29T11:59:00Z";
    const view = buildSnapshot(observation({ controlPlane: deleted })).controlPlane;
    assert.equal(view.etcd.ghostGracePeriodMs, 300_000);
    assert.equal(view.deletion.etcdMemberRemovalTimeoutMs, 600_000);
    assert.equal(view.deletion.startedAt, Date.parse("2026-11-29T11:59:00Z"));
  });

  it("changes the template hash when the infrastructure template changes but not when a drain timeout changes", () => {
    const base = machineTemplateHash(controlPlane());
    const otherInfra = controlPlane();
    otherInfra.spec.machineTemplate.spec.infrastructureRef.name = "cp-infra-v2";
    const otherTimeout = controlPlane();
    otherTimeout.spec.machineTemplate.spec.deletion = { nodeDrainTimeoutSeconds: 600 };
    assert.notEqual(machineTemplateHash(otherInfra), base);
    assert.equal(machineTemplateHash(otherTimeout), base);
    const otherLabels = controlPlane();
    otherLabels.spec.machineTemplate.metadata = { labels: { tier: "gold" } };
    assert.equal(machineTemplateHash(otherLabels), base, "metadata reaches Machines in place, not by a rollout");
  });

  it("knows the hash earlier releases recorded (metadata included), so their Machines are not rolled out after an upgrade", () => {
    // Values the release before in-place propagation and the v1beta2 layout (7e75250) wrote for these specs.
    assert.equal(legacyMachineTemplateHash(controlPlane()), "fefe589e39");
    const labelled = controlPlane();
    labelled.spec.machineTemplate.metadata = { labels: { tier: "gold" } };
    assert.equal(legacyMachineTemplateHash(labelled), "ecc1007b48");
    const view = buildSnapshot(observation({ controlPlane: labelled })).controlPlane;
    assert.equal(view.legacyTemplateHash, "ecc1007b48");
    assert.notEqual(view.templateHash, view.legacyTemplateHash);
  });

  it("leaves readiness gates and taints out of the template hash: they reach the Machines in place", () => {
    const base = machineTemplateHash(controlPlane());
    const gated = controlPlane();
    gated.spec.machineTemplate.spec.readinessGates = [{ conditionType: "example.com/Ready" }];
    gated.spec.machineTemplate.spec.taints = [{ key: "a", effect: "NoSchedule", propagation: "Always" }];
    assert.equal(machineTemplateHash(gated), base);
  });
});

describe("drain state for memberRemoval AfterDrain", () => {
  it("reads CAPI's Deleting condition: draining is not finished, waiting for the pre-terminate hook is", () => {
    const draining = machine("cp-a", { deleting: "2026-11-29T11:59:00Z" });
    draining.status = {
      ...draining.status,
      conditions: [{ type: "Deleting", status: "True", reason: "DrainingNode" }],
    };
    const drained = machine("cp-b", { deleting: "2026-11-29T11:59:00Z" });
    drained.status = {
      ...drained.status,
      conditions: [{ type: "Deleting", status: "True", reason: "WaitingForPreTerminateHook" }],
    };
    const snapshot = buildSnapshot(observation({ machines: [draining, drained, machine("cp-c")] }));
    assert.deepEqual(
      snapshot.machines.map((m) => m.drainFinished),
      [false, true, undefined],
    );
  });

  it("reads the member Quorum recorded removing from a Machine's annotation", () => {
    const removed = machine("cp-a", { deleting: "2026-11-29T11:59:00Z" });
    removed.metadata.annotations = {
      ...removed.metadata.annotations,
      "controlplane.cluster.x-k8s.io/quorum-removed-etcd-member": "12345",
    };
    const snapshot = buildSnapshot(observation({ machines: [removed, machine("cp-b")] }));
    assert.deepEqual(
      snapshot.machines.map((m) => m.memberRemoved),
      ["12345", undefined],
    );
  });

  it("names the Machine's pre-terminate hooks other than Quorum's, by what follows CAPI's prefix", () => {
    const hooked = machine("cp-a", { deleting: "2026-11-29T11:59:00Z" });
    hooked.metadata.annotations = {
      ...hooked.metadata.annotations,
      "pre-terminate.delete.hook.machine.cluster.x-k8s.io/quorum": "",
      "pre-terminate.delete.hook.machine.cluster.x-k8s.io/volume-detach": "storage-controller",
      "pre-terminate.delete.hook.machine.cluster.x-k8s.io/etcd-backup": "",
      "pre-drain.delete.hook.machine.cluster.x-k8s.io/cordon": "",
    };
    const snapshot = buildSnapshot(observation({ machines: [hooked, machine("cp-b")] }));
    assert.deepEqual(
      snapshot.machines.map((m) => m.otherPreTerminateHooks),
      [["etcd-backup", "volume-detach"], undefined],
    );
  });

  it("keeps what CAPI says the drain waits on, on one line and bounded, only while it drains", () => {
    const message =
      "Drain not completed yet (started at 2026-12-02T21:28:32Z):\n* Pod kube-system/coredns-589f44dc88-sc5k8: deletionTimestamp set, but still not removed from the Node";
    const draining = machine("cp-a", { deleting: "2026-11-29T11:59:00Z" });
    draining.status = {
      ...draining.status,
      conditions: [{ type: "Deleting", status: "True", reason: "DrainingNode", message }],
    };
    const long = machine("cp-b", { deleting: "2026-11-29T11:59:00Z" });
    long.status = {
      ...long.status,
      conditions: [{ type: "Deleting", status: "True", reason: "DrainingNode", message: "x".repeat(1000) }],
    };
    const drained = machine("cp-c", { deleting: "2026-11-29T11:59:00Z" });
    drained.status = {
      ...drained.status,
      conditions: [{ type: "Deleting", status: "True", reason: "WaitingForPreTerminateHook", message: "waiting" }],
    };
    const [first, second, third] = buildSnapshot(observation({ machines: [draining, long, drained] })).machines;
    assert.equal(
      first.drainDetail,
      "Drain not completed yet (started at 2026-12-02T21:28:32Z): * Pod kube-system/coredns-589f44dc88-sc5k8: deletionTimestamp set, but still not removed from the Node",
    );
    assert.equal(second.drainDetail?.length, 300);
    assert.equal(third.drainDetail, undefined);
  });
});
