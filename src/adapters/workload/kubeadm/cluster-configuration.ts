// The ClusterConfiguration in the workload cluster's `kube-system/kubeadm-config` ConfigMap, as `kubeadm join
// --control-plane` reads it: a joining node renders its static pods (images, extra args, etcd) from this document, not
// from its own bootstrap data. So before a Machine of a new version or a new template joins, the document must say
// that version and carry the template's clusterConfiguration, as KCP's UpdateClusterConfiguration makes it (CAPI
// v1.14 controlplane/kubeadm/reconcilers/kubeadmcontrolplane/update.go): kubernetesVersion always; when the template
// defines a clusterConfiguration, imageRepository when it sets one, certificate validity and encryptionAlgorithm
// (dropped where it sets none, so kubeadm defaults them), and featureGates, apiServer, controllerManager, scheduler
// and etcd.local (or etcd.external) replaced whole (etcd.local keeps the dataDir kubeadm defaulted unless the template
// sets one). Everything else in the document (networking, controlPlaneEndpoint, clusterName, certificatesDir...)
// stays as kubeadm init wrote it, except `dns`, whose image the coredns step writes (syncDNSImage). Pure: YAML in, YAML
// and the list of changes out.
import jsonpatch from "fast-json-patch";
import { parseAsGo, stringifyForGo } from "../../go-yaml.ts";
import { minorOf } from "../../../api/version.ts";

/** The ConfigMap kubeadm init uploads the document to, and every control-plane join reads. */
export const KUBEADM_CONFIG = { namespace: "kube-system", name: "kubeadm-config" } as const;
const DEFAULT_WHERE = `ConfigMap ${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name}`;
/** The data key kubeadm keeps the document under. */
export const CLUSTER_CONFIGURATION_KEY = "ClusterConfiguration";
/** kubeadm's config API since Kubernetes 1.31 (kubeadm init uploads the document in it). */
export const KUBEADM_API_VERSION = "kubeadm.k8s.io/v1beta4";

/** kubeadm v1beta4's defaults for what a template may leave unset (cmd/kubeadm/app/apis/kubeadm/v1beta4). */
const DEFAULT_CERTIFICATE_VALIDITY = "8760h0m0s";
const DEFAULT_ENCRYPTION_ALGORITHM = "RSA-2048";

/** The kubelet local-mode gate exists from 1.31 and is GA (and gone) from 1.36; KCP turns it on in between. */
const KUBELET_LOCAL_MODE_GATE = "ControlPlaneKubeletLocalMode";

type Json = Record<string, unknown>;

export interface ClusterConfigurationSync {
  /** The document to write, or undefined when the current one already says everything. */
  yaml?: string;
  /** What differs, as JSON pointers with the value wanted (`/kubernetesVersion: v1.36.3 → v1.37.2`). */
  changes: string[];
}

/** Thrown for a document Quorum cannot safely rewrite: names the ConfigMap and what to do. */
export class ClusterConfigurationError extends Error {
  override readonly name = "ClusterConfigurationError";
}

/**
 * The kubeadm-config ClusterConfiguration `current` brought to `version` and the template's `clusterConfiguration`
 * (spec.template.spec.clusterConfiguration of a KubeadmConfigTemplate, bootstrap.cluster.x-k8s.io v1beta2 or v1beta1).
 */
export function syncClusterConfiguration(
  current: string,
  template: unknown,
  version: string,
  where = DEFAULT_WHERE,
): ClusterConfigurationSync {
  return rewrite(current, where, (wanted) => {
    wanted.kubernetesVersion = version;
    if (isObject(template)) applyTemplate(wanted, template, version);
  });
}

/** What a KubeadmConfigTemplate's clusterConfiguration says of CoreDNS's image in `dns` (empty strings are unset). */
export interface DNSImage {
  imageRepository?: string;
  imageTag?: string;
}

/** The `dns` image fields of a template's clusterConfiguration, as CABPK reads them: an empty string is unset. */
export function dnsImageOf(clusterConfiguration: unknown): DNSImage {
  const dns = isObject(clusterConfiguration) && isObject(clusterConfiguration.dns) ? clusterConfiguration.dns : {};
  const { imageRepository, imageTag } = dns;
  return {
    ...(typeof imageRepository === "string" && imageRepository !== "" ? { imageRepository } : {}),
    ...(typeof imageTag === "string" && imageTag !== "" ? { imageTag } : {}),
  };
}

/**
 * The document's `dns` brought to the template's, as KCP writes it when it moves CoreDNS (updateCoreDNSImageInfoIn
 * KubeadmConfigMap): `kubeadm join --control-plane` pre-pulls the CoreDNS image this names, so a pin left behind in a
 * registry since retired fails every later join's preflight.
 */
export function syncDNSImage(current: string, dns: DNSImage, where = DEFAULT_WHERE): ClusterConfigurationSync {
  return rewrite(current, where, (wanted) => {
    const section = isObject(wanted.dns) ? { ...wanted.dns } : {};
    setOrDelete(section, "imageRepository", dns.imageRepository);
    setOrDelete(section, "imageTag", dns.imageTag);
    wanted.dns = section;
  });
}

