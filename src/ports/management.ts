// The management-cluster port: what one reconcile reads and writes in the management cluster. The real adapter
// (src/adapters/capi/management.ts behind src/controller/cached-management.ts) implements it, and so does the
// simulator's world (test/sim/ports.ts).
import type { Cluster, Machine } from "../api/capi.ts";
import type { Unstructured } from "../api/objects.ts";
import type { ObjectRef, OwnerReference, QuorumControlPlane } from "../api/types.ts";

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
   * Sets metadata.ownerReferences of an object read at `object.metadata.resourceVersion` (a conflict if it changed
   * since, so another writer's reference is never dropped). Used for the templates a control plane references.
   */
  setOwnerReferences(object: Unstructured, ownerReferences: OwnerReference[]): Promise<void>;
  /** Sets metadata.finalizers with the resourceVersion precondition of the object passed in. */
  setFinalizers(controlPlane: QuorumControlPlane, finalizers: string[]): Promise<string | undefined>;
  patchStatus(controlPlane: QuorumControlPlane, status: Record<string, unknown>): Promise<QuorumControlPlane>;
  event(
    controlPlane: QuorumControlPlane,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
    now: Date,
  ): Promise<void>;
}
