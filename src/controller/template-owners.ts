// Keeps the templates a QuorumControlPlane references owned by its Cluster, so `clusterctl move` carries them
// (the decision is src/core/template-owners.ts; this reads the templates and writes through the port).
import type { Cluster } from "../api/capi.ts";
import { CAPI_API_VERSION, CAPI_GROUP, PAUSED_ANNOTATION, TOPOLOGY_OWNED_LABEL } from "../api/constants.ts";
import { groupOf } from "../api/objects.ts";
import type { ObjectRef, OwnerReference, QuorumControlPlane } from "../api/types.ts";
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

/**
 * The owners each template was last seen with, and when, whichever control plane read it: a template several Clusters
 * share (ten per namespace in the scale benchmark; a ClusterClass's bootstrap template, shared by every Cluster of the
 * class) is then read once per TEMPLATE_RECHECK_MS, not once per Cluster. Only CAPI Cluster and ClusterClass owners
 * are kept, a Cluster by name and uid (one recreated or moved is looked at again at once), a ClusterClass by name
 * (its uid is only known by reading it, which the recheck is there to avoid).
 */
export class OwnedTemplates {
  /** template key → owner key → when the template was seen with that owner. */
  private readonly seen = new Map<string, Map<string, number>>();
  private sweptAt: number;

  constructor(private readonly clock: Clock) {
    this.sweptAt = clock();
  }

  fresh(templateKey: string, owner: OwnerKey): boolean {
    const at = this.seen.get(templateKey)?.get(ownerKey(owner));
    return at !== undefined && this.clock() - at < TEMPLATE_RECHECK_MS;
  }

  /** The template as just read or written: its Cluster and ClusterClass owners replace what was seen before. */
  confirm(templateKey: string, ownerReferences: readonly OwnerReference[] | undefined): void {
    const now = this.clock();
    const owners = new Map<string, number>();
    for (const reference of ownerReferences ?? []) {
      if (groupOf(reference.apiVersion) !== CAPI_GROUP) continue;
      if (reference.kind === "Cluster" || reference.kind === "ClusterClass")
        owners.set(ownerKey({ kind: reference.kind, name: reference.name, uid: reference.uid }), now);
    }
    this.seen.set(templateKey, owners);
    // What is older than the recheck interval is worth nothing: dropped now and then, so that templates of control
    // planes long gone do not stay in memory.
    if (now - this.sweptAt < TEMPLATE_RECHECK_MS) return;
    this.sweptAt = now;
    for (const [key, seenOwners] of this.seen) {
      for (const [owner, at] of seenOwners) if (now - at >= TEMPLATE_RECHECK_MS) seenOwners.delete(owner);
      if (seenOwners.size === 0) this.seen.delete(key);
    }
  }

  /** How many templates are remembered (for the test of the sweep). */
  get size(): number {
    return this.seen.size;
  }
}

/** Who a control plane wants a template owned by, as far as it is known without reading anything. */
type OwnerKey = { kind: "Cluster"; name: string; uid: string } | { kind: "ClusterClass"; name: string };

function ownerKey(owner: OwnerKey): string {
  return owner.kind === "Cluster" ? `Cluster/${owner.name}/${owner.uid}` : `ClusterClass/${owner.name}`;
}

function templateKeyOf(ref: ObjectRef, namespace: string): string {
  return `${ref.namespace ?? namespace}/${ref.apiGroup ?? groupOf(ref.apiVersion ?? "")}/${ref.kind}/${ref.name}`;
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
function bootstrapTemplateOwner(controlPlane: QuorumControlPlane, cluster: Cluster): OwnerKey | undefined {
  const namespace = controlPlane.metadata.namespace ?? "default";
  const classRef = cluster.spec?.topology?.classRef;
  if (controlPlane.metadata.labels?.[TOPOLOGY_OWNED_LABEL] === undefined || !classRef?.name)
    return { kind: "Cluster", name: cluster.metadata.name, uid: cluster.metadata.uid ?? "" };
  if ((classRef.namespace ?? namespace) !== namespace) return undefined;
  return { kind: "ClusterClass", name: classRef.name };
}

/** The owner with its uid: a ClusterClass is read for it. */
async function resolveOwner(
  owner: OwnerKey,
  namespace: string,
  cluster: Cluster,
  management: ManagementApi,
): Promise<TemplateOwner> {
  if (owner.kind === "Cluster") return owner;
  const ref: ObjectRef = { apiVersion: CAPI_API_VERSION, kind: "ClusterClass", name: owner.name };
  const clusterClass = await management.getReferenced(
    ref,
    namespace,
    `Cluster ${namespace}/${cluster.metadata.name} spec.topology.classRef`,
  );
  return { kind: "ClusterClass", name: owner.name, uid: clusterClass.metadata.uid ?? "" };
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
    const templateKey = templateKeyOf(ref, namespace);
    const wanted: OwnerKey | undefined =
      ref === template.bootstrapConfigTemplateRef
        ? bootstrapTemplateOwner(controlPlane, cluster)
        : { kind: "Cluster", name: cluster.metadata.name, uid: clusterUid };
    if (!wanted || ownedTemplates?.fresh(templateKey, wanted)) continue;
    const what = `${ref.kind} ${namespace}/${ref.name}`;
    try {
      const referencedBy = `QuorumControlPlane ${key} spec.machineTemplate.spec.${field.get(ref) ?? ""}`;
      const owner = await resolveOwner(wanted, namespace, cluster, management);
      const { wrote, ownerReferences } = await addOwner(ref, owner, namespace, referencedBy, management);
      if (wrote) adopted.push(what);
      ownedTemplates?.confirm(templateKey, ownerReferences);
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
 * Gives the template `ref` names the owner reference unless it has it; says whether it wrote, and the references. A conflict (someone wrote
 * the template since it was read) is read and tried again, up to OWNER_REFERENCE_ATTEMPTS writes in all.
 */
async function addOwner(
  ref: ObjectRef,
  owner: TemplateOwner,
  namespace: string,
  referencedBy: string,
  management: ManagementApi,
): Promise<{ wrote: boolean; ownerReferences: readonly OwnerReference[] | undefined }> {
  for (let attempt = 1; ; attempt++) {
    const object = await management.getReferenced(ref, namespace, referencedBy);
    const ownerReferences = withOwner(object.metadata.ownerReferences, owner);
    if (!ownerReferences) return { wrote: false, ownerReferences: object.metadata.ownerReferences };
    try {
      await management.setOwnerReferences(object, ownerReferences);
      return { wrote: true, ownerReferences };
    } catch (error) {
      if (!isConflict(error) || attempt >= OWNER_REFERENCE_ATTEMPTS) throw error;
    }
  }
}
