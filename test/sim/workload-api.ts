// The workload API of a kubeadm world as the real KubeadmFlavour (src/adapters/workload/kubeadm/flavour.ts) reaches
// it: in-memory stand-ins for the few @kubernetes/client-node methods the flavour calls, over the world's kubeadm
// objects and the mirror Pods of each Machine's static pods, behind a WorkloadCaller that does what
// WorkloadClients.call does (a 404 is `undefined` when the caller allows it; every other failure a WorkloadApiError).
// Every method passes the schedule's CallGate first, so a crash can fall between any two of the flavour's calls and
// rules 7 and 10 judge its writes before they take effect.
import type { V1ClusterRoleBinding, V1ConfigMap, V1DaemonSet, V1Pod } from "@kubernetes/client-node";
import { WorkloadApiError } from "../../src/adapters/errors.ts";
import type { CallOptions, WorkloadApis } from "../../src/adapters/workload/client.ts";
import type { WorkloadCaller } from "../../src/adapters/workload/kubeadm/flavour.ts";
import { SimApiError, SimCrash, SimViolation, type CallGate, type Effect } from "./calls.ts";
import { KUBE_PROXY_DAEMON_SET, KUBEADM_CONFIG_MAP } from "./kubeadm.ts";
import { nodeReady, workloadReadable, type KubeadmObjects, type World } from "./world.ts";

const SERVER = "https://sim.example:6443";
const CREDENTIALS = "Quorum's client certificate, signed by Secret default/sim-ca";
const CLUSTER_CONFIGURATION_KEY = "ClusterConfiguration";
const KUBE_PROXY_CONTAINER = "kube-proxy";

/** The patch body an image move sends. */
interface ImagePatch {
  metadata?: { resourceVersion?: string };
  spec?: { template?: { spec?: { containers?: { name: string; image?: string }[] } } };
}

/** The caller the real flavour is handed for this world; `gate` is read at every call (a new one per reconcile). */
export function simWorkloadCaller(world: World, gate: () => CallGate): WorkloadCaller {
  const apis = fakeApis(world, gate);
  return (async <T>(
    what: string,
    request: (apis: WorkloadApis, options: CallOptions) => Promise<T>,
    absentOk?: true,
  ): Promise<T | undefined> => {
    try {
      return await request(apis, {} as CallOptions);
    } catch (error) {
      // The process is gone, or a rule broke: nothing to report to a caller that no longer exists.
      if (error instanceof SimCrash || error instanceof SimViolation) throw error;
      // client-node's ApiException carries the HTTP code the same way (`code`); the sim does not load client-node.
      if (absentOk && error instanceof SimApiError && error.code === 404) return undefined;
      const cause =
        error instanceof SimApiError
          ? `refused to ${what} (HTTP ${error.code}: ${error.message})`
          : `could not be reached (${error instanceof Error ? error.message : String(error)})`;
      throw new WorkloadApiError(SERVER, CREDENTIALS, cause, { cause: error });
    }
  }) as WorkloadCaller;
}

