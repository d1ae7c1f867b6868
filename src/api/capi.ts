// The parts of CAPI's cluster.x-k8s.io/v1beta2 objects (and core/v1 Nodes) that Quorum reads or writes.
// Only the fields we use; everything optional that the API server may omit.
import type { MachineDeletionSpec, MachineReadinessGate, MachineTaint, ObjectMeta } from "./types.ts";

/** v1beta2 reference: the API version is resolved from the CRD's contract label, so only the group is stored. */
export interface ContractVersionedObjectReference {
  apiGroup: string;
  kind: string;
  name: string;
}

export interface MetaV1Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface Machine {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    clusterName: string;
    bootstrap: { configRef?: ContractVersionedObjectReference; dataSecretName?: string };
    infrastructureRef: ContractVersionedObjectReference;
    version?: string;
    providerID?: string;
    failureDomain?: string;
    readinessGates?: MachineReadinessGate[];
    deletion?: MachineDeletionSpec;
    taints?: MachineTaint[];
  };
  status?: {
    conditions?: MetaV1Condition[];
    initialization?: { infrastructureProvisioned?: boolean; bootstrapDataSecretCreated?: boolean };
    nodeRef?: { name?: string };
    addresses?: { type?: string; address?: string }[];
    failureDomain?: string;
    phase?: string;
    deprecated?: { v1beta1?: { failureReason?: string; failureMessage?: string } };
  };
}

export interface Cluster {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    paused?: boolean;
    controlPlaneEndpoint?: { host?: string; port?: number };
    controlPlaneRef?: ContractVersionedObjectReference;
    infrastructureRef?: ContractVersionedObjectReference;
    /** A Cluster made from a ClusterClass: the topology controller creates its control plane from the class. */
    topology?: { classRef?: { name?: string; namespace?: string } };
  };
  status?: {
    initialization?: { infrastructureProvisioned?: boolean; controlPlaneInitialized?: boolean };
    failureDomains?: { name: string; controlPlane?: boolean }[];
    conditions?: MetaV1Condition[];
  };
}

export interface Node {
  metadata: ObjectMeta;
  spec?: { providerID?: string };
  status?: {
    /** lastTransitionTime (RFC 3339) is read from the Ready condition: since when a Node is NotReady. */
    conditions?: { type: string; status: string; lastTransitionTime?: string }[];
    addresses?: { type: string; address: string }[];
  };
}

/** MachineHealthCheck marks a control-plane Machine for its owner's remediation with this condition False. */
export const OWNER_REMEDIATED_CONDITION = "OwnerRemediated";
export const HEALTH_CHECK_SUCCEEDED_CONDITION = "HealthCheckSucceeded";
/** Set on each Machine by its owner (CAPI's Machine controller does not for control-plane Machines). */
export const UP_TO_DATE_CONDITION = "UpToDate";
/**
 * Set by Quorum on each kubeadm Machine whose Node exists: True once the Node carries CONTROL_PLANE_NODE_LABEL, which
 * kubeadm join's mark-control-plane phase sets (KCP's NodeKubeadmLabelsAndTaintsSet, the label part).
 */
export const NODE_KUBEADM_LABEL_CONDITION = "NodeKubeadmLabelSet";
/** The label kubeadm puts on every control-plane Node (init and join, phase mark-control-plane). */
export const CONTROL_PLANE_NODE_LABEL = "node-role.kubernetes.io/control-plane";
