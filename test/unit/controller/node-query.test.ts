// Which Nodes a reconcile reads. A workload cluster has hundreds of worker Nodes; a kubeadm control plane's are the ones
// kubeadm labelled control-plane (what KCP lists), plus any its Machines' nodeRefs name that carry no label (a join
// that stopped before its mark-control-plane phase). Another flavour may not label its Nodes: all of them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { machineNodes, nodeQuery } from "../../../src/controller/observe.ts";
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

  it("maps each address of a Machine with a nodeRef to its Node, for the etcd tunnel (a Node may list another NIC's)", () => {
    const withAddresses = (name: string, addresses: string[], extra: Parameters<typeof machine>[1]) => {
      const found = machine(name, extra);
      found.status = {
        ...found.status,
        addresses: addresses.map((address) => ({ type: address.includes(".") ? "InternalIP" : "Hostname", address })),
      };
      return found;
    };
    const machines = [
      withAddresses("cp-a", ["10.0.1.2", "IP-10-0-0-2"], { node: "ip-10-0-0-2" }),
      withAddresses("cp-b", ["10.0.1.3"], {}),
      withAddresses("cp-c", ["10.0.1.4", "10.0.1.2"], { node: "ip-10-0-0-4", deleting: "2026-11-30T10:00:00Z" }),
    ];
    assert.deepEqual(
      machineNodes(machines),
      new Map([
        ["10.0.1.4", "ip-10-0-0-4"],
        ["10.0.1.2", "ip-10-0-0-2"],
        ["ip-10-0-0-2", "ip-10-0-0-2"],
      ]),
      "cp-c is deleting: the address it shares with cp-a goes to cp-a's Node",
    );
  });
});
