// Moves one container's image in a workload cluster's Deployment or DaemonSet (CoreDNS, kube-proxy) by a strategic
// merge patch that names only that container and image, at the resourceVersion read, as `kubectl set image` does.
// Not a PUT of the object read back: client-node's models keep only the fields they know, so a PUT would drop every
// field newer than them (a pod spec field of a later Kubernetes, or an alpha one a cluster enabled). Someone else's
// edit in between is a conflict, and the next reconcile reads again.
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { WorkloadCaller } from "../client.ts";

export interface ImageMove {
  kind: "Deployment" | "DaemonSet";
  namespace: string;
  name: string;
  /** The resourceVersion the image was read at. */
  resourceVersion: string | undefined;
  container: string;
  image: string;
}

/** The patch body: the container by its name (the merge key of a pod template's containers), with its new image. */
export function imagePatch(move: ImageMove): object {
  return {
    metadata: move.resourceVersion ? { resourceVersion: move.resourceVersion } : {},
    spec: { template: { spec: { containers: [{ name: move.container, image: move.image }] } } },
  };
}

export async function moveImage(call: WorkloadCaller, move: ImageMove, what: string): Promise<void> {
  const request = { name: move.name, namespace: move.namespace, body: imagePatch(move) };
  await call(what, (apis, options) => {
    const patch = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch, options);
    return move.kind === "Deployment"
      ? apis.apps.patchNamespacedDeployment(request, patch)
      : apis.apps.patchNamespacedDaemonSet(request, patch);
  });
}
