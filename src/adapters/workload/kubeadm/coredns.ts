// The kubeadm flavour's `coredns` step (issue 17): CoreDNS's image follows what the KubeadmConfigTemplate's
// clusterConfiguration pins, once every Machine is up to date, as KCP's UpdateCoreDNS does (CAPI v1.14
// controlplane/kubeadm/pkg/workload_cluster_coredns.go, run after kube-proxy at the end of a reconcile with nothing
// left to roll out). Facts taken from KCP:
//   - nothing under the control plane's `controlplane.cluster.x-k8s.io/skip-coredns` annotation;
//   - the target repository is `dns.imageRepository`, else the cluster-wide `imageRepository`, else the current
//     image's (trailing "/" trimmed); the target tag is `dns.imageTag`, else the current tag; the image name is the
//     current one, except that `coredns` in registry.k8s.io or k8s.gcr.io becomes `coredns/coredns` from CoreDNS
//     1.8.0 (the upstream rename kubeadm follows); a digest is dropped;
//   - a move to an older CoreDNS is refused (validateCoreDNSImageTag), and so is an image without a parseable tag.
// As KCP, the template's dns.imageRepository and dns.imageTag are written into kubeadm-config's dns (before the
// Deployment moves, and again whenever they differ): `kubeadm join --control-plane` pre-pulls the CoreDNS image it
// names, so a pin left in a retired registry would fail every later join. KCP also migrates the Corefile with
// github.com/coredns/corefile-migration (and so refuses a running CoreDNS that library does not list); Quorum does
// not: it moves the image and says so when CoreDNS's minor changes. KCP acts whenever the
// template defines any clusterConfiguration, which without a pin only drops a digest or renames a pre-1.8 image;
// Quorum leaves an unpinned CoreDNS, and the Deployment, unread.
import type { QuorumControlPlane } from "../../../api/types.ts";
import type { WorkloadCaller } from "../client.ts";
import {
  CLUSTER_CONFIGURATION_KEY,
  ClusterConfigurationError,
  dnsImageOf,
  syncDNSImage,
  type DNSImage,
} from "./cluster-configuration.ts";
import type { StepState } from "./flavour.ts";
import { moveImage } from "./move-image.ts";
import { KUBEADM_CONFIG_WHERE, readKubeadmConfig, writeClusterConfiguration } from "./kubeadm-config-map.ts";

export const COREDNS = { namespace: "kube-system", name: "coredns" } as const;
/** The container of kubeadm's CoreDNS Deployment whose image moves. */
export const COREDNS_CONTAINER = "coredns";
/** KCP's annotation: the control plane leaves CoreDNS alone (a user manages it, or runs another DNS). */
export const SKIP_COREDNS_ANNOTATION = "controlplane.cluster.x-k8s.io/skip-coredns";

/**
 * What the template's clusterConfiguration pins of CoreDNS's image: `dns.imageTag`, and `dns.imageRepository` else the
 * cluster-wide `imageRepository` (empty strings are unset, as in CABPK).
 */
export type CoreDNSPin = DNSImage;

export type CoreDNSMove =
  | { kind: "unchanged" }
  | { kind: "move"; image: string; fromVersion: string; toVersion: string; minorChanges: boolean }
  | { kind: "refused"; reason: string };

/** The registries where upstream renamed `coredns` to `coredns/coredns` at 1.8.0. */
const RENAMING_REGISTRIES = ["registry.k8s.io", "k8s.gcr.io"];

/** The pin in a KubeadmConfigTemplate's spec.template.spec.clusterConfiguration; undefined when it pins nothing. */
export function coreDNSPin(clusterConfiguration: unknown): CoreDNSPin | undefined {
  if (!isObject(clusterConfiguration)) return undefined;
  const dns = dnsImageOf(clusterConfiguration);
  const imageRepository = dns.imageRepository ?? text(clusterConfiguration.imageRepository);
  const imageTag = dns.imageTag;
  if (imageRepository === undefined && imageTag === undefined) return undefined;
  return { ...(imageRepository ? { imageRepository } : {}), ...(imageTag ? { imageTag } : {}) };
}

