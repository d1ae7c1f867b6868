// The kubeadm side of a kubeadm world (WorldTraits.kubeadm): what kubeadm init uploads into the workload cluster
// (kube-system/kubeadm-config, the kube-proxy DaemonSet, kubeadm's ClusterRoleBindings), what kubeadm join reads back,
// and the truths rule 10 judges. Written here from kubeadm's behaviour, not from src/adapters/workload/kubeadm: the
// rules must not share the arithmetic of the code they judge.
import { parse } from "yaml";
import { uploadedClusterConfiguration } from "../env/kubeadm-uploaded.ts";
import type { World } from "./world.ts";

/** The namespace/name of the objects, as kubeadm creates them. */
export const KUBEADM_CONFIG_MAP = { namespace: "kube-system", name: "kubeadm-config" } as const;
export const KUBE_PROXY_DAEMON_SET = { namespace: "kube-system", name: "kube-proxy" } as const;

/**
 * The KubeadmConfigTemplate's clusterConfiguration (the sample template's, config/samples/cluster-kubeadm.yaml): what
 * ports.ts shows as the template and what kubeadm init puts into the document it uploads.
 */
export const TEMPLATE_CLUSTER_CONFIGURATION = { apiServer: { certSANs: ["localhost", "127.0.0.1"] } };

/**
 * The bootstrap config template a world's control plane references: a KubeadmConfigTemplate in a kubeadm world
 * (flavourOf says "kubeadm"), otherwise a bootstrap provider Quorum has no flavour for (the generic one).
 */
export function bootstrapTemplateRef(kubeadm: boolean): { apiVersion: string; kind: string; name: string } {
  return kubeadm
    ? { apiVersion: "bootstrap.cluster.x-k8s.io/v1beta1", kind: "KubeadmConfigTemplate", name: "kubeadm" }
    : { apiVersion: "bootstrap.cluster.x-k8s.io/v1beta1", kind: "SimBootstrapConfigTemplate", name: "bootstrap" };
}

/** A kubeadm world starts at the version the kubeadm e2e starts at, so a version bump crosses kubeadm 1.37's RBAC. */
export const KUBEADM_START_VERSION = "v1.36.3";

/**
 * The ClusterRoleBindings kubeadm creates at init, by the minor that introduced them: every later kubeadm expects
 * them (1.29 split admin.conf off system:masters; 1.37 narrowed the API server's kubelet client credential).
 */
const KUBEADM_BINDINGS_SINCE: readonly (readonly [string, number])[] = [
  ["kubeadm:cluster-admins", 29],
  ["kubeadm:apiserver-kubelet-client", 37],
];

/** The bindings an API server of `version` needs (exec, logs and port-forward fail without them). */
export function bindingsExpected(version: string): string[] {
  const minor = minorOf(version);
  return KUBEADM_BINDINGS_SINCE.filter(([, since]) => minor >= since).map(([name]) => name);
}

/** The ClusterConfiguration kubeadm init uploads in a world (v1beta4, its defaults filled in). */
function worldClusterConfiguration(version: string): string {
  return uploadedClusterConfiguration({
    clusterName: "sim",
    kubernetesVersion: version,
    controlPlaneEndpoint: "sim.example:6443",
    certSANs: TEMPLATE_CLUSTER_CONFIGURATION.apiServer.certSANs,
  });
}

export function kubeProxyImage(version: string): string {
  return `registry.k8s.io/kube-proxy:${version}`;
}

/** kubeadm init's upload phase: kubeadm-config, kube-proxy and the bindings, all at the init Machine's version. */
export function uploadKubeadmObjects(world: World, version: string): void {
  const objects = world.kubeadm;
  if (!objects) return;
  objects.uploadAt = undefined;
  objects.clusterConfiguration = worldClusterConfiguration(version);
  objects.kubeProxyImage = kubeProxyImage(version);
  for (const name of bindingsExpected(version)) objects.bindings.add(name);
  objects.resourceVersion++;
}

/**
 * The kubernetesVersion in kubeadm-config, as kubeadm join reads it; undefined when there is no document (join cannot
 * discover the cluster's configuration) or it says none.
 */
export function configVersion(world: World): string | undefined {
  const document = world.kubeadm?.clusterConfiguration;
  if (document === undefined) return undefined;
  // Judged every step once faults stop: parse each document once.
  let version = parsedVersions.get(document);
  if (version === undefined) {
    const parsed = parse(document) as { kubernetesVersion?: unknown } | null;
    version = typeof parsed?.kubernetesVersion === "string" ? parsed.kubernetesVersion : "";
    if (parsedVersions.size > 1000) parsedVersions.clear();
    parsedVersions.set(document, version);
  }
  return version === "" ? undefined : version;
}

const parsedVersions = new Map<string, string>();

/** The tag of kube-proxy's image (its version). */
export function kubeProxyVersion(world: World): string | undefined {
  const image = world.kubeadm?.kubeProxyImage;
  if (image === undefined) return undefined;
  const colon = image.lastIndexOf(":");
  return colon > image.lastIndexOf("/") ? image.slice(colon + 1) : undefined;
}

/** [major, minor, patch] of "v1.37.2"; NaN parts for anything else. */
export function versionParts(version: string): [number, number, number] {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [NaN, NaN, NaN];
}

function minorOf(version: string): number {
  return versionParts(version)[1];
}

/** Negative when a is older than b, 0 when equal, positive when newer. */
export function compareVersions(a: string, b: string): number {
  const left = versionParts(a);
  const right = versionParts(b);
  for (let index = 0; index < 3; index++) if (left[index] !== right[index]) return left[index] - right[index];
  return 0;
}
