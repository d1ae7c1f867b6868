// Which Nodes a reconcile reads. A workload cluster has hundreds of worker Nodes; a kubeadm control plane's are the ones
// kubeadm labelled control-plane (what KCP lists), plus any its Machines' nodeRefs name that carry no label (a join
// that stopped before its mark-control-plane phase). Another flavour may not label its Nodes: all of them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { nodeQuery } from "../../../src/controller/observe.ts";
import { controlPlane, machine } from "./fixtures.ts";

const KUBEADM = {
  machineTemplate: {
    spec: {
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "ProcessMachineTemplate", name: "m" },
      bootstrapConfigTemplateRef: { apiGroup: "bootstrap.cluster.x-k8s.io", kind: "KubeadmConfigTemplate", name: "k" },
    },
  },
};

describe("the Nodes a reconcile reads", () => {
  it("for kubeadm: those labelled control-plane, and each Node a Machine's nodeRef names", () => {
    const machines = [
      machine("cp-a", { node: "ip-10-0-0-2" }),
      machine("cp-b", { node: "ip-10-0-0-3" }),
      machine("cp-c"),
    ];
    assert.deepEqual(nodeQuery(controlPlane(KUBEADM), machines), {
      labelSelector: "node-role.kubernetes.io/control-plane",
      names: ["ip-10-0-0-2", "ip-10-0-0-3"],
    });
  });

  it("for another bootstrap provider: every Node", () => {
    assert.deepEqual(nodeQuery(controlPlane(), [machine("cp-a", { node: "n1" })]), { names: [] });
  });
});