/** Where CoreDNS's `current` image goes under `pin`. Pure. */
export function moveCoreDNSImage(current: string, pin: CoreDNSPin): CoreDNSMove {
  const [withoutDigest] = current.split("@");
  const slash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.lastIndexOf(":");
  if (colon <= slash) {
    return {
      kind: "refused",
      reason: `${current} has no tag, so whether the pin is older cannot be told; tag the Deployment's image with its CoreDNS version, or annotate the control plane ${SKIP_COREDNS_ANNOTATION} and move CoreDNS yourself`,
    };
  }
  const fromTag = withoutDigest.slice(colon + 1);
  const toTag = pin.imageTag ?? fromTag;
  const from = parseImageTag(fromTag);
  const to = parseImageTag(toTag);
  const yourself = `or annotate the control plane ${SKIP_COREDNS_ANNOTATION} and move CoreDNS yourself`;
  if (!from) {
    return {
      kind: "refused",
      reason: `the tag of ${current} is not a CoreDNS version (like v1.14.6), so whether the pin is older cannot be told; tag the Deployment's image with its version, ${yourself}`,
    };
  }
  if (!to) {
    return {
      kind: "refused",
      reason: `dns.imageTag ${toTag} is not a CoreDNS version (like v1.14.6); pin a version, ${yourself}`,
    };
  }
  if (compareVersions(to, from) < 0) {
    // KCP refuses it too: a Corefile kept (or migrated) for the newer CoreDNS may use plugins the older one rejects,
    // and a CoreDNS that does not start is DNS down for the whole cluster.
    return {
      kind: "refused",
      reason: `dns.imageTag ${toTag} is older than the ${fromTag} CoreDNS runs, and CoreDNS is never moved backwards (as KCP): pin ${fromTag} or later, ${yourself}`,
    };
  }
  const name = withoutDigest.slice(slash + 1, colon);
  const repository = pin.imageRepository?.replace(/\/+$/, "") ?? (slash >= 0 ? withoutDigest.slice(0, slash) : "");
  const renamed =
    RENAMING_REGISTRIES.includes(repository) && name === "coredns" && compareVersions(to, [1, 8, 0]) >= 0
      ? "coredns/coredns"
      : name;
  const image = `${repository ? `${repository}/` : ""}${renamed}:${toTag}`;
  if (image === current) return { kind: "unchanged" };
  return {
    kind: "move",
    image,
    fromVersion: from.join("."),
    toVersion: to.join("."),
    minorChanges: from[0] !== to[0] || from[1] !== to[1],
  };
}

