// clusterctl on the e2e stack: a second management cluster (a `clusterctl move` target), the inventory and labels
// `clusterctl init` would have written, and the real clusterctl (bin/clusterctl, built from the pinned cluster-api
// module) run as a harness process.
//
// Why not `clusterctl init` itself: it installs the providers' Deployments (nothing runs them here: no kubelet), and
// core's components carry webhook configurations and CRD conversion webhooks that point at those Deployments, so
// every Cluster create would then fail calling a webhook nobody serves. The stack installs the same CRDs without the
// webhooks (test/env/crds.ts) and runs the managers as processes; what init adds on top that clusterctl's other
// commands read is written here, as init writes it (cmd/clusterctl/client/repository/components.go,
// client/cluster/inventory.go): the `clusterctl.cluster.x-k8s.io` and `cluster.x-k8s.io/provider` labels on every
// provider's CRDs (move discovers kinds only through the first) and one inventory `Provider` per provider in its
// namespace (move checks the target has each source provider at the same or a newer version). `clusterctl move`
// needs no cert-manager: only init and upgrade install or check it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeConfig, V1CustomResourceDefinition } from "@kubernetes/client-node";
import { parse } from "yaml";
import {
  builtBinary,
  capiCRDs,
  capiModuleDir,
  installCRDs,
  kubeRequest,
  kubeRequestOk,
  pinnedVersions,
  quorumCRDs,
  repoRoot,
  startApiServer,
  startCapiManager,
  startProcess,
  statusMessage,
  type ManagedProcess,
  type ProcessExit,
} from "../../test/env/index.ts";
import { processProviderCRDs } from "../provider/crds.ts";
import type { ExtraManagement } from "./stack.ts";

const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const INVENTORY = "/apis/clusterctl.cluster.x-k8s.io/v1alpha3";
const CLUSTERCTL_LABEL = "clusterctl.cluster.x-k8s.io";
const PROVIDER_LABEL = "cluster.x-k8s.io/provider";

/** This repository's version: Quorum's, and the process provider's (it ships with it). */
export const QUORUM_VERSION = `v${(JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }).version}`;

interface InventoryEntry {
  /** clusterctl's manifest label: "cluster-api", "control-plane-quorum"... (the Provider object's name). */
  label: string;
  providerName: string;
  type: "CoreProvider" | "ControlPlaneProvider" | "InfrastructureProvider" | "BootstrapProvider";
  namespace: string;
  version: string;
  crds: string[];
}

/**
 * The providers of this stack as `clusterctl init --core cluster-api --control-plane quorum --infrastructure process
 * --bootstrap process` would record them. CABPK's CRDs are installed too (test/env/crds.ts's default) but its manager
 * does not run and nothing of its kinds exists here, so it is left out of the inventory, as if installed by hand.
 */
export function stackInventory(): InventoryEntry[] {
  const names = (crds: { metadata?: { name?: string } }[]) => crds.map((crd) => crd.metadata?.name ?? "");
  const processCRDs = names(processProviderCRDs());
  return [
    {
      label: "cluster-api",
      providerName: "cluster-api",
      type: "CoreProvider",
      namespace: "capi-system",
      version: pinnedVersions().capi,
      crds: names(capiCRDs(["core"])),
    },
    {
      label: "control-plane-quorum",
      providerName: "quorum",
      type: "ControlPlaneProvider",
      namespace: "quorum-system",
      version: QUORUM_VERSION,
      crds: names(quorumCRDs()),
    },
    {
      label: "infrastructure-process",
      providerName: "process",
      type: "InfrastructureProvider",
      namespace: "process-system",
      version: QUORUM_VERSION,
      crds: processCRDs.filter((name) => name.endsWith(".infrastructure.cluster.x-k8s.io")),
    },
    {
      label: "bootstrap-process",
      providerName: "process",
      type: "BootstrapProvider",
      namespace: "process-system",
      version: QUORUM_VERSION,
      crds: processCRDs.filter((name) => name.endsWith(".bootstrap.cluster.x-k8s.io")),
    },
  ];
}

