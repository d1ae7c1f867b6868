// Sample objects typed with src/api/types.ts. The "complete" ones set every field the types declare (the
// compiler enforces it through DeepRequired), so comparing them with the CRD shows any field that exists on
// one side only.
import { API_VERSION, KIND, TEMPLATE_KIND } from "../../../src/api/constants.ts";
import type {
  QuorumControlPlane,
  QuorumControlPlaneSpec,
  QuorumControlPlaneStatus,
  QuorumControlPlaneTemplate,
} from "../../../src/api/types.ts";

type DeepRequired<T> = T extends (infer Item)[]
  ? DeepRequired<Item>[]
  : T extends object
    ? { [K in keyof T]-?: DeepRequired<NonNullable<T[K]>> }
    : T;

const condition = {
  type: "EtcdClusterHealthy",
  status: "False",
  reason: "MemberUnhealthy",
  message: "etcd member m-2 (machine qcp-2) does not answer; 2/3 voters healthy, no further failure tolerated",
  lastTransitionTime: "2026-03-01T10:00:00Z",
  observedGeneration: 4,
  severity: "Warning",
} as const;

export const completeSpec: DeepRequired<QuorumControlPlaneSpec> = {
  replicas: 3,
  version: "v1.33.2",
  machineTemplate: {
    metadata: { labels: { team: "platform" }, annotations: { "example.com/owner": "ops" } },
    spec: {
      infrastructureRef: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
        apiGroup: "infrastructure.cluster.x-k8s.io",
        kind: "DockerMachineTemplate",
        name: "prod-control-plane",
        namespace: "default",
      },
      bootstrapConfigTemplateRef: {
        apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
        apiGroup: "bootstrap.cluster.x-k8s.io",
        kind: "KubeadmConfigTemplate",
        name: "prod-control-plane",
        namespace: "default",
      },
      readinessGates: [{ conditionType: "example.com/DiskEncrypted", polarity: "Positive" }],
      deletion: { nodeDrainTimeoutSeconds: 600, nodeVolumeDetachTimeoutSeconds: 300, nodeDeletionTimeoutSeconds: 10 },
      taints: [{ key: "example.com/control-plane", value: "true", effect: "NoSchedule", propagation: "Always" }],
    },
  },
  rollout: {
    after: "2026-04-01T00:00:00Z",
    before: { certificatesExpiryDays: 30 },
    strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 0, memberRemoval: "AfterDrain" } },
  },
  remediation: { maxRetry: 5, retryPeriod: "10m", minHealthyPeriod: "2h", machineLostAfter: "3m" },
  etcd: {
    access: "APIServerProxy",
    clientPort: 2379,
    ghostMemberGracePeriod: "5m",
    learnerPromotionTimeout: "10m",
    learnerStallTimeout: "5m",
    memberJoinGracePeriod: "15m",
  },
  deletion: { etcdMemberRemovalTimeout: "5m" },
};

export const completeStatus: DeepRequired<QuorumControlPlaneStatus> = {
  observedGeneration: 4,
  selector: "cluster.x-k8s.io/cluster-name=prod,cluster.x-k8s.io/control-plane",
  replicas: 3,
  readyReplicas: 2,
  availableReplicas: 2,
  upToDateReplicas: 3,
  updatedReplicas: 3,
  unavailableReplicas: 1,
  version: "v1.33.2",
  initialized: true,
  ready: true,
  initialization: { controlPlaneInitialized: true },
  failureReason: "",
  failureMessage: "",
  conditions: [condition],
  deprecated: { v1beta1: { conditions: [condition], readyReplicas: 2, updatedReplicas: 3, unavailableReplicas: 1 } },
  etcd: {
    members: [
      {
        id: "8e9e05c52164694d",
        name: "qcp-1",
        machine: "qcp-1",
        node: "qcp-1",
        learner: false,
        healthy: true,
        leader: true,
        state: "voter",
        error: "",
        firstObserved: "2026-03-01T09:00:00Z",
        startedObserved: "2026-03-01T09:00:03Z",
        downSince: "2026-03-01T10:00:00Z",
        removalRefused: "2026-03-01T09:00:05Z",
        raftAppliedIndex: 41230,
        lastProgress: "2026-03-01T10:00:04Z",
      },
    ],
    quorum: { voters: 3, healthyVoters: 2, quorumSize: 2, failuresTolerated: 0 },
    lastObserved: "2026-03-01T10:00:05Z",
    summary: "2/3",
    access: "APIServerProxy",
  },
  nextAction: {
    kind: "Wait",
    message:
      "wait: etcd member m-2 (machine qcp-2) is unhealthy; no member is removed until it recovers or is remediated",
    blockedBy: "etcd member m-2 unhealthy",
    target: "qcp-2",
  },
  lastRemediation: { machine: "qcp-0", time: "2026-02-28T09:00:00Z", retryCount: 1 },
};

export const completeTemplateSpec: DeepRequired<QuorumControlPlaneTemplate["spec"]> = {
  template: {
    metadata: { labels: { tier: "control-plane" }, annotations: { "example.com/owner": "ops" } },
    spec: {
      machineTemplate: completeSpec.machineTemplate,
      rollout: completeSpec.rollout,
      remediation: completeSpec.remediation,
      etcd: completeSpec.etcd,
      deletion: completeSpec.deletion,
    },
  },
};

export const completeControlPlane: QuorumControlPlane = {
  apiVersion: API_VERSION,
  kind: KIND,
  metadata: { name: "prod", namespace: "default", labels: { "cluster.x-k8s.io/cluster-name": "prod" } },
  spec: completeSpec,
  status: completeStatus,
};

/** The least a user must write. */
export const minimalControlPlane: QuorumControlPlane = {
  apiVersion: API_VERSION,
  kind: KIND,
  metadata: { name: "dev", namespace: "default" },
  spec: {
    version: "v1.33.2",
    machineTemplate: {
      spec: {
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DockerMachineTemplate",
          name: "dev-cp",
        },
        bootstrapConfigTemplateRef: {
          apiGroup: "bootstrap.cluster.x-k8s.io",
          kind: "KubeadmConfigTemplate",
          name: "dev-cp",
        },
      },
    },
  },
};

export const completeTemplate: QuorumControlPlaneTemplate = {
  apiVersion: API_VERSION,
  kind: TEMPLATE_KIND,
  metadata: { name: "prod-class", namespace: "default" },
  spec: completeTemplateSpec,
};

export const minimalTemplate: QuorumControlPlaneTemplate = {
  apiVersion: API_VERSION,
  kind: TEMPLATE_KIND,
  metadata: { name: "dev-class", namespace: "default" },
  spec: { template: { spec: {} } },
};
