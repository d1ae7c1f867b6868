// The QuorumControlPlane controller as the runtime's Manager runs it: what it watches, how an event on a Machine
// or a Cluster maps to the QuorumControlPlane it concerns, and the reconcile call with the per-key etcd poll.
import {
  CAPI_GROUP,
  CAPI_VERSION,
  GROUP,
  KIND,
  LABEL_CONTROL_PLANE_NAME,
  LABEL_WATCH_FILTER,
  PLURAL,
  VERSION,
} from "../api/constants.ts";
import type { Cluster, Machine } from "../api/capi.ts";
import { controllingControlPlaneName, owningClusterName } from "../api/ownership.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import type { WatchTarget } from "../adapters/kube/informer.ts";
import type { Controller, ReconcileContext, WatchSpec } from "../adapters/kube/manager.ts";
import type { KubeObject } from "../adapters/kube/rest.ts";
import { OwnedTemplates } from "./template-owners.ts";
import { cachedCluster, cachedControlPlane, cachedMachine } from "./cached-fields.ts";
import { cachedManagement, cacheLookup, type ManagementCaches } from "./cached-management.ts";
import { EventQueue } from "./event-queue.ts";
import { Expectations } from "./expectations.ts";
import { reconcile, type ReconcilerDeps } from "./reconcile.ts";

export interface ControllerOptions {
  namespace?: string;
  /** --watch-filter value: only objects labelled cluster.x-k8s.io/watch-filter=<value>. */
  watchFilter?: string;
  deps: ReconcilerDeps;
}

export const CONTROLLER_NAME = "quorumcontrolplane";

