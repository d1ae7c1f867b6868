// Realistic objects as the API server returns them, shared by the controller unit tests.
import assert from "node:assert/strict";
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
import type { EtcdClusterClient, EtcdMember } from "../../../src/adapters/etcd/types.ts";
import type { ManagementApi } from "../../../src/ports/index.ts";

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

/**
 * An etcd of `members`, led by `leaderId` (default the first), whose members all answer their status call but those
 * named in `down`. Any membership change fails the test unless `overrides` provides it.
 */
export function fakeEtcd(
  members: EtcdMember[],
  options: { leaderId?: string; down?: string[] } = {},
  overrides: Partial<EtcdClusterClient> = {},
): EtcdClusterClient {
  const leaderId = options.leaderId ?? members[0]?.id ?? "";
  return {
    listMembers: async () => members,
    memberStatuses: async () =>
      members.map((member) =>
        (options.down ?? []).includes(member.name)
          ? {
              memberId: member.id,
              endpoint: member.clientURLs[0],
              reachable: false,
              leader: false,
              errors: ["refused"],
            }
          : {
              memberId: member.id,
              endpoint: member.clientURLs[0],
              reachable: true,
              leader: member.id === leaderId,
              leaderId,
              raftTerm: 2,
              raftIndex: 10,
              raftAppliedIndex: 10,
              errors: [],
            },
      ),
    alarms: async () => [],
    addMember: async () => assert.fail("no member add expected"),
    promoteLearner: async () => assert.fail("no promotion expected"),
    removeMember: async (id) => assert.fail(`no member removal expected (${id})`),
    moveLeader: async () => assert.fail("no leadership move expected"),
    close: async () => undefined,
    ...overrides,
  };
}

/**
 * The management API of one QuorumControlPlane and its Machines: reads answer, status and condition writes succeed,
 * anything that creates, deletes or re-owns an object fails the test unless `overrides` provides it.
 */
export function fakeManagement(
  qcp: QuorumControlPlane,
  machines: () => Machine[],
  overrides: Partial<ManagementApi> = {},
): ManagementApi {
  return {
    getControlPlane: async () => qcp,
    getCluster: async () => cluster(),
    listControlPlaneMachines: async () => machines(),
    getReferenced: async () => assert.fail("no template read expected"),
    createIfAbsent: async () => assert.fail("no create expected"),
    deleteMachine: async () => assert.fail("no delete expected"),
    patchAnnotations: async () => assert.fail("no annotation patch expected"),
    setOwnerReferences: async (object) => assert.fail(`no owner reference patch expected (${object.kind})`),
    patchInPlace: async () => undefined,
    setMachineConditions: async () => undefined,
    setFinalizers: async () => undefined,
    patchStatus: async () => qcp,
    event: async () => undefined,
    ...overrides,
  };
}

/** Voters named `names`, IDs "1", "2"…, each at 127.0.1.<n>. */
export function etcdMembers(names: string[]): EtcdMember[] {
  return names.map((name, i) => ({
    id: String(i + 1),
    name,
    peerURLs: [`https://127.0.1.${i + 1}:2380`],
    clientURLs: [`https://127.0.1.${i + 1}:2379`],
    learner: false,
  }));
}
