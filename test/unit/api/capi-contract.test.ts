// Pins what CAPI v1.14.2 reads from and writes to a control plane and a control-plane template under the v1beta2
// contract, path by path, against our CRDs. The paths are copied from sigs.k8s.io/cluster-api@v1.14.2
// internal/contract/controlplane.go and controlplane_template.go (the v1beta2 branch where the two contracts
// differ); the topology controller (exp/topology/desiredstate/desired_state.go) writes them into the
// QuorumControlPlane it builds from a QuorumControlPlaneTemplate. A path missing from the CRD is pruned by the API
// server without an error, so the topology controller's write would vanish and the Cluster would never converge.
import { test } from "node:test";
import assert from "node:assert/strict";
import { CONTRACT_LABEL_V1BETA2, VERSION } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { readCrd, structuralErrors, type Crd, type Schema } from "./schema-check.ts";
import { completeTemplate } from "./samples.ts";

const qcpCrd = readCrd("bases/controlplane.cluster.x-k8s.io_quorumcontrolplanes.yaml");
const templateCrd = readCrd("bases/controlplane.cluster.x-k8s.io_quorumcontrolplanetemplates.yaml");
const schemaOf = (crd: Crd): Schema => crd.spec.versions[0].schema.openAPIV3Schema;

/** The schema node at a path of property names, where `[]` steps into an array's items. */
function resolve(root: Schema, path: string): Schema | undefined {
  let node: Schema | undefined = root;
  for (const name of path.split(".")) {
    if (name === "[]") node = node?.type === "array" ? node.items : undefined;
    else node = node?.properties?.[name];
  }
  return node;
}

type Expected = "string" | "date-time" | "int32" | "boolean" | "object" | "array" | "string map";

function typeOf(node: Schema): Expected | string {
  if (node.type === "string" && node.format === "date-time") return "date-time";
  if (node.type === "integer") return node.format === "int32" ? "int32" : `integer (format ${node.format})`;
  if (node.type === "object" && typeof node.additionalProperties === "object") {
    return node.additionalProperties.type === "string" ? "string map" : "map";
  }
  return node.type ?? "untyped";
}

function mismatches(root: Schema, paths: Record<string, Expected>): string[] {
  return Object.entries(paths).flatMap(([path, expected]) => {
    const node = resolve(root, path);
    if (!node) return [`${path}: missing (the API server would prune what CAPI writes there)`];
    const actual = typeOf(node);
    return actual === expected ? [] : [`${path}: ${actual}, CAPI's contract has ${expected}`];
  });
}

// ControlPlaneContract (internal/contract/controlplane.go), v1beta2 paths.
const controlPlanePaths: Record<string, Expected> = {
  "spec.version": "string", // Version
  "spec.replicas": "int32", // Replicas
  "spec.rollout.after": "date-time", // RolloutAfter
  "status.version": "string", // StatusVersion (read when status.versions is absent, see below)
  "status.initialization.controlPlaneInitialized": "boolean", // Initialized("v1beta2")
  "status.replicas": "int32", // StatusReplicas
  "status.readyReplicas": "int32", // ReadyReplicas
  "status.availableReplicas": "int32", // AvailableReplicas
  "status.upToDateReplicas": "int32", // UpToDateReplicas("v1beta2")
  "status.selector": "string", // Selector
  "status.conditions": "array", // AvailableConditionType() is looked up here
  "status.conditions.[].type": "string",
  "status.conditions.[].status": "string",
  // ControlPlaneMachineTemplate
  "spec.machineTemplate.metadata": "object", // Metadata
  "spec.machineTemplate.metadata.labels": "string map",
  "spec.machineTemplate.metadata.annotations": "string map",
  "spec.machineTemplate.spec.infrastructureRef": "object", // InfrastructureRef (getNestedRef/setNestedRef)
  "spec.machineTemplate.spec.infrastructureRef.apiGroup": "string",
  "spec.machineTemplate.spec.infrastructureRef.kind": "string",
  "spec.machineTemplate.spec.infrastructureRef.name": "string",
  "spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds": "int32", // NodeDrainTimeoutSeconds
  "spec.machineTemplate.spec.deletion.nodeVolumeDetachTimeoutSeconds": "int32", // NodeVolumeDetachTimeoutSeconds
  "spec.machineTemplate.spec.deletion.nodeDeletionTimeoutSeconds": "int32", // NodeDeletionTimeoutSeconds
  "spec.machineTemplate.spec.readinessGates": "array", // ReadinessGates("v1beta2"), []MachineReadinessGate
  "spec.machineTemplate.spec.readinessGates.[].conditionType": "string",
  "spec.machineTemplate.spec.readinessGates.[].polarity": "string",
  "spec.machineTemplate.spec.taints": "array", // Taints("v1beta2"), []MachineTaint
  "spec.machineTemplate.spec.taints.[].key": "string",
  "spec.machineTemplate.spec.taints.[].value": "string",
  "spec.machineTemplate.spec.taints.[].effect": "string",
  "spec.machineTemplate.spec.taints.[].propagation": "string",
};

// Paths of the contract Quorum leaves out on purpose, each with the reason CAPI copes without it.
const controlPlanePathsLeftOut: Record<string, string> = {
  "spec.controlPlaneEndpoint":
    "only for control planes that provide the endpoint; the Cluster's infrastructure provider provides it here",
  "status.versions": "optional: CurrentStatusVersion and IsUpgrading fall back to status.version when it is absent",
};

