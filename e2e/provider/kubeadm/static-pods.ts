// Static pod manifests as the process kubelet reads them: which local binary runs an image, the command line a
// manifest's container becomes, and the mirror Pod that shows the running process in the API. Pure functions of
// the manifest text and a few facts about the node; the process supervision lives in pod-supervisor.ts.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

/** The part of a Pod manifest the kubelet reads; everything else is kept as is for the mirror Pod. */
export interface PodManifest {
  apiVersion: string;
  kind: "Pod";
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    containers: ContainerSpec[];
    tolerations?: { key?: string; operator?: string; effect?: string; value?: string }[];
    hostNetwork?: boolean;
    [field: string]: unknown;
  };
}

export interface ContainerSpec {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  workingDir?: string;
  [field: string]: unknown;
}

/** One manifest file read from the manifests dir. */
export interface StaticPod {
  /** The manifest file's path. */
  file: string;
  /** Content hash: a changed manifest is a new pod, as the kubelet's config.hash makes it. */
  hash: string;
  manifest: PodManifest;
  /** metadata.name of the manifest, e.g. "etcd"; also names the log file. */
  name: string;
  namespace: string;
}

/** The annotation keys the kubelet puts on static and mirror pods (k8s.io/kubernetes pkg/kubelet/types). */
export const CONFIG_HASH_ANNOTATION = "kubernetes.io/config.hash";
export const CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror";
export const CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source";
export const CONFIG_SEEN_ANNOTATION = "kubernetes.io/config.seen";

/**
 * The hash of a manifest's text. The real kubelet hashes the decoded Pod with Go's DeepHashObject plus the node name
 * and file path (fnv-128a, 32 hex digits); nothing outside the kubelet recomputes it, so any stable digest of the
 * same length does: what matters is that a changed manifest gets a new hash.
 */
export function manifestHash(text: string, nodeName: string, file: string): string {
  return createHash("sha256").update(text).update(`host:${nodeName}`).update(`file:${file}`).digest("hex").slice(0, 32);
}

/** Parses one manifest; throws with the file, the cause and the fix when it is not a Pod the kubelet can run. */
export function parseStaticPod(file: string, text: string, nodeName: string): StaticPod {
  let manifest: PodManifest;
  try {
    manifest = parse(text) as PodManifest;
  } catch (error) {
    throw new Error(`static pod manifest ${file}: not YAML (${(error as Error).message}): fix or remove the file`, {
      cause: error,
    });
  }
  if (!manifest || manifest.kind !== "Pod" || manifest.apiVersion !== "v1") {
    throw new Error(`static pod manifest ${file}: not a v1 Pod: the manifests dir holds only Pod manifests`);
  }
  const name = manifest.metadata?.name;
  if (!name) throw new Error(`static pod manifest ${file}: metadata.name is empty: every static pod needs a name`);
  const containers = manifest.spec?.containers ?? [];
  if (containers.length !== 1) {
    throw new Error(
      `static pod manifest ${file}: ${containers.length} containers; the process kubelet runs exactly one ` +
        `process per pod (kubeadm's control-plane manifests have one container each)`,
    );
  }
  return {
    file,
    hash: manifestHash(text, nodeName, file),
    manifest,
    name,
    namespace: manifest.metadata.namespace ?? "default",
  };
}

/** The Kubernetes components and etcd, the images kubeadm's manifests run, by repository name. */
const KUBERNETES_COMPONENTS = new Set(["kube-apiserver", "kube-controller-manager", "kube-scheduler"]);

/**
 * The local binary that stands in for a container image: `<registry>/kube-apiserver:v1.37.2` →
 * `<binDir>/kube-apiserver-1.37` (same for kube-controller-manager and kube-scheduler), `<registry>/etcd:3.7.0-0` →
 * `<binDir>/etcd-3.7`. Any registry (kubeadm's imageRepository may be changed). Throws for an image with no local
 * binary: guessing another version would run a control plane that is not the one kubeadm asked for.
 */
