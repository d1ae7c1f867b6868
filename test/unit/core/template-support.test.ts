import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Unstructured } from "../../../src/api/objects.ts";
import { unsupportedBootstrapTemplate } from "../../../src/core/template-support.ts";

function kubeadmTemplate(clusterConfiguration: Record<string, unknown> | undefined): Unstructured {
  return {
    apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
    kind: "KubeadmConfigTemplate",
    metadata: { name: "cp-boot", namespace: "ns" },
    spec: { template: { spec: clusterConfiguration ? { clusterConfiguration } : {} } },
  };
}

describe("bootstrap templates Quorum cannot create Machines from", () => {
  it("refuses a KubeadmConfigTemplate with external etcd, naming the template and the field", () => {
    const why = unsupportedBootstrapTemplate(
      kubeadmTemplate({ etcd: { external: { endpoints: ["https://etcd.example:2379"] } } }),
    );
    assert.match(
      why ?? "",
      /^KubeadmConfigTemplate ns\/cp-boot sets spec\.template\.spec\.clusterConfiguration\.etcd\.external: Quorum runs stacked etcd/,
    );
  });

  const usable: [string, Unstructured][] = [
    ["local etcd", kubeadmTemplate({ etcd: { local: { dataDir: "/var/lib/etcd" } } })],
    ["no etcd section", kubeadmTemplate({ apiServer: {} })],
    ["no clusterConfiguration", kubeadmTemplate(undefined)],
    [
      "another provider's template",
      {
        apiVersion: "b/v1",
        kind: "TestBootstrapConfigTemplate",
        metadata: { name: "t" },
        spec: { template: { spec: { join: "learner" } } },
      },
    ],
  ];
  for (const [what, template] of usable)
    it(`accepts a template with ${what}`, () => assert.equal(unsupportedBootstrapTemplate(template), undefined));
});
