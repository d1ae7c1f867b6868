// Realistic objects as the API server returns them, shared by the controller unit tests.
import type { Cluster, Machine } from "../../../src/api/capi.ts";
import {
  API_VERSION,
  GROUP,
  KIND,
  LABEL_CLUSTER_NAME,
  LABEL_CONTROL_PLANE,
  LABEL_CONTROL_PLANE_NAME,
  PRE_TERMINATE_HOOK,
} from "../../../src/api/constants.ts";
import type { OwnerReference, QuorumControlPlane } from "../../../src/api/types.ts";

export function controlPlane(overrides: Partial<QuorumControlPlane["spec"]> = {}): QuorumControlPlane {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: "cp", namespace: "ns", uid: "uid-cp", generation: 2 },
    spec: {
      replicas: 3,
      version: "v1.31.2",
      machineTemplate: {
        spec: {
          infrastructureRef: {
            apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
            kind: "ProcessMachineTemplate",
            name: "cp-infra",
          },
          bootstrapConfigTemplateRef: {
            apiVersion: "bootstrap.cluster.x-k8s.io/v1beta1",
            kind: "ProcessBootstrapConfigTemplate",
            name: "cp-boot",
          },
          deletion: { nodeDrainTimeoutSeconds: 120 },
        },
      },
      ...overrides,
    },
  };
}

export function cluster(): Cluster {
  return {
    metadata: { name: "c1", namespace: "ns" },
    spec: { paused: false, controlPlaneRef: { apiGroup: GROUP, kind: KIND, name: "cp" } },
    status: {
      initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true },
      failureDomains: [
        { name: "fd-b", controlPlane: true },
        { name: "fd-a", controlPlane: true },
        { name: "workers", controlPlane: false },
      ],
    },
  };
}

/** The controller ownerRef Quorum's machine factory writes, naming QuorumControlPlane ns/cp (uid-cp) by default. */
export function ownedBy(name = "cp", uid = "uid-cp", kind = KIND, apiVersion = API_VERSION): OwnerReference {
  return { apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true };
}

/** A control-plane Machine as CAPI stores it: labelled for its control plane and Cluster, owned by QuorumControlPlane ns/cp. */
export function machine(
  name: string,
  extra: {
    node?: string;
    deleting?: string;
    hash?: string;
    ownerRemediated?: "True" | "False";
    healthCheck?: "True" | "False";
    owner?: OwnerReference;
    controlPlaneName?: string;
    clusterName?: string;
  } = {},
): Machine {
  const clusterName = extra.clusterName ?? "c1";
  return {
    metadata: {
      name,
      namespace: "ns",
      creationTimestamp: "2026-11-29T10:00:00Z",
      labels: {
        [LABEL_CLUSTER_NAME]: clusterName,
        [LABEL_CONTROL_PLANE]: "",
        [LABEL_CONTROL_PLANE_NAME]: extra.controlPlaneName ?? "cp",
      },
      ownerReferences: [extra.owner ?? ownedBy()],
      ...(extra.deleting ? { deletionTimestamp: extra.deleting } : {}),
      annotations: {
        [PRE_TERMINATE_HOOK]: "",
        ...(extra.hash ? { "controlplane.cluster.x-k8s.io/quorum-template-hash": extra.hash } : {}),
      },
    },
    spec: {
      clusterName,
      version: "v1.31.2",
      bootstrap: { dataSecretName: `${name}-boot` },
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "ProcessMachine", name },
      failureDomain: "fd-a",
    },
    status: {
      initialization: { infrastructureProvisioned: true, bootstrapDataSecretCreated: true },
      ...(extra.node ? { nodeRef: { name: extra.node } } : {}),
      addresses: [{ type: "InternalIP", address: "127.0.1.5" }],
      // A MachineHealthCheck sets both: HealthCheckSucceeded False with OwnerRemediated False asks the owner to act.
      ...(extra.ownerRemediated
        ? {
            conditions: [
              { type: "HealthCheckSucceeded", status: extra.healthCheck ?? extra.ownerRemediated, reason: "Checked" },
              { type: "OwnerRemediated", status: extra.ownerRemediated, reason: "WaitingForRemediation" },
            ],
          }
        : {}),
    },
  };
}
