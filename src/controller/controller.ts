// The QuorumControlPlane controller as the runtime's Manager runs it: what it watches, how an event on a Machine
// or a Cluster maps to the QuorumControlPlane it concerns, and the reconcile call with the per-key etcd poll.
import { CAPI_GROUP, CAPI_VERSION, GROUP, KIND, LABEL_CONTROL_PLANE_NAME, PLURAL, VERSION } from "../api/constants.ts";
import type { Controller, WatchSpec } from "../adapters/kube/manager.ts";
import type { KubeObject } from "../adapters/kube/rest.ts";
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
  const noteEvent = (key: string) => {
    if (!eventAt.has(key)) eventAt.set(key, options.deps.clock());
    return [key];
  };
  const labelSelector = options.watchFilter ? `cluster.x-k8s.io/watch-filter=${options.watchFilter}` : undefined;
  const scope = { ...(options.namespace ? { namespace: options.namespace } : {}), ...(labelSelector ? { labelSelector } : {}) };
  const watches: WatchSpec[] = [
    { target: { resource: { group: GROUP, version: VERSION, plural: PLURAL, namespaced: true }, ...scope }, keysFor: (qcp: KubeObject) => noteEvent(`${qcp.metadata.namespace}/${qcp.metadata.name}`) },
    {
      // A Machine event concerns the QuorumControlPlane named in its control-plane-name label.
      target: { resource: { group: CAPI_GROUP, version: CAPI_VERSION, plural: "machines", namespaced: true }, ...(options.namespace ? { namespace: options.namespace } : {}), labelSelector: labelSelector ? `${LABEL_CONTROL_PLANE_NAME},${labelSelector}` : LABEL_CONTROL_PLANE_NAME },
      keysFor: (machine: KubeObject) => {
        const owner = machine.metadata.labels?.[LABEL_CONTROL_PLANE_NAME];
        return owner ? noteEvent(`${machine.metadata.namespace}/${owner}`) : [];
      },
    },
    {
      // A Cluster event (pause, endpoint, failure domains, initialization) concerns its control plane.
      target: { resource: { group: CAPI_GROUP, version: CAPI_VERSION, plural: "clusters", namespaced: true }, ...scope },
      keysFor: (cluster: KubeObject) => {
        const ref = (cluster as KubeObject & { spec?: { controlPlaneRef?: { kind?: string; name?: string } } }).spec?.controlPlaneRef;
        return ref?.kind === KIND && ref.name ? noteEvent(`${cluster.metadata.namespace}/${ref.name}`) : [];
      },
    },
  ];
  return {
    name: CONTROLLER_NAME,
    watches,
    async reconcile(key) {
      const [namespace, name] = key.split("/");
      const triggeredAt = eventAt.get(key) ?? lastReconciledAt.get(key);
      eventAt.delete(key);
      lastReconciledAt.set(key, options.deps.clock());
      const started = process.hrtime.bigint();
      const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
      let result;
      try {
        result = await reconcile(namespace, name, options.deps, triggeredAt);
      } catch (error) {
        options.deps.metrics?.reconcileDuration.observe({ result: "error" }, seconds());
        throw error;
      }
      options.deps.metrics?.reconcileDuration.observe({ result: result.action && result.action.kind !== "Wait" ? "acted" : "waited" }, seconds());
      return result.requeueAfterMs !== undefined ? { requeueAfterMs: result.requeueAfterMs } : undefined;
    },
  };
}
