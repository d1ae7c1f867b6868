// Which referenced templates need a Cluster owner reference, and what their ownerReferences become (issue 15,
// item 4). `clusterctl move` walks ownerReferences from the Cluster: a template nothing in that graph owns stays
// behind, and the next scale-up on the target management cluster fails because the template is missing. KCP and
// the topology controller add the same reference (a Cluster owner, not controller, no blockOwnerDeletion); the
// template still belongs to whoever created it, and the reference only says "moves with this Cluster".
import { CAPI_API_VERSION, CAPI_GROUP } from "../api/constants.ts";
import { groupOf } from "../api/objects.ts";
import type { ObjectRef, OwnerReference } from "../api/types.ts";

export interface OwningCluster {
  name: string;
  /** Unknown only for a Cluster not read from an API server; no reference can be written without it. */
  uid?: string;
  deleting: boolean;
  /** Cluster.spec.paused or the control plane's paused annotation: clusterctl move pauses before it copies. */
  paused: boolean;
}

/** Why a reference is left alone: shown to no user, said in the log and the tests. */
export type SkipReason = "cluster-deleting" | "paused" | "cluster-uid-unknown" | "other-namespace";

/**
 * The references whose template Quorum keeps owned by the Cluster. A template in another namespace is never
 * touched: ownerReferences cannot cross namespaces (the garbage collector would delete the template as an orphan),
 * and such a reference is refused when a Machine is created anyway. Nothing is adopted for a Cluster being deleted:
 * the reference would only hand the template to the garbage collector. Nothing is written while paused, as for every
 * other write: a move in progress must copy what it listed.
 */
export function templatesToOwn(
  refs: readonly ObjectRef[],
  namespace: string,
  cluster: OwningCluster,
): { own: ObjectRef[]; skipped?: SkipReason } {
  if (cluster.deleting) return { own: [], skipped: "cluster-deleting" };
  if (cluster.paused) return { own: [], skipped: "paused" };
  if (!cluster.uid) return { own: [], skipped: "cluster-uid-unknown" };
  const own = refs.filter((ref) => ref.namespace === undefined || ref.namespace === namespace);
  return own.length < refs.length ? { own, skipped: "other-namespace" } : { own };
}

/**
 * Who a template moves with. Normally its Cluster. The bootstrap template a ClusterClass's QuorumControlPlaneTemplate
 * names is shared by every Cluster of the class (the topology controller copies the reference, it clones only the
 * infrastructure template): owned by one of those Clusters, the garbage collector would delete it with that Cluster
 * and break the others, so it is owned by the ClusterClass, which clusterctl move carries with its templates.
 */
export interface TemplateOwner {
  kind: "Cluster" | "ClusterClass";
  name: string;
  uid: string;
}

/**
 * The template's ownerReferences with the owner's added, or undefined when it already has it (so an idle
 * reconcile writes nothing). A reference to the same owner under another API version counts as present (the
 * group decides, as in CAPI's HasOwnerRef); one with the owner's name but another uid is an owner that was
 * recreated or restored, and is replaced. Every other reference is kept as it was, in its place.
 */
export function withOwner(
  current: readonly OwnerReference[] | undefined,
  owner: TemplateOwner,
): OwnerReference[] | undefined {
  const owners = current ?? [];
  const sameOwner = (candidate: OwnerReference) =>
    candidate.kind === owner.kind && groupOf(candidate.apiVersion) === CAPI_GROUP && candidate.name === owner.name;
  if (owners.some((candidate) => sameOwner(candidate) && candidate.uid === owner.uid)) return undefined;
  const desired: OwnerReference = {
    apiVersion: CAPI_API_VERSION,
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
  };
  const stale = owners.findIndex(sameOwner);
  if (stale < 0) return [...owners, desired];
  return owners.map((owner, index) => (index === stale ? desired : owner));
}
