// The management-cluster port: what one reconcile reads and writes in the management cluster. The real adapter
// (src/adapters/capi/management.ts behind src/controller/cached-management.ts) implements it, and so does the
// simulator's world (test/sim/ports.ts).
import type { Cluster, Machine, MetaV1Condition } from "../api/capi.ts";
import type { Unstructured } from "../api/objects.ts";
import type {
  MachineDeletionSpec,
  MachineReadinessGate,
  MachineTaint,
  ObjectRef,
  OwnerReference,
  QuorumControlPlane,
} from "../api/types.ts";

/** How every write of this port reports a resourceVersion precondition that failed: an error with code 409. */
export function isConflict(error: unknown): boolean {
  return errorCode(error) === 409;
}

/** How every write of this port reports an object that is gone: an error with code 404. */
export function isNotFound(error: unknown): boolean {
  return errorCode(error) === 404;
}

function errorCode(error: unknown): unknown {
  return typeof error === "object" && error !== null && "code" in error ? (error as { code: unknown }).code : undefined;
}

/** A merge patch of the fields spec.machineTemplate updates in place (src/core/in-place.ts decides it). */
export interface InPlacePatch {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  /** A Machine's spec fields: a merge patch sets each timeout given and replaces each list given whole. */
  deletion?: MachineDeletionSpec;
  readinessGates?: MachineReadinessGate[];
  taints?: MachineTaint[];
}

export interface ManagementApi {
  getControlPlane(namespace: string, name: string): Promise<QuorumControlPlane | undefined>;
  getCluster(namespace: string, name: string): Promise<Cluster | undefined>;
  /**
   * Machines labelled with this control plane's name and, given a Cluster, every control-plane Machine of that
   * Cluster (concernsControlPlane in src/api/ownership.ts): the caller tells its own from the others (claimMachines).
   */
  listControlPlaneMachines(namespace: string, controlPlaneName: string, clusterName?: string): Promise<Machine[]>;
  getReferenced(ref: ObjectRef, namespace: string, referencedBy: string): Promise<Unstructured>;
  createIfAbsent(object: {
    apiVersion?: string;
    kind?: string;
    metadata: { name: string; namespace?: string };
  }): Promise<"created" | "exists">;
  deleteMachine(namespace: string, name: string): Promise<void>;
  /** Returns the resourceVersion the patch produced, when the answer tells it. */
  patchAnnotations(
    apiVersion: string,
    kind: string,
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<string | undefined>;
  /**
   * Changes labels and annotations (null removes a key) of the object `ref` names in `namespace` and, for a Machine,
   * its spec.deletion timeouts: spec.machineTemplate's in-place fields. With `resourceVersion`, a conflict if the
   * object changed since it was read. Returns the resourceVersion the patch produced, or undefined for an object
   * that is gone (nothing left to update).
   */
  patchInPlace(
    ref: ObjectRef,
    namespace: string,
    patch: InPlacePatch,
    resourceVersion?: string,
  ): Promise<string | undefined>;
  /**
   * Sets metadata.ownerReferences of an object read at `object.metadata.resourceVersion` (a conflict if it changed
   * since, so another writer's reference is never dropped). Used for the templates a control plane references.
   */
  setOwnerReferences(object: Unstructured, ownerReferences: OwnerReference[]): Promise<void>;
  /** Sets metadata.finalizers with the resourceVersion precondition of the object passed in. */
  setFinalizers(controlPlane: QuorumControlPlane, finalizers: string[]): Promise<string | undefined>;
  /**
   * Sets status.conditions of a Machine read at `resourceVersion`: the list is replaced whole, so a Machine changed
   * since (CAPI writing its own conditions) is a conflict, never a lost condition. Returns the resourceVersion the
   * patch produced, or undefined for a Machine that is gone.
   */
  setMachineConditions(
    namespace: string,
    name: string,
    conditions: MetaV1Condition[],
    resourceVersion: string,
  ): Promise<string | undefined>;
  patchStatus(controlPlane: QuorumControlPlane, status: Record<string, unknown>): Promise<QuorumControlPlane>;
  event(
    controlPlane: QuorumControlPlane,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
    now: Date,
  ): Promise<void>;
}