/** `current` parsed as kubeadm reads it, changed by `change`, and written back when that changed anything. */
function rewrite(current: string, where: string, change: (wanted: Json) => void): ClusterConfigurationSync {
  let document: unknown;
  try {
    document = parseAsGo(current);
  } catch (error) {
    throw new ClusterConfigurationError(
      `${where}: ${CLUSTER_CONFIGURATION_KEY} is not YAML (${(error instanceof Error ? error.message : String(error)).split("\n")[0]}); kubeadm joins read it, so restore it from a control-plane node (kubeadm init phase upload-config kubeadm)`,
    );
  }
  if (!isObject(document)) {
    throw new ClusterConfigurationError(
      `${where}: ${CLUSTER_CONFIGURATION_KEY} is not a YAML mapping; restore it from a control-plane node (kubeadm init phase upload-config kubeadm)`,
    );
  }
  if (document.apiVersion !== KUBEADM_API_VERSION) {
    throw new ClusterConfigurationError(
      `${where}: ${CLUSTER_CONFIGURATION_KEY} is ${String(document.apiVersion)}, and Quorum writes only ${KUBEADM_API_VERSION} (what kubeadm for Kubernetes 1.31 and later uploads); upgrade the cluster with kubeadm to 1.31 first`,
    );
  }
  const wanted = structuredClone(document);
  change(wanted);
  // An empty mapping and an absent one mean the same to kubeadm (`apiServer: {}`): neither is a difference.
  const before = prune(document);
  const after = prune(wanted);
  const changes = jsonpatch
    .compare(before, after)
    .map((op) => `${op.path}: ${show(valueAt(document, op.path))} → ${"value" in op ? show(op.value) : "(removed)"}`);
  if (changes.length === 0) return { changes };
  return { yaml: stringifyForGo(after), changes };
}

function applyTemplate(document: Json, template: Json, version: string): void {
  if (typeof template.imageRepository === "string" && template.imageRepository !== "")
    document.imageRepository = template.imageRepository;
  setOrDelete(document, "featureGates", featureGates(template.featureGates, version));
  for (const component of ["apiServer", "controllerManager", "scheduler"] as const)
    document[component] = upstreamComponent(template[component]);
  // What the template leaves unset is dropped, as KCP writes it, and kubeadm defaults it: a validity or algorithm an
  // earlier template set does not outlive it. kubeadm's own default, as init uploads it, is no change.
  const days = template.certificateValidityPeriodDays;
  setOrKeepDefault(
    document,
    "certificateValidityPeriod",
    typeof days === "number" && days > 0 ? `${days * 24}h0m0s` : undefined,
    DEFAULT_CERTIFICATE_VALIDITY,
  );
  const algorithm = template.encryptionAlgorithm;
  setOrKeepDefault(
    document,
    "encryptionAlgorithm",
    typeof algorithm === "string" && algorithm !== "" ? algorithm : undefined,
    DEFAULT_ENCRYPTION_ALGORITHM,
  );
  const etcd = isObject(template.etcd) ? template.etcd : {};
  const current = isObject(document.etcd) ? document.etcd : {};
  // Local and external are mutually exclusive and, once set, never switched: the one the template names wins.
  if (isObject(etcd.external)) {
    document.etcd = { external: structuredClone(etcd.external) };
  } else {
    const local = upstreamComponent(etcd.local);
    const dataDir = isObject(current.local) ? current.local.dataDir : undefined;
    if (local.dataDir === undefined && dataDir !== undefined) local.dataDir = dataDir;
    document.etcd = { local };
  }
}

/** The template's gates, with the kubelet local mode KCP adds for 1.31 <= version < 1.36 unless the user set it. */
function featureGates(gates: unknown, version: string): Json | undefined {
  const result: Json = isObject(gates) ? { ...gates } : {};
  const minor = minorOf(version);
  if (minor !== undefined && minor >= 31 && minor < 36 && !(KUBELET_LOCAL_MODE_GATE in result))
    result[KUBELET_LOCAL_MODE_GATE] = true;
  return Object.keys(result).length > 0 ? result : undefined;
}

/**
 * A control-plane component (or etcd.local) of the template in kubeadm v1beta4's shape. CABPK v1beta2 and kubeadm
 * v1beta4 share it (extraArgs a list of {name, value}); a v1beta1 template's extraArgs map becomes that list.
 */
function upstreamComponent(value: unknown): Json {
  if (!isObject(value)) return {};
  const component = structuredClone(value);
  if (isObject(component.extraArgs)) {
    component.extraArgs = Object.entries(component.extraArgs)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, argument]) => ({ name, value: String(argument) }));
  }
  return component;
}

/** The document without empty mappings, at any depth. */
function prune(value: Json): Json {
  const result: Json = {};
  for (const [key, field] of Object.entries(value)) {
    if (field === undefined || field === null) continue;
    if (isObject(field)) {
      const inner = prune(field);
      if (Object.keys(inner).length > 0) result[key] = inner;
    } else result[key] = field;
  }
  return result;
}

/** `value` when set; else the field goes, unless it holds kubeadm's default (what kubeadm would fill in anyway). */
function setOrKeepDefault(document: Json, key: string, value: string | undefined, kubeadmDefault: string): void {
  if (value !== undefined) document[key] = value;
  else if (document[key] !== kubeadmDefault) delete document[key];
}

function setOrDelete(document: Json, key: string, value: unknown): void {
  if (value === undefined) delete document[key];
  else document[key] = value;
}

function valueAt(document: unknown, pointer: string): unknown {
  let node: unknown = document;
  for (const part of pointer.split("/").slice(1)) {
    const key = part.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isObject(node)) node = node[key];
    else return undefined;
  }
  return node;
}

function show(value: unknown): string {
  return value === undefined ? "(absent)" : JSON.stringify(value);
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