// Where the v1beta1 contract had them. CAPI reads these only for a CRD labelled with the v1beta1 contract, so a
// field here would be one the topology controller never writes and a user could set to no effect.
const v1beta1OnlySpecPaths = [
  "spec.machineTemplate.infrastructureRef",
  "spec.machineTemplate.nodeDrainTimeout",
  "spec.machineTemplate.nodeVolumeDetachTimeout",
  "spec.machineTemplate.nodeDeletionTimeout",
  "spec.machineTemplate.readinessGates",
  "spec.machineTemplate.taints",
  "spec.rolloutAfter",
];

// ControlPlaneTemplateContract (internal/contract/controlplane_template.go).
const templatePaths: Record<string, Expected> = {
  "spec.template.metadata": "object", // Template().Metadata()
  "spec.template.metadata.labels": "string map",
  "spec.template.metadata.annotations": "string map",
  "spec.template.spec.machineTemplate.metadata": "object", // Template().MachineTemplate().Metadata()
  "spec.template.spec.machineTemplate.metadata.labels": "string map",
  "spec.template.spec.machineTemplate.metadata.annotations": "string map",
};

test("both CRDs carry exactly one CAPI contract label, mapping the v1beta2 contract to our v1beta1", () => {
  // CAPI (internal/contract GetContractVersionForVersion) ranges over a Go map of the CRD's labels and returns the
  // first contract whose label lists the version: a second label naming v1beta1 makes the answer random.
  for (const [kind, crd] of [
    ["QuorumControlPlane", qcpCrd],
    ["QuorumControlPlaneTemplate", templateCrd],
  ] as const) {
    const contractLabels = Object.entries(crd.metadata.labels ?? {}).filter(([key]) =>
      key.startsWith("cluster.x-k8s.io/"),
    );
    assert.deepEqual(contractLabels, [[CONTRACT_LABEL_V1BETA2, VERSION]], `${kind}: its contract labels`);
  }
});

test("every path CAPI's v1beta2 control-plane contract reads or writes exists in the QuorumControlPlane CRD with the contract's type", () => {
  assert.deepEqual(mismatches(schemaOf(qcpCrd), controlPlanePaths), []);
});

test("the contract paths Quorum leaves out are absent, and each has a reason CAPI copes without it", () => {
  for (const [path, reason] of Object.entries(controlPlanePathsLeftOut)) {
    assert.equal(resolve(schemaOf(qcpCrd), path), undefined, `${path} exists now: move it to the pinned paths`);
    assert.ok(reason.length > 20, path);
  }
});

test("the QuorumControlPlane CRD has none of the v1beta1 contract's machine template or rollout paths", () => {
  const present = v1beta1OnlySpecPaths.filter((path) => resolve(schemaOf(qcpCrd), path) !== undefined);
  assert.deepEqual(present, []);
});

test("every path CAPI's control-plane template contract reads exists in the QuorumControlPlaneTemplate CRD", () => {
  assert.deepEqual(mismatches(schemaOf(templateCrd), templatePaths), []);
});

test("every machine template and rollout path of the contract also exists in the template, so a ClusterClass can set it", () => {
  const specPaths = Object.entries(controlPlanePaths).filter(
    ([path]) => path.startsWith("spec.machineTemplate.") || path.startsWith("spec.rollout."),
  );
  const inTemplate = Object.fromEntries(specPaths.map(([path, type]) => [`spec.template.${path}`, type]));
  assert.deepEqual(mismatches(schemaOf(templateCrd), inTemplate), []);
  assert.ok(
    resolve(schemaOf(templateCrd), "spec.template.spec.machineTemplate.spec.bootstrapConfigTemplateRef.name"),
    "a QuorumControlPlaneTemplate must carry the bootstrap config template: the topology controller does not set it",
  );
});

test("a QuorumControlPlane built from a template as the topology controller builds it loses no field to pruning", () => {
  // desired_state.go copies spec.template.spec, then sets each contract field it manages on top of it.
  const spec = structuredClone(completeTemplate.spec.template.spec) as Record<string, unknown>;
  const machineTemplate = spec.machineTemplate as { metadata?: object; spec: Record<string, unknown> };
  machineTemplate.spec.infrastructureRef = {
    apiGroup: "infrastructure.cluster.x-k8s.io",
    kind: "DockerMachineTemplate",
    name: "prod-control-plane-x7k2p",
  };
  machineTemplate.spec.readinessGates = [{ conditionType: "example.com/Ready" }];
  machineTemplate.spec.taints = [{ key: "example.com/dedicated", effect: "NoSchedule", propagation: "Always" }];
  machineTemplate.spec.deletion = {
    nodeDrainTimeoutSeconds: 300,
    nodeVolumeDetachTimeoutSeconds: 120,
    nodeDeletionTimeoutSeconds: 10,
  };
  machineTemplate.metadata = {
    labels: { "cluster.x-k8s.io/cluster-name": "prod", "topology.cluster.x-k8s.io/owned": "" },
    annotations: {},
  };
  const controlPlane = {
    apiVersion: `controlplane.cluster.x-k8s.io/${VERSION}`,
    kind: "QuorumControlPlane",
    metadata: { name: "prod-x7k2p", namespace: "default" },
    spec: {
      ...spec,
      replicas: 3,
      version: "v1.33.2",
      rollout: { ...(spec.rollout as object), after: "2026-05-01T00:00:00Z" },
    },
  } as unknown as QuorumControlPlane;
  assert.deepEqual(structuralErrors(schemaOf(qcpCrd), controlPlane), []);
});
