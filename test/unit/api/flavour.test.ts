// The bootstrap flavour decides how a Machine is best removed when the spec does not say: kubeadm ≥ 1.31 points a
// control-plane node's kubelet at its local API server, so its etcd member goes after the drain (AfterDrain), as KCP;
// and how etcd is reached: kubeadm's etcd is the static pod etcd-<node>, reachable through the workload API server.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultEtcdAccess, defaultMemberRemoval, etcdAccessOf, flavourOf } from "../../../src/api/flavour.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { buildSnapshot } from "../../../src/controller/snapshot-builder.ts";
import { cluster, controlPlane } from "../controller/fixtures.ts";

function kubeadm(version: string, spec: Partial<QuorumControlPlane["spec"]> = {}): QuorumControlPlane {
  const qcp = controlPlane({ version, ...spec });
  qcp.spec.machineTemplate.spec.bootstrapConfigTemplateRef = {
    apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
    kind: "KubeadmConfigTemplate",
    name: "cp-kubeadm",
  };
  return qcp;
}

function memberRemovalOf(qcp: QuorumControlPlane): string {
  return buildSnapshot({
    now: 0,
    controlPlane: qcp,
    cluster: cluster(),
    machines: [],
    nodes: [],
    etcd: { observed: true, members: [], alarms: [] },
  }).controlPlane.memberRemoval;
}

describe("memberRemoval when the spec leaves it unset", () => {
  it("is AfterDrain for kubeadm Machines from Kubernetes 1.31 on (the kubelet talks to its local API server)", () => {
    assert.equal(flavourOf(kubeadm("v1.37.2")), "kubeadm");
    assert.equal(defaultMemberRemoval(kubeadm("v1.37.2")), "AfterDrain");
    assert.equal(defaultMemberRemoval(kubeadm("1.31.0")), "AfterDrain");
    assert.equal(memberRemovalOf(kubeadm("v1.36.3")), "AfterDrain");
  });

  it("is BeforeDelete for kubeadm before 1.31 and for other bootstrap providers", () => {
    assert.equal(defaultMemberRemoval(kubeadm("v1.30.9")), "BeforeDelete");
    assert.equal(flavourOf(controlPlane({ version: "v1.37.2" })), "generic");
    assert.equal(memberRemovalOf(controlPlane({ version: "v1.37.2" })), "BeforeDelete");
  });

  it("is what the spec says when it says it", () => {
    const qcp = kubeadm("v1.37.2", {
      rollout: { strategy: { type: "RollingUpdate", rollingUpdate: { memberRemoval: "BeforeDelete" } } },
    });
    assert.equal(memberRemovalOf(qcp), "BeforeDelete");
    const unset = kubeadm("v1.37.2", {
      rollout: { strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 0 } } },
    });
    assert.equal(memberRemovalOf(unset), "AfterDrain");
  });
});

describe("etcd access when the spec leaves it unset", () => {
  it("is APIServerProxy for kubeadm Machines (etcd runs as the static pod etcd-<node>)", () => {
    assert.equal(defaultEtcdAccess(kubeadm("v1.37.2")), "APIServerProxy");
    assert.equal(etcdAccessOf(kubeadm("v1.30.9")), "APIServerProxy");
  });

  it("is Direct for the generic (process) flavour, whose etcd need not run in a pod", () => {
    assert.equal(defaultEtcdAccess(controlPlane({ version: "v1.37.2" })), "Direct");
    assert.equal(etcdAccessOf(controlPlane({ version: "v1.37.2" })), "Direct");
  });

  it("is what the spec says when it says it, for either flavour", () => {
    assert.equal(etcdAccessOf(kubeadm("v1.37.2", { etcd: { access: "Direct" } })), "Direct");
    assert.equal(
      etcdAccessOf(controlPlane({ version: "v1.37.2", etcd: { access: "APIServerProxy" } })),
      "APIServerProxy",
    );
  });
});
