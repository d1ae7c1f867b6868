// The fixtures' objects as a management cluster really serves them: with everything CAPI core, kubectl and the API
// server add that Quorum does not read (modelled on CAPI v1.10 v1beta2 objects of a kubeadm control plane).
import type { Cluster, Machine } from "../../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";

/** `extra` merged into `base` (objects field by field; `base` wins where both have a scalar or a list). */
export function withExtra<T>(base: T, extra: unknown): T {
  return merge(base, extra) as T;
}

function merge(base: unknown, extra: unknown): unknown {
  if (base === undefined) return structuredClone(extra);
  if (!isObject(base) || !isObject(extra)) return structuredClone(base);
  const merged: Record<string, unknown> = structuredClone(base);
  for (const [field, value] of Object.entries(extra)) merged[field] = merge(base[field], value);
  return merged;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function condition(type: string, reason: string, extra: Record<string, unknown> = {}) {
  return {
    type,
    status: "True",
    reason,
    message: "",
    lastTransitionTime: "2026-11-29T10:04:12Z",
    observedGeneration: 3,
    ...extra,
  };
}

function managedFields(manager: string, fields: string[]) {
  return [
    {
      manager,
      operation: "Update",
      apiVersion: "cluster.x-k8s.io/v1beta2",
      time: "2026-11-29T10:04:12Z",
      fieldsType: "FieldsV1",
      fieldsV1: Object.fromEntries(fields.map((field) => [`f:${field}`, { ".": {}, "f:a": {}, "f:b": {}, "f:c": {} }])),
    },
    {
      manager: `${manager}-status`,
      operation: "Update",
      apiVersion: "cluster.x-k8s.io/v1beta2",
      time: "2026-11-29T10:06:40Z",
      fieldsType: "FieldsV1",
      subresource: "status",
      fieldsV1: { "f:status": Object.fromEntries(fields.map((field) => [`f:${field}`, { ".": {}, "f:x": {} }])) },
    },
  ];
}

/** Fields of a Machine that Quorum reads, as CAPI sets them. */
export const MACHINE_READ = {
  metadata: {
    generation: 3,
    resourceVersion: "48213",
    uid: "9b0b8d84-1f3e-4a5e-9a57-6a0c4d0f9f11",
    finalizers: ["machine.cluster.x-k8s.io"],
  },
  status: {
    phase: "Running",
    conditions: [
      condition("Available", "Available"),
      condition("Ready", "Ready"),
      condition("UpToDate", "UpToDate"),
      condition("BootstrapConfigReady", "Ready"),
      condition("InfrastructureReady", "Ready"),
      condition("NodeReady", "NodeReady"),
      condition("NodeHealthy", "NodeHealthy"),
      condition("Deleting", "NotDeleting", { status: "False" }),
      condition("Paused", "NotPaused", { status: "False" }),
    ],
  },
};

/** What a Machine carries besides what Quorum reads. */
export const MACHINE_UNREAD = {
  metadata: {
    generateName: "cp-",
    managedFields: managedFields("manager", ["metadata", "spec", "labels", "annotations", "ownerReferences"]),
  },
  spec: { minReadySeconds: 0 },
  status: {
    observedGeneration: 3,
    lastUpdated: "2026-11-29T10:06:40Z",
    certificatesExpiryDate: "2027-11-29T10:02:00Z",
    nodeInfo: {
      machineID: "3c1b1a1f0e8e4a6f8e6d3f0c1b2a3c4d",
      systemUUID: "3c1b1a1f-0e8e-4a6f-8e6d-3f0c1b2a3c4d",
      bootID: "b1a3f0c2-6e8e-4f6d-9a0c-1b2a3c4d5e6f",
      kernelVersion: "6.8.0-1015-aws",
      osImage: "Ubuntu 24.04.1 LTS",
      containerRuntimeVersion: "containerd://1.7.22",
      kubeletVersion: "v1.31.2",
      kubeProxyVersion: "v1.31.2",
      operatingSystem: "linux",
      architecture: "amd64",
    },
    deletion: { nodeDrainStartTime: "2026-11-29T11:00:00Z" },
    deprecated: {
      v1beta1: {
        conditions: ["Ready", "BootstrapReady", "InfrastructureReady", "NodeHealthy", "DrainingSucceeded"].map(
          (type) => ({ type, status: "True", lastTransitionTime: "2026-11-29T10:04:12Z" }),
        ),
        readyReplicas: 1,
      },
    },
  },
};

/** Fields of a Cluster that Quorum reads, as CAPI sets them. */
export const CLUSTER_READ = {
  metadata: {
    generation: 4,
    resourceVersion: "48100",
    uid: "6f9e1d2c-2222-4b1a-9c3d-1e2f3a4b5c6d",
    finalizers: ["cluster.cluster.x-k8s.io"],
    labels: { "topology.cluster.x-k8s.io/owned": "" },
  },
  spec: {
    controlPlaneEndpoint: { host: "10.0.1.5", port: 6443 },
    topology: { classRef: { name: "quorum-class" } },
  },
  status: {
    conditions: [
      condition("Available", "Available"),
      condition("InfrastructureReady", "Ready"),
      condition("ControlPlaneInitialized", "Initialized"),
      condition("ControlPlaneAvailable", "Available"),
      condition("WorkersAvailable", "Available"),
      condition("TopologyReconciled", "ReconcileSucceeded"),
      condition("RemoteConnectionProbe", "ProbeSucceeded"),
    ],
  },
};

/** What a Cluster made from a ClusterClass carries besides what Quorum reads. */
export const CLUSTER_UNREAD = {
  metadata: {
    annotations: {
      "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Cluster",
        metadata: { name: "c1", namespace: "ns" },
        spec: {
          topology: { classRef: { name: "quorum-class" }, version: "v1.31.2", workers: { machineDeployments: [] } },
        },
      }),
    },
    managedFields: managedFields("capi-topology", ["metadata", "spec", "topology", "clusterNetwork"]),
  },
  spec: {
    clusterNetwork: { pods: { cidrBlocks: ["192.168.0.0/16"] }, services: { cidrBlocks: ["10.128.0.0/12"] } },
    topology: {
      version: "v1.31.2",
      controlPlane: { replicas: 3, metadata: { labels: { tier: "control-plane" } } },
      workers: {
        machineDeployments: ["md-0", "md-1", "md-2"].map((name) => ({
          class: "default-worker",
          name,
          replicas: 3,
          failureDomain: "fd-a",
        })),
      },
      variables: [
        { name: "imageRepository", value: "registry.k8s.io" },
        { name: "etcdImageTag", value: "3.5.16-0" },
        { name: "kubeadmControlPlaneMaxSurge", value: "1" },
        { name: "podSecurityStandard", value: { enabled: true, enforce: "baseline", audit: "restricted" } },
        { name: "preKubeadmCommands", value: ["echo 'pre kubeadm'", "systemctl restart containerd"] },
      ],
    },
  },
  status: {
    phase: "Provisioned",
    observedGeneration: 4,
    controlPlane: { desiredReplicas: 3, replicas: 3, upToDateReplicas: 3, readyReplicas: 3, availableReplicas: 3 },
    workers: { desiredReplicas: 9, replicas: 9, upToDateReplicas: 9, readyReplicas: 9, availableReplicas: 9 },
    deprecated: {
      v1beta1: {
        conditions: [
          "Ready",
          "ControlPlaneInitialized",
          "ControlPlaneReady",
          "InfrastructureReady",
          "TopologyReconciled",
        ].map((type) => ({ type, status: "True", lastTransitionTime: "2026-11-29T10:04:12Z" })),
      },
    },
  },
};