function fakeApis(world: World, gate: () => CallGate): WorkloadApis {
  const objects = (): KubeadmObjects => {
    if (!world.kubeadm) throw new Error("the simulated workload cluster of a generic world has no kubeadm objects");
    return world.kubeadm;
  };
  /** Passes the gate, then answers only as the workload API server would (as nodes() does in ports.ts). */
  const enter = (name: string, effect: Effect): void => {
    gate().call(name, effect);
    if (world.leaderId === undefined)
      throw gate().fail(new Error("the workload cluster's API server did not answer: etcdserver: no leader"));
    if (!workloadReadable(world))
      throw gate().fail(new Error(`workload API server ${SERVER}: x509: certificate signed by unknown authority`));
  };
  const notFound = (resource: string, name: string) =>
    gate().fail(new SimApiError(404, `${resource} "${name}" not found`, "NotFound"));
  const conflict = (resource: string, name: string) =>
    gate().fail(
      new SimApiError(
        409,
        `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified`,
        "Conflict",
      ),
    );

  const core = {
    listNamespacedPod: async ({ namespace, labelSelector }: { namespace: string; labelSelector?: string }) => {
      enter(`list Pods ${namespace} ${labelSelector ?? ""}`.trim(), { kind: "none" });
      const items = namespace === "kube-system" && labelSelector === "tier=control-plane" ? mirrorPods(world) : [];
      return gate().done({ apiVersion: "v1", kind: "PodList", metadata: {}, items });
    },
    readNamespacedConfigMap: async ({ name, namespace }: { name: string; namespace: string }) => {
      enter(`read ConfigMap ${namespace}/${name}`, { kind: "none" });
      const document = objects().clusterConfiguration;
      if (!isKubeadmConfig(name, namespace) || document === undefined) throw notFound("configmaps", name);
      return gate().done(configMap(objects(), document));
    },
    replaceNamespacedConfigMap: async ({
      name,
      namespace,
      body,
    }: {
      name: string;
      namespace: string;
      body: V1ConfigMap;
    }) => {
      const document = body.data?.[CLUSTER_CONFIGURATION_KEY];
      enter(`replace ConfigMap ${namespace}/${name}`, { kind: "write-kubeadm-config", document: document ?? "" });
      const kubeadm = objects();
      if (!isKubeadmConfig(name, namespace) || kubeadm.clusterConfiguration === undefined)
        throw notFound("configmaps", name);
      const expected = body.metadata?.resourceVersion;
      if (expected !== undefined && expected !== String(kubeadm.resourceVersion)) throw conflict("configmaps", name);
      if (document !== undefined) kubeadm.clusterConfiguration = document;
      kubeadm.resourceVersion++;
      return gate().done(configMap(kubeadm, kubeadm.clusterConfiguration));
    },
  };

  const apps = {
    readNamespacedDaemonSet: async ({ name, namespace }: { name: string; namespace: string }) => {
      enter(`read DaemonSet ${namespace}/${name}`, { kind: "none" });
      const image = objects().kubeProxyImage;
      if (!isKubeProxy(name, namespace) || image === undefined) throw notFound("daemonsets.apps", name);
      return gate().done(daemonSet(objects(), image));
    },
    // A strategic merge patch of one container's image (src/adapters/workload/kubeadm/move-image.ts).
    patchNamespacedDaemonSet: async ({ name, namespace, body }: { name: string; namespace: string; body: object }) => {
      const patch = body as ImagePatch;
      const image = patch.spec?.template?.spec?.containers?.find(
        (container) => container.name === KUBE_PROXY_CONTAINER,
      )?.image;
      enter(`patch DaemonSet ${namespace}/${name}`, { kind: "move-kube-proxy", image: image ?? "" });
      const kubeadm = objects();
      if (!isKubeProxy(name, namespace) || kubeadm.kubeProxyImage === undefined)
        throw notFound("daemonsets.apps", name);
      const expected = patch.metadata?.resourceVersion;
      if (expected !== undefined && expected !== String(kubeadm.resourceVersion))
        throw conflict("daemonsets.apps", name);
      if (image !== undefined) kubeadm.kubeProxyImage = image;
      kubeadm.resourceVersion++;
      return gate().done(daemonSet(kubeadm, kubeadm.kubeProxyImage));
    },
  };

  const rbac = {
    readClusterRoleBinding: async ({ name }: { name: string }) => {
      enter(`read ClusterRoleBinding ${name}`, { kind: "none" });
      if (!objects().bindings.has(name)) throw notFound("clusterrolebindings.rbac.authorization.k8s.io", name);
      return gate().done(binding(name));
    },
    createClusterRoleBinding: async ({ body }: { body: V1ClusterRoleBinding }) => {
      const name = body.metadata?.name ?? "";
      enter(`create ClusterRoleBinding ${name}`, { kind: "create-binding", name });
      const kubeadm = objects();
      if (kubeadm.bindings.has(name))
        throw gate().fail(
          new SimApiError(
            409,
            `clusterrolebindings.rbac.authorization.k8s.io "${name}" already exists`,
            "AlreadyExists",
          ),
        );
      kubeadm.bindings.add(name);
      return gate().done(body);
    },
  };

  // Only the methods the flavour calls exist; any other call fails loudly (a TypeError the trace shows).
  return { core, apps, rbac } as unknown as WorkloadApis;
}

/** The static pods kubeadm runs on a control-plane node (kube-system, labelled tier=control-plane and component). */
const STATIC_PODS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

/**
 * The mirror Pods the kubelets keep for kubeadm's static pods: one per component on every Machine kubeadm set up whose
 * Node is registered, Ready while the kubelet reports the Node Ready (the Machine runs and its etcd member answers).
 */
function mirrorPods(world: World): V1Pod[] {
  const pods: V1Pod[] = [];
  for (const machine of world.machines) {
    if (machine.staticPodVersion === undefined || !machine.nodeRegistered) continue;
    const ready = nodeReady(world, machine);
    for (const component of STATIC_PODS) {
      const image =
        component === "etcd"
          ? "registry.k8s.io/etcd:3.6.5-0"
          : `registry.k8s.io/${component}:${machine.staticPodVersion}`;
      pods.push({
        metadata: {
          name: `${component}-${machine.hostName}`,
          namespace: "kube-system",
          labels: { tier: "control-plane", component },
        },
        spec: { nodeName: machine.hostName, containers: [{ name: component, image }] },
        status: {
          conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
          ...(ready
            ? {}
            : {
                containerStatuses: [
                  {
                    name: component,
                    image,
                    imageID: "",
                    ready: false,
                    restartCount: 0,
                    state: { waiting: { reason: "ContainerCreating" } },
                  },
                ],
              }),
        },
      });
    }
  }
  return pods;
}

function isKubeadmConfig(name: string, namespace: string): boolean {
  return name === KUBEADM_CONFIG_MAP.name && namespace === KUBEADM_CONFIG_MAP.namespace;
}

function isKubeProxy(name: string, namespace: string): boolean {
  return name === KUBE_PROXY_DAEMON_SET.name && namespace === KUBE_PROXY_DAEMON_SET.namespace;
}

function configMap(objects: KubeadmObjects, document: string): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { ...KUBEADM_CONFIG_MAP, resourceVersion: String(objects.resourceVersion) },
    data: { [CLUSTER_CONFIGURATION_KEY]: document },
  };
}

function daemonSet(objects: KubeadmObjects, image: string): V1DaemonSet {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { ...KUBE_PROXY_DAEMON_SET, resourceVersion: String(objects.resourceVersion) },
    spec: {
      selector: { matchLabels: { "k8s-app": KUBE_PROXY_CONTAINER } },
      template: {
        metadata: { labels: { "k8s-app": KUBE_PROXY_CONTAINER } },
        spec: { containers: [{ name: KUBE_PROXY_CONTAINER, image, command: ["/usr/local/bin/kube-proxy"] }] },
      },
    },
  };
}

function binding(name: string): V1ClusterRoleBinding {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "(as kubeadm made it)" },
  };
}