/** Writes what `clusterctl init` leaves for clusterctl's other commands: its inventory CRD and objects, CRD labels. */
export async function writeClusterctlInventory(
  kubeConfig: KubeConfig,
  inventory: InventoryEntry[] = stackInventory(),
): Promise<void> {
  // The manifest clusterctl embeds and installs itself when it is missing (inventory.go EnsureCustomResourceDefinitions).
  const providerCRD = parse(
    readFileSync(join(capiModuleDir(), "cmd/clusterctl/config/manifest/clusterctl-api.yaml"), "utf8"),
  ) as V1CustomResourceDefinition;
  providerCRD.metadata = {
    ...providerCRD.metadata,
    labels: { ...providerCRD.metadata?.labels, [`${CLUSTERCTL_LABEL}/core`]: "inventory" },
  };
  await installCRDs(kubeConfig, { quorum: false, capi: [], extra: [providerCRD] });
  for (const entry of inventory) {
    const labels = { [CLUSTERCTL_LABEL]: "", [PROVIDER_LABEL]: entry.label };
    for (const crd of entry.crds)
      await kubeRequestOk(kubeConfig, `${CRDS}/${crd}`, { method: "PATCH", body: { metadata: { labels } } });
    const namespace = await kubeRequest(kubeConfig, "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: entry.namespace, labels } },
    });
    if (namespace.status !== 201 && namespace.status !== 409)
      throw new Error(`create Namespace ${entry.namespace}: HTTP ${namespace.status} ${statusMessage(namespace)}`);
    await kubeRequestOk(kubeConfig, `${INVENTORY}/namespaces/${entry.namespace}/providers`, {
      body: {
        apiVersion: "clusterctl.cluster.x-k8s.io/v1alpha3",
        kind: "Provider",
        metadata: {
          name: entry.label,
          namespace: entry.namespace,
          labels: { ...labels, [`${CLUSTERCTL_LABEL}/core`]: "inventory" },
        },
        providerName: entry.providerName,
        type: entry.type,
        version: entry.version,
      },
    });
  }
}

/**
 * A second management cluster like the stack's own: a kube-apiserver with CAPI core's, Quorum's and the process
 * provider's CRDs, clusterctl's inventory, and the real CAPI core manager. Quorum and the process provider are
 * pointed at it by the scenario.
 */
export async function startManagementCluster(): Promise<ExtraManagement & { capiLogFile: string }> {
  const apiServer = await startApiServer();
  try {
    await installCRDs(apiServer.kubeConfig, { extra: processProviderCRDs() });
    await writeClusterctlInventory(apiServer.kubeConfig);
    const capi = await startCapiManager(apiServer);
    return {
      kubeConfig: apiServer.kubeConfig,
      kubeconfigPath: apiServer.kubeconfigPath,
      capiLogFile: capi.logFile,
      pids: () => [apiServer.process.pid, capi.process.pid],
      stop: async () => {
        await capi.stop();
        await apiServer.stop();
      },
    };
  } catch (error) {
    await apiServer.stop();
    throw error;
  }
}

/** Runs a bash script under the harness; resolves with its output, rejects with the output's tail. */
export async function runScript(
  script: string,
  options: { dir: string; label: string; cwd?: string; env?: NodeJS.ProcessEnv },
): Promise<string> {
  const logFile = join(options.dir, `${options.label}.log`);
  const proc = startProcess({
    name: options.label,
    command: "bash",
    args: ["-euo", "pipefail", "-c", script],
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, ...options.env },
    logFile,
  });
  const exit = await exitOf(proc);
  if (exit.code !== 0)
    throw new Error(`${options.label} exited with ${exit.code ?? exit.signal}; its output:\n${proc.lastLogLines(40)}`);
  return readFileSync(logFile, "utf8");
}

/** The child does not hold the event loop open by itself (test/env/processes.ts): a timer does, until it exits. */
async function exitOf(proc: ManagedProcess): Promise<ProcessExit> {
  const keepAlive = setInterval(() => undefined, 1_000);
  try {
    return await proc.exited;
  } finally {
    clearInterval(keepAlive);
  }
}

/**
 * Runs bin/clusterctl under the harness (killed with the scenario however it ends) with its config and overrides
 * under `dir` and no look-up of newer releases online; resolves with its log, rejects with the log's tail.
 */
export async function runClusterctl(
  args: string[],
  dir: string,
  label: string,
  env: NodeJS.ProcessEnv = {},
): Promise<string> {
  const logFile = join(dir, `${label}.log`);
  const proc = startProcess({
    name: `clusterctl ${args[0]}`,
    command: builtBinary("clusterctl"),
    args,
    env: {
      ...process.env,
      HOME: dir,
      XDG_CONFIG_HOME: join(dir, "config"),
      CLUSTERCTL_DISABLE_VERSIONCHECK: "true",
      ...env,
    },
    logFile,
  });
  const exit = await exitOf(proc);
  const output = readFileSync(logFile, "utf8");
  if (exit.code !== 0)
    throw new Error(
      `clusterctl ${args.join(" ")} exited with ${exit.code ?? exit.signal}; its output:\n${proc.lastLogLines(40)}`,
    );
  return output;
}