export function quorumController(options: ControllerOptions): Controller {
  // For the step-latency metric: when an event made a change observable for a key, and when the key was last
  // reconciled (a change seen only by polling etcd became observable at most one poll ago).
  const eventAt = new Map<string, number>();
  const lastReconciledAt = new Map<string, number>();
  // The Cluster of each QuorumControlPlane reconciled, so that what the workload adapters keep for it (etcd client,
  // private keys, parsed CAs) is dropped once the control plane is gone, however it went: the finalizer's release
  // forgets it too, but a control plane whose finalizer someone else removed (clusterctl move deletes the source's
  // objects so), or that left this controller's scope, never gets there.
  const clusterOf = new Map<string, string>();
  const forgetCluster = async (key: string) => {
    const clusterName = clusterOf.get(key);
    clusterOf.delete(key);
    const [namespace] = key.split("/");
    // A second QuorumControlPlane labelled for the same Cluster still uses it.
    const stillUsed = [...clusterOf].some(([other, name]) => name === clusterName && other.startsWith(`${namespace}/`));
    if (clusterName !== undefined && !stillUsed) await options.deps.workload.forget(namespace, clusterName);
  };
  const noteEvent = (key: string) => {
    if (!eventAt.has(key)) eventAt.set(key, options.deps.clock());
    return [key];
  };
  const labelSelector = options.watchFilter ? `${LABEL_WATCH_FILTER}=${options.watchFilter}` : undefined;
  const scope = {
    ...(options.namespace ? { namespace: options.namespace } : {}),
    ...(labelSelector ? { labelSelector } : {}),
  };
  const controlPlanes: WatchTarget = {
    resource: { group: GROUP, version: VERSION, plural: PLURAL, namespaced: true },
    ...scope,
  };
  // Machines are not filtered by --watch-filter, only by having a control-plane-name label, as KCP's are (its
  // manager's cache holds every Machine; only events are filtered). Quorum must see every Machine it creates, or
  // the read-your-writes wait expires and it creates the same Machine again every 10 s (issue 15): a Machine made
  // before the QuorumControlPlane was labelled, or whose label a user edited, is still ours by ownerRef UID, and a
  // filtered cache would hide it and let Quorum replace members it cannot see. New Machines and their clones also
  // carry the QuorumControlPlane's watch-filter label (machine-factory), for a CAPI core sharded the same way.
  const machines: WatchTarget = {
    resource: { group: CAPI_GROUP, version: CAPI_VERSION, plural: "machines", namespaced: true },
    ...(options.namespace ? { namespace: options.namespace } : {}),
    labelSelector: LABEL_CONTROL_PLANE_NAME,
  };
  const clusters: WatchTarget = {
    resource: { group: CAPI_GROUP, version: CAPI_VERSION, plural: "clusters", namespaced: true },
    ...scope,
  };
  const watches: WatchSpec[] = [
    {
      target: controlPlanes,
      transform: cachedControlPlane,
      keysFor: (qcp: KubeObject) => noteEvent(`${qcp.metadata.namespace}/${qcp.metadata.name}`),
    },
    {
      // A Machine event concerns the QuorumControlPlane that is its controller, else the one its control-plane-name
      // label names (an orphan, e.g. mid clusterctl move). The ownerRef first: for a name over 63 characters the
      // label's value is a hash (formatLabelValue). A control plane outside --watch-filter is not in the filtered
      // cache, so its reconcile finds nothing to do.
      target: machines,
      transform: cachedMachine,
      keysFor: (machine: KubeObject) => {
        const owner = controllingControlPlaneName(machine) ?? machine.metadata.labels?.[LABEL_CONTROL_PLANE_NAME];
        return owner ? noteEvent(`${machine.metadata.namespace}/${owner}`) : [];
      },
    },
    {
      // A Cluster event (pause, endpoint, failure domains, initialization) concerns its control plane.
      target: clusters,
      transform: cachedCluster,
      keysFor: (cluster: KubeObject) => {
        const ref = (cluster as Cluster).spec?.controlPlaneRef;
        return ref?.kind === KIND && ref.name ? noteEvent(`${cluster.metadata.namespace}/${ref.name}`) : [];
      },
    },
  ];
  // Reads come from these caches; writes leave expectations so a reconcile never plans on a cache that has not
  // seen Quorum's own last write yet.
  const expectations = new Expectations(options.deps.clock);
  const events = new EventQueue((...args) => options.deps.management.event(...args), options.deps.log);
  const ownedTemplates = new OwnedTemplates(options.deps.clock);
  const cachesOf = (context: ReconcileContext): ManagementCaches => {
    // What the transforms above made of each object: the types the reconcile reads.
    const informers = {
      controlPlanes: context.informer<QuorumControlPlane>(controlPlanes),
      clusters: context.informer<Cluster>(clusters),
      machines: context.informer<Machine>(machines),
    };
    return {
      controlPlane: (key) => informers.controlPlanes.get(key),
      cluster: (key) => informers.clusters.get(key),
      machines: (namespace) => informers.machines.list(namespace),
      machine: (key) => informers.machines.get(key),
    };
  };
  return {
    name: CONTROLLER_NAME,
    watches,
    // Clusters still being created, oldest first: of many created at once, the first ones come up (and are usable)
    // in seconds while the later ones wait, instead of all taking each step together and coming up at the end.
    // Running clusters (initialized) go before them and share the queue in turn, so that of 200 rolled out at once
    // none waits behind the others, and a new cluster never delays a running one's remediation. A key whose object is
    // not in the cache ranks with the running ones: gone, its reconcile only forgets (behind both a burst and a rollout
    // it would wait for one of them to end); not there yet (its Cluster's event came first, as ClusterClass creates
    // them), its first reconcile runs as it arrives and starts its first Machine early (bench/README.md).
    rank(key, caches) {
      const controlPlane = caches.informer<KubeObject & Pick<QuorumControlPlane, "status">>(controlPlanes).get(key);
      if (!controlPlane) return 0;
      if (controlPlane.status?.initialization?.controlPlaneInitialized === true) return 0;
      const at = Date.parse(controlPlane.metadata.creationTimestamp ?? "");
      // creationTimestamp has whole seconds: within one, a fixed order from the uid (under a millisecond), or the
      // hundred clusters created in that second would still take their steps together.
      return Number.isNaN(at) ? undefined : at + uidFraction(controlPlane.metadata.uid);
    },
    // A graceful stop sends the Events of the last reconciles before the lease goes.
    drain: () => events.idle(),
    async reconcile(key, context) {
      const [namespace, name] = key.split("/");
      const caches = cachesOf(context);
      const waiting = expectations.pending(key, cacheLookup(caches));
      if (waiting.waitingFor.length > 0) {
        // The watch event that brings the write re-queues the key at once; the retry is only for a lost event.
        options.deps.log.debug(`waiting for the cache to show ${waiting.waitingFor.join(", ")}`, { object: key });
        return { requeueAfterMs: waiting.retryInMs };
      }
      const cached = caches.controlPlane(key);
      if (!cached) {
        // Gone (deleted, or out of this controller's scope): nothing about it may stay in memory or in /metrics,
        // or a churn of short-lived control planes grows the process without bound. (What OwnedTemplates saw of its
        // templates is kept per template, shared with other Clusters, and swept once older than its recheck interval.)
        expectations.forget(key);
        eventAt.delete(key);
        lastReconciledAt.delete(key);
        options.deps.metrics?.forget(key);
        await forgetCluster(key);
      } else {
        const clusterName = owningClusterName(cached);
        if (clusterName !== clusterOf.get(key)) await forgetCluster(key);
        if (clusterName !== undefined) clusterOf.set(key, clusterName);
      }
      const triggeredAt = eventAt.get(key) ?? lastReconciledAt.get(key);
      eventAt.delete(key);
      if (cached) lastReconciledAt.set(key, options.deps.clock());
      const started = process.hrtime.bigint();
      const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
      let result;
      try {
        result = await reconcile(
          namespace,
          name,
          {
            ...options.deps,
            management: cachedManagement(options.deps.management, caches, expectations, key, events),
            ownedTemplates,
          },
          triggeredAt,
        );
      } catch (error) {
        options.deps.metrics?.reconcileDuration.observe({ result: "error" }, seconds());
        throw error;
      }
      options.deps.metrics?.reconcileDuration.observe(
        { result: result.action && result.action.kind !== "Wait" ? "acted" : "waited" },
        seconds(),
      );
      return result.requeueAfterMs !== undefined ? { requeueAfterMs: result.requeueAfterMs } : undefined;
    },
  };
}

/** A number in [0, 1) fixed for a uid (its first 8 hex digits), 0 without one. */
function uidFraction(uid: string | undefined): number {
  const value = Number.parseInt((uid ?? "").replace(/-/g, "").slice(0, 8), 16);
  return Number.isNaN(value) ? 0 : value / 2 ** 32;
}
