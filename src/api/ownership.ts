// Which control-plane Machines belong to one QuorumControlPlane, and whether a Cluster names it as its control
// plane. One rule, used by every ManagementApi implementation (cached and direct), by reconcile and by the snapshot
// builder, so no two places can disagree about what is ours (issue 12, bug 4: a second QuorumControlPlane
// labelled for the same Cluster saw the first one's Machines' members as ghosts and removed them one by one).
import type { ContractVersionedObjectReference, Machine } from "./capi.ts";
import { GROUP, KIND, LABEL_CLUSTER_NAME, LABEL_CONTROL_PLANE, LABEL_CONTROL_PLANE_NAME } from "./constants.ts";
import { formatLabelValue } from "./label-value.ts";
import type { ObjectMeta, OwnerReference } from "./types.ts";

/**
 * Whether a Machine concerns this control plane at all: it carries our control-plane-name label, or it is a
 * control-plane Machine (control-plane or control-plane-name label) of our Cluster. The second kind is how
 * another control plane's Machines — a KubeadmControlPlane being migrated from, a copy-pasted second
 * QuorumControlPlane — become visible, so their etcd members are never taken for ghosts.
 */
export function concernsControlPlane(machine: Machine, controlPlaneName: string, clusterName?: string): boolean {
  const labels = machine.metadata.labels ?? {};
  if (labels[LABEL_CONTROL_PLANE_NAME] === formatLabelValue(controlPlaneName)) return true;
  if (clusterName === undefined) return false;
  const controlPlaneMachine =
    labels[LABEL_CONTROL_PLANE] !== undefined || labels[LABEL_CONTROL_PLANE_NAME] !== undefined;
  return (
    controlPlaneMachine && (machine.spec?.clusterName === clusterName || labels[LABEL_CLUSTER_NAME] === clusterName)
  );
}

/** A Machine that concerns this control plane but is not its own, with why, for status and the planner. */
export interface ForeignMachine {
  machine: Machine;
  /** "KubeadmControlPlane ns/kcp", "QuorumControlPlane ns/other (uid ...)", or "no controller owner". */
  owner: string;
  /** The Machine belongs to our Cluster (spec.clusterName), so its etcd member is in our etcd. */
  sameCluster: boolean;
  why: string;
}

export interface MachineClaims {
  /** This QuorumControlPlane's Machines: the only ones Quorum acts on and counts toward replicas. */
  owned: Machine[];
  foreign: ForeignMachine[];
}

/**
 * A Machine is this QuorumControlPlane's only if its controller ownerRef is this object (kind QuorumControlPlane of
 * our API group, this UID) and its spec.clusterName is our Cluster. A label is a selector anyone can copy; the UID
 * is not: a second QuorumControlPlane with the same labels, or one recreated under the same name, has another.
 */
export function claimMachines(
  machines: Machine[],
  controlPlane: { metadata: Pick<ObjectMeta, "name" | "namespace" | "uid"> },
  clusterName: string,
): MachineClaims {
  const uid = controlPlane.metadata.uid;
  const owned: Machine[] = [];
  const foreign: ForeignMachine[] = [];
  for (const machine of machines) {
    const controller = controllerOf(machine);
    const ownedByUs =
      uid !== undefined &&
      uid !== "" &&
      controller !== undefined &&
      isQuorumReference(controller) &&
      controller.uid === uid;
    const sameCluster = machine.spec?.clusterName === clusterName;
    if (ownedByUs && sameCluster) {
      owned.push(machine);
      continue;
    }
    const owner = describeOwner(controller, controlPlane.metadata.namespace ?? machine.metadata.namespace ?? "default");
    const why = ownedByUs
      ? `its spec.clusterName is ${JSON.stringify(machine.spec?.clusterName ?? "")}, not ${clusterName}`
      : controller
        ? `its controller is ${owner}`
        : "it has no controller ownerRef";
    foreign.push({ machine, owner, sameCluster, why });
  }
  return { owned, foreign };
}

/**
 * Whether a Cluster's spec.controlPlaneRef names this QuorumControlPlane (v1beta2: apiGroup, kind, name; the
 * namespace is the Cluster's). CAPI asks the referenced control plane, and only it, to run the Cluster's control plane.
 */
export function namesControlPlane(
  ref: Pick<ContractVersionedObjectReference, "apiGroup" | "kind" | "name"> | undefined,
  controlPlaneName: string,
): boolean {
  return ref !== undefined && ref.apiGroup === GROUP && ref.kind === KIND && ref.name === controlPlaneName;
}

function controllerOf(object: { metadata: Pick<ObjectMeta, "ownerReferences"> }): OwnerReference | undefined {
  return object.metadata.ownerReferences?.find((reference) => reference.controller === true);
}

/**
 * The name of the QuorumControlPlane that is this object's controller, if one is. Events map to a control plane by
 * this, not by the control-plane-name label, whose value is a hash for names over 63 characters.
 */
export function controllingControlPlaneName(object: {
  metadata: Pick<ObjectMeta, "ownerReferences">;
}): string | undefined {
  const controller = controllerOf(object);
  return controller && isQuorumReference(controller) ? controller.name : undefined;
}

function isQuorumReference(reference: OwnerReference): boolean {
  return reference.kind === KIND && reference.apiVersion.startsWith(`${GROUP}/`);
}

function describeOwner(controller: OwnerReference | undefined, namespace: string): string {
  if (!controller) return "no controller owner";
  const sameKind = isQuorumReference(controller);
  return `${controller.kind} ${namespace}/${controller.name}${sameKind ? ` (uid ${controller.uid})` : ""}`;
}

/** The Cluster a control plane belongs to: its Cluster owner reference (CAPI adds it), else its cluster-name label. */
export function owningClusterName(controlPlane: { metadata: ObjectMeta }): string | undefined {
  const owner = controlPlane.metadata.ownerReferences?.find(
    (reference) => reference.kind === "Cluster" && reference.apiVersion.startsWith("cluster.x-k8s.io/"),
  );
  return owner?.name ?? controlPlane.metadata.labels?.[LABEL_CLUSTER_NAME];
}
