// What the informer caches keep of each QuorumControlPlane, Cluster and Machine: exactly the fields of the types the
// controller reads them as (src/api/capi.ts, src/api/types.ts), as controller-runtime's cache transforms do. A
// management cluster's Machines carry much that no reconcile reads (CAPI's v1beta1 conditions, the Node's
// nodeInfo, managedFields), and every cached copy of it is memory held for the life of the process (issue 19).
//
// The shapes below must name every field of their type (Keep<T>), so a field added to a type does not compile until
// the cache keeps it; and a reconcile reads the cached objects only through those types. Nothing is trimmed inside a
// field the controller writes back whole: QuorumControlPlane status (written as a merge patch against the cached
// status, so a field missing here would be rewritten on every reconcile, or never removed), a Machine's
// status.conditions (written back as a whole list), labels and annotations (in-place updates diff them).
import type { Cluster, Machine } from "../api/capi.ts";
import { internStrings } from "../api/intern.ts";
import { project, type Keep } from "../api/projection.ts";
import type { ObjectMeta, QuorumControlPlane } from "../api/types.ts";

/** kubectl's client-side apply record: a copy of the whole object, read by nothing but kubectl. */
export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";

// Left out: managedFields, generateName, selfLink, deletionGracePeriodSeconds.
const METADATA: Keep<ObjectMeta> = {
  name: true,
  namespace: true,
  uid: true,
  resourceVersion: true,
  generation: true,
  creationTimestamp: true,
  deletionTimestamp: true,
  labels: true,
  annotations: true,
  ownerReferences: true,
  finalizers: true,
};

export const CACHED_MACHINE_FIELDS: Keep<Machine> = {
  apiVersion: true,
  kind: true,
  metadata: METADATA,
  spec: {
    clusterName: true,
    bootstrap: { configRef: true, dataSecretName: true },
    infrastructureRef: true,
    version: true,
    providerID: true,
    failureDomain: true,
    // Compared with the template's lists as whole values (src/core/in-place.ts).
    readinessGates: true,
    deletion: true,
    taints: true,
  },
  // Left out, among others: nodeInfo, certificatesExpiryDate, lastUpdated, observedGeneration, deletion timestamps,
  // v1beta1 conditions and counters.
  status: {
    conditions: true,
    initialization: true,
    nodeRef: { name: true },
    addresses: true,
    failureDomain: true,
    phase: true,
    deprecated: { v1beta1: { failureReason: true, failureMessage: true } },
  },
};

export const CACHED_CLUSTER_FIELDS: Keep<Cluster> = {
  apiVersion: true,
  kind: true,
  metadata: METADATA,
  spec: {
    paused: true,
    controlPlaneEndpoint: true,
    controlPlaneRef: true,
    infrastructureRef: true,
    // Left out: the topology's version, variables, workers and control-plane overrides, often the bulk of a Cluster.
    topology: { classRef: true },
  },
  // Left out: the failure domains' attributes, v1beta1 conditions, counters, phase.
  status: {
    initialization: true,
    failureDomains: { name: true, controlPlane: true },
    conditions: true,
  },
};

// Spec and status whole: the CRD's schema prunes every field Quorum does not define, and status is Quorum's own,
// diffed against the cache to write (see above).
export const CACHED_CONTROL_PLANE_FIELDS: Keep<QuorumControlPlane> = {
  apiVersion: true,
  kind: true,
  metadata: METADATA,
  spec: true,
  status: true,
};

// Each also with one copy of each short string (src/api/intern.ts): a parsed object carries its own copy of every
// apiVersion, kind, condition type and reason.
export function cachedMachine(machine: unknown): Machine {
  return internStrings(project(machine, CACHED_MACHINE_FIELDS));
}

/** Also without kubectl's last-applied annotation: the Cluster's annotations are read by key only. */
export function cachedCluster(cluster: unknown): Cluster {
  return internStrings(withoutLastApplied(project(cluster, CACHED_CLUSTER_FIELDS)));
}

/**
 * Also without kubectl's last-applied annotation: the QuorumControlPlane's annotations are read by key only and
 * written by key (merge patches), never copied whole.
 */
export function cachedControlPlane(controlPlane: unknown): QuorumControlPlane {
  return internStrings(withoutLastApplied(project(controlPlane, CACHED_CONTROL_PLANE_FIELDS)));
}

function withoutLastApplied<T extends { metadata: ObjectMeta }>(object: T): T {
  const annotations = object.metadata?.annotations;
  if (annotations === undefined || !Object.hasOwn(annotations, LAST_APPLIED_ANNOTATION)) return object;
  const { [LAST_APPLIED_ANNOTATION]: _dropped, ...kept } = annotations;
  const { annotations: _all, ...metadata } = object.metadata;
  return { ...object, metadata: Object.keys(kept).length > 0 ? { ...metadata, annotations: kept } : metadata };
}