export function binaryForImage(image: string, binDir: string): string {
  const match = /^(?:.*\/)?([a-z0-9-]+):v?(\d+)\.(\d+)\.\d+(?:[-+][0-9A-Za-z.-]+)?(?:@sha256:[0-9a-f]+)?$/.exec(image);
  if (!match) {
    throw new Error(
      `image ${image}: no local binary: the process kubelet runs only <registry>/{kube-apiserver,` +
        `kube-controller-manager,kube-scheduler}:vX.Y.Z and <registry>/etcd:X.Y.Z-N images`,
    );
  }
  const [, repository, major, minor] = match;
  if (!KUBERNETES_COMPONENTS.has(repository) && repository !== "etcd") {
    throw new Error(
      `image ${image}: no local binary for ${repository}: the process kubelet runs only control-plane images`,
    );
  }
  const binary = join(binDir, `${repository}-${major}.${minor}`);
  if (!existsSync(binary)) {
    throw new Error(
      `image ${image}: no local binary ${binary}: make deps builds the versions in hack/versions.env; ` +
        `build ${repository} ${major}.${minor} or let kubeadm use a version that is built`,
    );
  }
  return binary;
}

/** The process a static pod's container becomes. */
export interface PodCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

/**
 * The container's command line with the image's binary replaced by the local one: command[0] is the binary's name
 * inside the image (kubeadm writes e.g. `command: [kube-apiserver, --flag=...]`), the rest of command and all of args
 * follow as the container runtime would pass them. Env holds only the container's literal values (plus PATH and
 * HOSTNAME, as a container has them); valueFrom needs the API and kubeadm's manifests use none.
 */
export function podCommand(pod: StaticPod, binDir: string, hostname: string): PodCommand {
  const container = pod.manifest.spec.containers[0];
  const binary = binaryForImage(container.image, binDir);
  const command = container.command ?? [];
  if (command.length === 0) {
    throw new Error(
      `static pod ${pod.name} (${pod.file}): container ${container.name} has no command; the process kubelet ` +
        `cannot know the image's entrypoint: give the container a command`,
    );
  }
  checkHostPathMounts(pod, container);
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOSTNAME: hostname };
  for (const variable of container.env ?? []) {
    if (variable.valueFrom !== undefined) {
      throw new Error(
        `static pod ${pod.name} (${pod.file}): env ${variable.name} uses valueFrom, which a static pod cannot ` +
          `resolve: use a literal value`,
      );
    }
    env[variable.name] = variable.value ?? "";
  }
  return {
    command: binary,
    args: [...command.slice(1), ...(container.args ?? [])],
    env,
    cwd: container.workingDir ?? "/",
  };
}

/**
 * A process sees the node's files at their own paths: a hostPath volume mounted elsewhere (mountPath ≠ path) would
 * make the command line name files the process cannot find. kubeadm mounts every hostPath at its own path, so this
 * only refuses manifests a user changed, with the fix.
 */
function checkHostPathMounts(pod: StaticPod, container: ContainerSpec): void {
  const volumes = (pod.manifest.spec.volumes ?? []) as { name: string; hostPath?: { path: string } }[];
  const mounts = (container.volumeMounts ?? []) as { name: string; mountPath: string }[];
  for (const mount of mounts) {
    const hostPath = volumes.find((volume) => volume.name === mount.name)?.hostPath?.path;
    if (hostPath !== undefined && hostPath.replace(/\/+$/, "") !== mount.mountPath.replace(/\/+$/, "")) {
      throw new Error(
        `static pod ${pod.name} (${pod.file}): volume ${mount.name} mounts host path ${hostPath} at ` +
          `${mount.mountPath}; a process has no mount namespace of its own: mount it at ${hostPath}`,
      );
    }
  }
}

/** The name the kubelet gives a static pod's mirror Pod: `<manifest name>-<node name>`. */
export function mirrorPodName(pod: StaticPod, nodeName: string): string {
  return `${pod.name}-${nodeName}`;
}

