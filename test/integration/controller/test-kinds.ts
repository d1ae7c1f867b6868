// CRDs for the infrastructure and bootstrap kinds the controller integration tests use. They hold nothing: the
// test's MachinePlayer plays the providers. Labelled with the CAPI contract so Quorum resolves refs by group.
import type { V1CustomResourceDefinition, V1JSONSchemaProps } from "@kubernetes/client-node";

export const INFRA_GROUP = "infrastructure.cluster.x-k8s.io";
export const BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io";
export const TEST_VERSION = "v1alpha1";

function crd(group: string, kind: string): V1CustomResourceDefinition {
  const plural = `${kind.toLowerCase()}s`;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}`, labels: { "cluster.x-k8s.io/v1beta2": TEST_VERSION } },
    spec: {
      group,
      scope: "Namespaced",
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: TEST_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          // installCRDs posts raw JSON, so the wire name of the field is used, not client-node's model name.
          schema: {
            openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } as V1JSONSchemaProps,
          },
        },
      ],
    },
  };
}

export function testKindCRDs(): V1CustomResourceDefinition[] {
  return [
    crd(INFRA_GROUP, "TestMachineTemplate"),
    crd(INFRA_GROUP, "TestMachine"),
    crd(BOOTSTRAP_GROUP, "TestBootstrapConfigTemplate"),
    crd(BOOTSTRAP_GROUP, "TestBootstrapConfig"),
  ];
}
