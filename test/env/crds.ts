// Installs Quorum's CRDs (config/crd/bases) and the real CAPI CRDs, read from the sigs.k8s.io/cluster-api
// module in the Go module cache (downloaded by `make deps`), never from copies in this repo.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig, V1CustomResourceDefinition } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { kubeRequest, kubeRequestOk, statusMessage } from "./kube.ts";
import { pinnedVersions, repoRoot } from "./tools.ts";

/** Folders of the cluster-api module whose config/crd/bases are installed by default. */
export type CapiCrdSet = "core" | "bootstrap/kubeadm" | "controlplane/kubeadm";

export interface InstallCRDsOptions {
  /** Install Quorum's CRDs from config/crd/bases (default true). */
  quorum?: boolean;
  /** CAPI CRD sets (default core and the kubeadm bootstrap provider, whose config templates Quorum clones). */
  capi?: CapiCrdSet[];
  /** Extra CRDs, e.g. test infrastructure kinds. */
  extra?: V1CustomResourceDefinition[];
  timeoutMs?: number;
}

/** The directory of the pinned cluster-api module in the Go module cache. */
export function capiModuleDir(): string {
  const { capi } = pinnedVersions();
  let modCache: string;
  try {
    modCache = execFileSync("go", ["env", "GOMODCACHE"], { encoding: "utf8" }).trim();
  } catch (error) {
    throw new Error(
      `cannot run \`go env GOMODCACHE\` to find the CAPI CRDs (${(error as Error).message}): install Go, then run make deps`,
      { cause: error },
    );
  }
  const dir = join(modCache, `sigs.k8s.io/cluster-api@${capi}`);
  if (!existsSync(dir)) throw new Error(`${dir} does not exist: run \`make deps\` (it downloads cluster-api ${capi})`);
  return dir;
}

/** Quorum's CRDs as the repo defines them (none while config/crd/bases does not exist). */
export function quorumCRDs(): V1CustomResourceDefinition[] {
  const dir = join(repoRoot, "config/crd/bases");
  return existsSync(dir) ? readCRDDir(dir) : [];
}

/**
 * CAPI's CRDs from the module as its config/crd kustomization builds them, changed in one way: only the storage
 * version (v1beta2) is served. The bases serve v1beta1 too, which without CAPI's conversion webhook would convert
 * with strategy None (apiVersion swapped, shape unchanged) and hand out wrongly shaped objects; the conversion
 * stanza is dropped for the same reason (the module's kustomize patches would add a webhook that is not running).
 * The kustomization's labels are kept: a provider's CRDs (KubeadmConfig) carry their contract labels only there, and
 * without them CAPI's Machine controller cannot resolve a bootstrap configRef ("cannot find any versions matching
 * contract versions").
 */
export function capiCRDs(sets: CapiCrdSet[] = ["core", "bootstrap/kubeadm"]): V1CustomResourceDefinition[] {
  const moduleDir = capiModuleDir();
  return sets.flatMap((set) => {
    const crdDir = join(moduleDir, set, "config/crd");
    const labels = kustomizationLabels(join(crdDir, "kustomization.yaml"));
    return readCRDDir(join(crdDir, "bases")).map((crd) =>
      serveStorageVersionOnly({
        ...crd,
        metadata: { ...crd.metadata, labels: { ...crd.metadata?.labels, ...labels } },
      }),
    );
  });
}

/** The labels a kustomization.yaml adds to every resource (`labels[].pairs`, or the older `commonLabels`). */
function kustomizationLabels(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  const kustomization = (parseAllDocuments(readFileSync(path, "utf8"))[0]?.toJS() ?? {}) as {
    labels?: { pairs?: Record<string, string> }[];
    commonLabels?: Record<string, string>;
  };
  return Object.assign({}, kustomization.commonLabels, ...(kustomization.labels ?? []).map((entry) => entry.pairs));
}

export function serveStorageVersionOnly(crd: V1CustomResourceDefinition): V1CustomResourceDefinition {
  const copy = structuredClone(crd);
  copy.spec.versions = copy.spec.versions.map((version) => ({ ...version, served: version.storage }));
  delete copy.spec.conversion;
  return copy;
}

/** Creates (or replaces) the CRDs and waits until each is Established. Returns the CRD names. */
export async function installCRDs(kubeConfig: KubeConfig, options: InstallCRDsOptions = {}): Promise<string[]> {
  const crds = [...((options.quorum ?? true) ? quorumCRDs() : []), ...capiCRDs(options.capi), ...(options.extra ?? [])];
  for (const crd of crds) await createOrReplace(kubeConfig, crd);
  const names = crds.map((crd) => crd.metadata!.name!);
  await waitForEstablished(kubeConfig, names, options.timeoutMs ?? 60_000);
  return names;
}

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