/** What the mirror Pod needs to know about the node: its name and the Node object's UID (for the owner reference). */
export interface NodeIdentity {
  name: string;
  uid: string;
}

/**
 * The mirror Pod of a static pod, as the kubelet creates it (pkg/kubelet/config/common.go applyDefaults and
 * pkg/kubelet/pod/mirror_client.go): the manifest with name `<name>-<node>`, spec.nodeName, the NoExecute
 * toleration every file-sourced pod gets, the config.hash/config.source/config.mirror annotations, and a
 * controller owner reference to its Node without blockOwnerDeletion — the NodeRestriction admission plugin rejects a
 * mirror pod from a node's credentials without exactly that owner reference.
 */
export function mirrorPod(pod: StaticPod, node: NodeIdentity): Record<string, unknown> {
  const { manifest } = pod;
  const tolerations = [...(manifest.spec.tolerations ?? [])];
  if (!tolerations.some((t) => t.operator === "Exists" && t.effect === "NoExecute" && !t.key)) {
    tolerations.push({ operator: "Exists", effect: "NoExecute" });
  }
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: mirrorPodName(pod, node.name),
      namespace: pod.namespace,
      labels: manifest.metadata.labels,
      annotations: {
        ...manifest.metadata.annotations,
        [CONFIG_HASH_ANNOTATION]: pod.hash,
        [CONFIG_MIRROR_ANNOTATION]: pod.hash,
        [CONFIG_SOURCE_ANNOTATION]: "file",
      },
      ownerReferences: [{ apiVersion: "v1", kind: "Node", name: node.name, uid: node.uid, controller: true }],
    },
    spec: { ...manifest.spec, nodeName: node.name, tolerations },
  };
}

/** What the kubelet knows about a static pod's process right now, for the mirror Pod's status. */
export interface PodRuntimeState {
  /** Running since (ISO time), or undefined when not running. */
  runningSince?: string;
  restartCount: number;
  /** Why it is not running: a start error (no binary, bad manifest) or the last exit. */
  waiting?: { reason: string; message: string };
  /** The last exit, kept as lastState like the kubelet does. */
  lastExit?: { exitCode: number; signal?: string; finishedAt: string };
}

/** The mirror Pod's status: Running and Ready while the process runs (host network: the pod IP is the node IP). */
export function mirrorPodStatus(
  pod: StaticPod,
  state: PodRuntimeState,
  nodeIP: string,
  startTime: string,
): Record<string, unknown> {
  const container = pod.manifest.spec.containers[0];
  const running = state.runningSince !== undefined;
  const condition = (type: string, status: boolean) => ({
    type,
    status: status ? "True" : "False",
    lastTransitionTime: state.runningSince ?? startTime,
  });
  const lastState = state.lastExit
    ? {
        terminated: {
          exitCode: state.lastExit.exitCode,
          reason: state.lastExit.signal ? "Error" : state.lastExit.exitCode === 0 ? "Completed" : "Error",
          message: state.lastExit.signal ? `killed by ${state.lastExit.signal}` : undefined,
          finishedAt: state.lastExit.finishedAt,
        },
      }
    : {};
  return {
    phase: running ? "Running" : "Pending",
    conditions: [
      condition("PodReadyToStartContainers", true),
      condition("Initialized", true),
      condition("Ready", running),
      condition("ContainersReady", running),
      condition("PodScheduled", true),
    ],
    hostIP: nodeIP,
    hostIPs: [{ ip: nodeIP }],
    podIP: nodeIP,
    podIPs: [{ ip: nodeIP }],
    // qosClass is left out: the API server derives it from the resources at creation and refuses any change.
    startTime,
    containerStatuses: [
      {
        name: container.name,
        image: container.image,
        imageID: "",
        containerID: running ? `process://${pod.name}/${state.restartCount}` : undefined,
        ready: running,
        started: running,
        restartCount: state.restartCount,
        state: running
          ? { running: { startedAt: state.runningSince } }
          : { waiting: state.waiting ?? { reason: "ContainerCreating" } },
        lastState,
      },
    ],
  };
}
