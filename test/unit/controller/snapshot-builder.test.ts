import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildSnapshot, machineTemplateHash, type Observation } from "../../../src/controller/snapshot-builder.ts";
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
    otherInfra.spec.machineTemplate.infrastructureRef.name = "cp-infra-v2";
    const otherTimeout = controlPlane();
    otherTimeout.spec.machineTemplate.nodeDrainTimeout = "10m";
    assert.notEqual(machineTemplateHash(otherInfra), base);
    assert.equal(machineTemplateHash(otherTimeout), base);
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
});