/** What a QuorumControlPlane applied with kubectl carries besides what Quorum reads. */
export const CONTROL_PLANE_UNREAD = {
  metadata: {
    annotations: {
      "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({
        apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
        kind: "QuorumControlPlane",
        metadata: { name: "cp", namespace: "ns" },
        spec: { replicas: 3, version: "v1.31.2" },
      }),
    },
    managedFields: managedFields("kubectl-client-side-apply", ["metadata", "spec", "machineTemplate"]),
  },
};

/** A Machine as Quorum reads it, with every field CAPI sets that Quorum reads. */
export function realisticMachine(machine: Machine): Machine {
  return withExtra(machine, MACHINE_READ);
}

/** A Cluster as Quorum reads it, with every field CAPI sets that Quorum reads. */
export function realisticCluster(cluster: Cluster): Cluster {
  return withExtra(cluster, CLUSTER_READ);
}

/** As the API server serves it: with what Quorum does not read. */
export function fullMachine(machine: Machine): Machine {
  const full = withExtra(machine, MACHINE_UNREAD);
  const nodeRef = machine.status?.nodeRef;
  return nodeRef
    ? withExtra(full, { status: { nodeRef: { apiGroup: "", kind: "Node", uid: `uid-${nodeRef.name}` } } })
    : full;
}

export function fullCluster(cluster: Cluster): Cluster {
  return withExtra(cluster, CLUSTER_UNREAD);
}

export function fullControlPlane(controlPlane: QuorumControlPlane): QuorumControlPlane {
  return withExtra(controlPlane, CONTROL_PLANE_UNREAD);
}
