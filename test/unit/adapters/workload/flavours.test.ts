// WorkloadFlavours, the one place ClusterWorkloadAccess and the simulator pick a bootstrap flavour's workload side:
// the generic flavour needs nothing (no workload client is even made), the kubeadm flavour's failures reach the port
// as its `error`, and only kubeadm's Machines are dialled.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Cluster } from "../../../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../../../src/api/types.ts";
import { WorkloadFlavours } from "../../../../src/adapters/workload/flavours.ts";
import type { WorkloadCaller } from "../../../../src/adapters/workload/client.ts";
import type { TemplateReader } from "../../../../src/ports/workload.ts";

function controlPlane(bootstrap: { apiVersion: string; kind: string }): QuorumControlPlane {
  return {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta2",
    kind: "QuorumControlPlane",
    metadata: { name: "demo", namespace: "team-a", uid: "uid-demo" },
    spec: {
      version: "v1.37.2",
      machineTemplate: {
        spec: {
          infrastructureRef: { kind: "ProcessMachineTemplate", name: "x" },
          bootstrapConfigTemplateRef: { ...bootstrap, name: "demo-control-plane" },
        },
      },
    },
  } as QuorumControlPlane;
}

const KUBEADM = controlPlane({ apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2", kind: "KubeadmConfigTemplate" });
const GENERIC = controlPlane({
  apiVersion: "bootstrap.quorum.example/v1alpha1",
  kind: "ProcessBootstrapConfigTemplate",
});
const CLUSTER: Cluster = { metadata: { name: "demo", namespace: "team-a" }, spec: {} };
const template: TemplateReader = async () => ({
  apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
  kind: "KubeadmConfigTemplate",
  metadata: { name: "demo-control-plane", namespace: "team-a" },
});

/** A workload API that refuses every call, as an unreachable one does. */
const unreachable: WorkloadCaller = async (what) => {
  throw new Error(`${what}: connect ECONNREFUSED 10.0.0.1:6443`);
};

describe("the bootstrap flavours' workload side", () => {
  it("asks nothing of a generic control plane's workload cluster, and its Machines are not dialled", async () => {
    const flavours = new WorkloadFlavours(() => 0);
    let callers = 0;
    const steps = await flavours.workloadSteps(GENERIC, CLUSTER, () => (callers++, unreachable), template);
    assert.deepEqual(steps, { steps: [] });
    assert.equal(callers, 0, "no workload client is made for a flavour without steps");
    assert.equal(flavours.of(GENERIC).machinesServeApi, false);
    await assert.rejects(
      flavours.prepare(GENERIC, CLUSTER, "kubeadm-config", () => unreachable, template),
      /the bootstrap provider of demo needs no workload step kubeadm-config/,
    );
  });

  it("reports a kubeadm workload API that does not answer as the port's error, naming the call", async () => {
    const flavours = new WorkloadFlavours(() => 0);
    const steps = await flavours.workloadSteps(KUBEADM, CLUSTER, () => unreachable, template);
    assert.equal(steps.flavour, "kubeadm");
    assert.deepEqual(steps.steps, []);
    assert.match(steps.error ?? "", /ECONNREFUSED 10\.0\.0\.1:6443/);
    assert.equal(flavours.of(KUBEADM).machinesServeApi, true);
  });

  it("lets the errors it is told to pass through escape (the simulator's crash signal)", async () => {
    class Crash extends Error {}
    const flavours = new WorkloadFlavours(
      () => 0,
      (error) => error instanceof Crash,
    );
    const crashing: WorkloadCaller = async () => {
      throw new Crash("crash");
    };
    await assert.rejects(
      flavours.workloadSteps(KUBEADM, CLUSTER, () => crashing, template),
      Crash,
    );
  });
});