/** The coredns step as observed: done, blocked, or the Deployment's image to replace. */
export async function coreDNS(
  controlPlane: QuorumControlPlane,
  call: WorkloadCaller,
  clusterConfiguration: () => Promise<unknown>,
): Promise<StepState> {
  const step = (done: boolean, detail: string, blocked?: string): StepState["step"] => ({
    name: "coredns",
    when: "AfterRollout",
    done,
    detail,
    ...(blocked ? { blocked } : {}),
  });
  if (controlPlane.metadata.annotations?.[SKIP_COREDNS_ANNOTATION] !== undefined) return { step: step(true, "") };
  const template = await clusterConfiguration();
  const pin = coreDNSPin(template);
  if (!pin) return { step: step(true, "") };
  const where = `Deployment ${COREDNS.namespace}/${COREDNS.name} of the workload cluster`;
  const deployment = await call(
    `read ${where}`,
    (apis, options) => apis.apps.readNamespacedDeployment(COREDNS, options),
    true,
  );
  // No CoreDNS (skipped at init, or another DNS replaces it): nothing to move, but kubeadm init's addon phase may
  // still create it, so the absence is not trusted for long.
  if (!deployment) return { step: step(true, ""), absent: true };
  const container = deployment.spec?.template.spec?.containers.find(({ name }) => name === COREDNS_CONTAINER);
  const pinned = `the template's clusterConfiguration pins CoreDNS's ${Object.entries(pin)
    .map(([field, value]) => `${field} ${String(value)}`)
    .join(" and ")}`;
  if (!container?.image) {
    const why = `${where} has no container ${COREDNS_CONTAINER} with an image, but ${pinned}: remove the pin, or annotate the control plane ${SKIP_COREDNS_ANNOTATION}`;
    return { step: step(false, why, why) };
  }
  const from = container.image;
  const move = moveCoreDNSImage(from, pin);
  if (move.kind === "refused") {
    const why = `${where} stays at ${from}: ${move.reason}`;
    return { step: step(false, why, why) };
  }
  // kubeadm-config's dns follows the pin too (as KCP writes it): every control-plane join pre-pulls CoreDNS from it.
  let pinInConfig;
  try {
    pinInConfig = await dnsImageInKubeadmConfig(call, template);
  } catch (error) {
    if (!(error instanceof ClusterConfigurationError)) throw error;
    return { step: step(false, error.message, error.message) };
  }
  const configChanged = pinInConfig
    ? `; ${KUBEADM_CONFIG_WHERE} names it for joining Machines: ${pinInConfig.changes}`
    : "";
  if (move.kind === "unchanged") {
    if (!pinInConfig) return { step: step(true, "") };
    return {
      step: step(
        false,
        `${where} runs ${from}, but ${KUBEADM_CONFIG_WHERE}, which joining Machines pre-pull CoreDNS from, differs: ${pinInConfig.changes}`,
      ),
      apply: async () => {
        await pinInConfig.apply();
        return `updated ${KUBEADM_CONFIG_WHERE} for joining Machines: ${pinInConfig.changes}`;
      },
    };
  }
  // Quorum has no Corefile migration (KCP runs corefile-migration): across minors the Corefile may need edits.
  const corefile = move.minorChanges
    ? ` (CoreDNS ${move.fromVersion} → ${move.toVersion}: the Corefile in ConfigMap ${COREDNS.namespace}/${COREDNS.name} is left as is; check it against CoreDNS's release notes)`
    : "";
  return {
    step: step(false, `${where} runs ${from}, not ${move.image}${corefile}`),
    apply: async () => {
      // kubeadm-config first, as KCP: a failure after it leaves only the Deployment to move on the next reconcile.
      await pinInConfig?.apply();
      const image = { ...COREDNS, kind: "Deployment", container: COREDNS_CONTAINER, image: move.image } as const;
      await moveImage(call, { ...image, resourceVersion: deployment.metadata?.resourceVersion }, `update ${where}`);
      return `moved ${where} from ${from} to ${move.image}${corefile}${configChanged}`;
    },
  };
}

/**
 * When kubeadm-config's dns is not the template's: what differs, and the write that makes it so. Undefined when it
 * already is, or when there is no kubeadm-config to write (init has not uploaded it; the kubeadm-config step says so).
 */
async function dnsImageInKubeadmConfig(
  call: WorkloadCaller,
  template: unknown,
): Promise<{ changes: string; apply: () => Promise<void> } | undefined> {
  const configMap = await readKubeadmConfig(call);
  const document = configMap?.data?.[CLUSTER_CONFIGURATION_KEY];
  if (!configMap || document === undefined) return undefined;
  const sync = syncDNSImage(document, dnsImageOf(template), KUBEADM_CONFIG_WHERE);
  const written = sync.yaml;
  if (written === undefined) return undefined;
  return { changes: sync.changes.join("; "), apply: () => writeClusterConfiguration(call, configMap, written) };
}

/**
 * [major, minor, patch] of an image tag read as KCP reads it (semver, tolerant: "v" prefix, "1.8" is 1.8.0,
 * pre-release and build ignored in comparisons, "_" for "+"); undefined for anything else.
 */
export function parseImageTag(tag: string): [number, number, number] | undefined {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-[0-9A-Za-z.-]+)?(?:[+_][0-9A-Za-z._-]+)?$/.exec(tag.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
}

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let index = 0; index < 3; index++) if (a[index] !== b[index]) return a[index] - b[index];
  return 0;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
