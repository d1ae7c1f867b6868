// Keeps the templates a QuorumControlPlane references owned by its Cluster, so `clusterctl move` carries them
// (the decision is src/core/template-owners.ts; this reads the templates and writes through the port).
import type { Cluster } from "../api/capi.ts";
import { CAPI_API_VERSION, PAUSED_ANNOTATION, TOPOLOGY_OWNED_LABEL } from "../api/constants.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import type { ObjectRef } from "../api/types.ts";
import { templatesToOwn, withOwner, type TemplateOwner } from "../core/template-owners.ts";
import { isConflict, type Clock, type ManagementApi } from "../ports/index.ts";
import type { Problem } from "./status.ts";

/**
 * How long a template seen with its Cluster owner reference is not read again. Templates are not in the informer
 * caches, so without this every idle reconcile would cost two reads; someone removing the reference by hand gets
 * it back within this time, and a restart re-reads everything.
 */
export const TEMPLATE_RECHECK_MS = 10 * 60_000;

/**
 * How often one reconcile writes a template's owner references before it leaves a conflict to the next reconcile.
 * Clusters that share a template (ten per namespace in the scale benchmark) add their references to it at the same
 * moment when they are created together; each conflict is another Cluster's reference landing first, so reading
 * again and writing again settles it at once, instead of a warning, a failed Reconciled condition and its clearing.
 */
export const OWNER_REFERENCE_ATTEMPTS = 3;

/** Which templates were last seen owned by which Cluster uid, and when; per QuorumControlPlane key. */
export class OwnedTemplates {
  private readonly seen = new Map<string, Map<string, { clusterUid: string; at: number }>>();

  constructor(private readonly clock: Clock) {}

  fresh(controlPlaneKey: string, templateKey: string, clusterUid: string): boolean {
    const entry = this.seen.get(controlPlaneKey)?.get(templateKey);
    return entry !== undefined && entry.clusterUid === clusterUid && this.clock() - entry.at < TEMPLATE_RECHECK_MS;
  }

  confirm(controlPlaneKey: string, templateKey: string, clusterUid: string): void {
    const templates = this.seen.get(controlPlaneKey) ?? new Map<string, { clusterUid: string; at: number }>();
    templates.set(templateKey, { clusterUid, at: this.clock() });
    this.seen.set(controlPlaneKey, templates);
  }

  forget(controlPlaneKey: string): void {
    this.seen.delete(controlPlaneKey);
  }
}

export interface TemplateOwnersResult {
  /** Templates that got the reference in this reconcile ("ProcessMachineTemplate ns/name"). */
  adopted: string[];
  problem?: Problem;
}

/**
 * The Cluster, or for a control plane the topology controller made from a ClusterClass, that ClusterClass: every
 * Cluster of the class shares the bootstrap template its QuorumControlPlaneTemplate names (see TemplateOwner).
 * Undefined for a class in another namespace, which cannot own the template.
 */
async function bootstrapTemplateOwner(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  management: ManagementApi,
): Promise<TemplateOwner | undefined> {
  const namespace = controlPlane.metadata.namespace ?? "default";
  const classRef = cluster.spec?.topology?.classRef;
  if (controlPlane.metadata.labels?.[TOPOLOGY_OWNED_LABEL] === undefined || !classRef?.name)
    return { kind: "Cluster", name: cluster.metadata.name, uid: cluster.metadata.uid ?? "" };
  if ((classRef.namespace ?? namespace) !== namespace) return undefined;
  const ref: ObjectRef = { apiVersion: CAPI_API_VERSION, kind: "ClusterClass", name: classRef.name };
  const clusterClass = await management.getReferenced(
    ref,
    namespace,
    `Cluster ${namespace}/${cluster.metadata.name} spec.topology.classRef`,
  );
  return { kind: "ClusterClass", name: classRef.name, uid: clusterClass.metadata.uid ?? "" };
}

/**
 * Adds the Cluster owner reference to each referenced template that lacks it. A failure does not stop the
 * reconcile (etcd safety must not wait on a provider's RBAC): it is returned as a problem for status and tried
 * again on the next reconcile.
 */
export async function keepTemplatesOwned(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  management: ManagementApi,
  ownedTemplates: OwnedTemplates | undefined,
): Promise<TemplateOwnersResult> {
  const namespace = controlPlane.metadata.namespace ?? "default";
  const key = `${namespace}/${controlPlane.metadata.name}`;
  const template = controlPlane.spec.machineTemplate.spec;
  const { own } = templatesToOwn([template.infrastructureRef, template.bootstrapConfigTemplateRef], namespace, {
    name: cluster.metadata.name,
    ...(cluster.metadata.uid ? { uid: cluster.metadata.uid } : {}),
    deleting: Boolean(cluster.metadata.deletionTimestamp),
    paused: cluster.spec?.paused === true || controlPlane.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined,
  });
  const field = new Map([
    [template.infrastructureRef, "infrastructureRef"],
    [template.bootstrapConfigTemplateRef, "bootstrapConfigTemplateRef"],
  ]);
  const clusterUid = cluster.metadata.uid ?? "";
  const adopted: string[] = [];
  for (const ref of own) {
    const templateKey = `${ref.kind}/${ref.name}`;
    if (ownedTemplates?.fresh(key, templateKey, clusterUid)) continue;
    const what = `${ref.kind} ${namespace}/${ref.name}`;
    try {
      const referencedBy = `QuorumControlPlane ${key} spec.machineTemplate.spec.${field.get(ref) ?? ""}`;
      const owner =
        ref === template.bootstrapConfigTemplateRef
          ? await bootstrapTemplateOwner(controlPlane, cluster, management)
          : { kind: "Cluster" as const, name: cluster.metadata.name, uid: clusterUid };
      if (!owner) continue;
      if (await addOwner(ref, owner, namespace, referencedBy, management)) adopted.push(what);
      ownedTemplates?.confirm(key, templateKey, clusterUid);
    } catch (error) {
      const cause = error instanceof Error ? error.message : String(error);
      return {
        adopted,
        problem: {
          reason: "TemplateOwnerReferenceFailed",
          message: `could not give ${what} its owner reference (its Cluster ${namespace}/${cluster.metadata.name}, or for a bootstrap template a ClusterClass shares, the ClusterClass), which clusterctl move needs to carry the template: ${cause}`,
        },
      };
    }
  }
  return { adopted };
}

/**
 * Gives the template `ref` names the owner reference unless it has it; true when it wrote. A conflict (someone wrote
 * the template since it was read) is read and tried again, up to OWNER_REFERENCE_ATTEMPTS writes in all.
 */
async function addOwner(
  ref: ObjectRef,
  owner: TemplateOwner,
  namespace: string,
  referencedBy: string,
  management: ManagementApi,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const object = await management.getReferenced(ref, namespace, referencedBy);
    const ownerReferences = withOwner(object.metadata.ownerReferences, owner);
    if (!ownerReferences) return false;
    try {
      await management.setOwnerReferences(object, ownerReferences);
      return true;
    } catch (error) {
      if (!isConflict(error) || attempt >= OWNER_REFERENCE_ATTEMPTS) throw error;
    }
  }
}