async function createOrReplace(kubeConfig: KubeConfig, crd: V1CustomResourceDefinition): Promise<void> {
  const name = crd.metadata!.name!;
  const created = await kubeRequest(kubeConfig, crdPath, { method: "POST", body: crd });
  if (created.status === 201) return;
  if (created.status !== 409)
    throw new Error(`create CRD ${name} failed with HTTP ${created.status}: ${statusMessage(created)}`);
  const existing = await kubeRequestOk<V1CustomResourceDefinition>(kubeConfig, `${crdPath}/${name}`);
  const body = { ...crd, metadata: { ...crd.metadata, resourceVersion: existing.metadata?.resourceVersion } };
  await kubeRequestOk(kubeConfig, `${crdPath}/${name}`, { method: "PUT", body });
}

async function waitForEstablished(kubeConfig: KubeConfig, names: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = [...names];
  let lastState = "";
  for (;;) {
    const still: string[] = [];
    for (const name of pending) {
      const crd = await kubeRequestOk<V1CustomResourceDefinition>(kubeConfig, `${crdPath}/${name}`);
      const conditions = crd.status?.conditions ?? [];
      const established = conditions.find((c) => c.type === "Established")?.status === "True";
      const namesAccepted = conditions.find((c) => c.type === "NamesAccepted");
      if (namesAccepted?.status === "False") {
        throw new Error(
          `CRD ${name}: names not accepted (${namesAccepted.message}): another CRD already uses its names`,
        );
      }
      if (!established) {
        still.push(name);
        lastState = `${name}: ${conditions.map((c) => `${c.type}=${c.status} ${c.message ?? ""}`).join("; ") || "no conditions yet"}`;
      }
    }
    pending = still;
    if (pending.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `CRDs not Established within ${Math.round(timeoutMs / 1000)} s: ${pending.join(", ")} (last: ${lastState}); ` +
          "check the kube-apiserver log for schema errors",
      );
    }
    await sleep(200);
  }
}

function readCRDDir(dir: string): V1CustomResourceDefinition[] {
  if (!existsSync(dir)) throw new Error(`CRD folder ${dir} does not exist`);
  return readdirSync(dir)
    .filter((file) => file.endsWith(".yaml") || file.endsWith(".yml"))
    .sort()
    .flatMap((file) => {
      const path = join(dir, file);
      return parseAllDocuments(readFileSync(path, "utf8"))
        .map((doc) => {
          if (doc.errors.length > 0) throw new Error(`${path}: invalid YAML: ${doc.errors[0].message}`);
          return doc.toJS() as V1CustomResourceDefinition | null;
        })
        .filter((doc): doc is V1CustomResourceDefinition => doc !== null && doc.kind === "CustomResourceDefinition");
    });
}

export interface TestCRDOptions {
  /** e.g. "infrastructure.quorum.test" */
  group: string;
  /** e.g. "TestInfraCluster" */
  kind: string;
  /** Served and stored version (default v1beta1). */
  version?: string;
  /** CAPI contract labels, e.g. { "cluster.x-k8s.io/v1beta2": "v1beta1" } (default: v1beta2 contract for `version`). */
  labels?: Record<string, string>;
}

/**
 * A namespaced CRD with free-form spec and status and a status subresource: a stand-in for a provider's kind
 * that the CAPI core controllers look up through its contract label.
 */
export function testCRD(options: TestCRDOptions): V1CustomResourceDefinition {
  const version = options.version ?? "v1beta1";
  const plural = `${options.kind.toLowerCase()}s`;
  const freeForm = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${plural}.${options.group}`,
      labels: options.labels ?? { "cluster.x-k8s.io/v1beta2": version },
    },
    spec: {
      group: options.group,
      scope: "Namespaced",
      names: { kind: options.kind, listKind: `${options.kind}List`, plural, singular: options.kind.toLowerCase() },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: "object", properties: { spec: freeForm, status: freeForm } } },
        },
      ],
    },
  } as V1CustomResourceDefinition;
}

/**
 * cert-manager's Issuer and Certificate CRDs, nothing else: what `clusterctl init` needs of cert-manager when the
 * config says `cert-manager: externallyProvisioned` (its readiness check creates a test Issuer and Certificate,
 * cmd/clusterctl/client/cluster/cert_manager.go waitForAPIReady). Nothing reconciles them.
 */
export function certManagerStandInCRDs(): V1CustomResourceDefinition[] {
  const anything = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  return [
    ["Issuer", "issuers"],
    ["Certificate", "certificates"],
  ].map(
    ([kind, plural]) =>
      ({
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: `${plural}.cert-manager.io` },
        spec: {
          group: "cert-manager.io",
          scope: "Namespaced",
          names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
          versions: [
            {
              name: "v1",
              served: true,
              storage: true,
              schema: { openAPIV3Schema: anything },
            },
          ],
        },
      }) as V1CustomResourceDefinition,
  );
}
