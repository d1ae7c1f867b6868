// `clusterctl upgrade apply` of Quorum on a management cluster initialised with an earlier release: a local clusterctl
// repository holds two Quorum versions, each built by hack/release-manifests.sh — the earlier one from the source of
// commit OLD_COMMIT (git archive), the later one from this tree — and CAPI core's components and metadata, rendered
// from the pinned cluster-api module as CAPI's release does. The real clusterctl installs the earlier one with
// `clusterctl init --control-plane quorum:<old>` (its CRDs, RBAC and Deployment), a cluster is created and converges
// to 3 replicas under the earlier Quorum, then `clusterctl upgrade apply --control-plane quorum-system/quorum:<new>`
// replaces the components (CRDs updated in place, the rest deleted and created again) and the cluster scales 3 → 5 → 3
// under the new Quorum, replacing none of the Machines it had.
// What stands in:
//  - No kubelet runs the Deployment clusterctl installs, so Quorum runs as a process of the version the inventory says
//    is installed: the earlier one's source before the upgrade, this tree's after. clusterctl's upgrade first scales
//    the old Deployment to 0 (upgrader.go scaleDownProvider); the scenario stops the old process at that point, right
//    before it runs clusterctl, and starts the new one once clusterctl has recorded the new version.
//  - cert-manager: `clusterctl init` refuses to install a provider until cert-manager answers (cert_manager.go
//    EnsureInstalled creates a test Issuer and Certificate); with `cert-manager: externallyProvisioned` in the
//    config, its two CRDs stand in, since nothing here reconciles them. `upgrade apply` (upgrade.go ApplyUpgrade →
//    EnsureLatestVersion) upgrades cert-manager only when clusterctl installed it (objects labelled
//    clusterctl.cluster.x-k8s.io/core=cert-manager); an externally provisioned one is skipped, as for a user who
//    runs their own cert-manager.
//  - CAPI core is already installed the stack's way (CRDs without webhooks, the manager as a process; see
//    e2e/lib/clusterctl.ts) and recorded in the inventory, so init installs only Quorum.
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { API_VERSION, PRE_TERMINATE_HOOK } from "../../src/api/constants.ts";
import {
  capiModuleDir,
  certManagerStandInCRDs,
  kubeRequestOk,
  makeTempDir,
  pinnedVersions,
  repoRoot,
} from "../../test/env/index.ts";
import { kubectlBinary } from "../../test/unit/config/kustomize.ts";
import {
  QUORUM_VERSION,
  runClusterctl,
  runScript,
  stackInventory,
  writeClusterctlInventory,
} from "../lib/clusterctl.ts";
import type { E2EStack } from "../lib/stack.ts";
import type { Scenario } from "../lib/scenario.ts";
import type { ScenarioDefinition } from "./types.ts";
import { VERSION } from "./types.ts";

/**
 * The earlier release: the merge of the v1beta2 field layout (issue 15, item 1), before --watch-filter's Machine
 * labels, the short control-plane-name label and the paused gate. Its CRDs have the schema this tree has.
 */
export const OLD_COMMIT = "a3e87f3";
const OLD_VERSION = QUORUM_VERSION;
/** The next patch release in the same series, so metadata.yaml's release series covers both. */
const NEW_VERSION = QUORUM_VERSION.replace(/\.(\d+)$/, (_match, patch: string) => `.${Number(patch) + 1}`);

/** The earlier release's source and the local repository; returns the clusterctl config file. */
async function buildRepository(dir: string): Promise<{ config: string; oldSource: string }> {
  const oldSource = join(dir, "quorum-old");
  mkdirSync(oldSource, { recursive: true });
  await runScript(`git -C "${repoRoot}" archive ${OLD_COMMIT} | tar -x -C "${oldSource}"`, {
    dir,
    label: "git-archive",
  });
  // The earlier release's dependencies are this tree's (package-lock.json is unchanged since OLD_COMMIT).
  symlinkSync(join(repoRoot, "node_modules"), join(oldSource, "node_modules"));
  const repository = join(dir, "repository");
  const coreDir = join(repository, "cluster-api", pinnedVersions().capi);
  mkdirSync(coreDir, { recursive: true });
  await runScript(
    `"${kubectlBinary()}" kustomize "${join(capiModuleDir(), "core/config/default")}" > core-components.yaml`,
    {
      dir,
      label: "core-components",
      cwd: coreDir,
    },
  );
  copyFileSync(join(capiModuleDir(), "metadata.yaml"), join(coreDir, "metadata.yaml"));
  for (const [version, source] of [
    [OLD_VERSION, oldSource],
    [NEW_VERSION, repoRoot],
  ] as const) {
    await runScript("bash hack/release-manifests.sh", {
      dir,
      label: `release-manifests-${version}`,
      cwd: source,
      env: { OUT_DIR: join(repository, "control-plane-quorum", version), VERSION: version, KUBECTL: kubectlBinary() },
    });
  }
  const config = join(dir, "clusterctl.yaml");
  writeFileSync(
    config,
    stringify({
      providers: [
        { name: "cluster-api", type: "CoreProvider", url: `file://${coreDir}/core-components.yaml` },
        {
          name: "quorum",
          type: "ControlPlaneProvider",
          url: `file://${join(repository, "control-plane-quorum", NEW_VERSION)}/control-plane-components.yaml`,
        },
      ],
      "cert-manager": { externallyProvisioned: "true" },
    }),
  );
  return { config, oldSource };
}

async function inventoryVersion(stack: E2EStack): Promise<string | undefined> {
  const list = await kubeRequestOk<{ items: { providerName: string; version: string }[] }>(
    stack.kubeConfig,
    "/apis/clusterctl.cluster.x-k8s.io/v1alpha3/namespaces/quorum-system/providers",
  );
  return list.items.find((item) => item.providerName === "quorum")?.version;
}

async function machineIdentities(s: Scenario): Promise<string> {
  return (await s.machines())
    .map((machine) => `${machine.metadata.name}/${machine.metadata.uid}`)
    .sort()
    .join(", ");
}

export const clusterctlUpgrade: ScenarioDefinition = {
  name: "clusterctl-upgrade",
  title: `clusterctl upgrade apply of Quorum ${OLD_VERSION} (commit ${OLD_COMMIT}) → ${NEW_VERSION} (this tree); then 3 → 5 → 3`,
  async run(s) {
    const dir = makeTempDir("clusterctl-upgrade");
    s.log(
      `building the local clusterctl repository (Quorum ${OLD_VERSION} from ${OLD_COMMIT}, ${NEW_VERSION} from this tree)`,
    );
    const { config, oldSource } = await buildRepository(dir);
    const clusterctl = (args: string[], label: string) =>
      runClusterctl([...args, "--config", config, "--kubeconfig", s.stack.kubeconfigPath, "-v", "2"], dir, label);
    await s.setup(
      { replicas: 3, version: VERSION },
      {
        quorumCRDs: false,
        startQuorum: async (stack) => {
          await writeClusterctlInventory(
            stack.kubeConfig,
            stackInventory().filter((entry) => entry.label === "cluster-api"),
          );
          for (const crd of certManagerStandInCRDs())
            await kubeRequestOk(stack.kubeConfig, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
              body: crd,
            });
          await clusterctl(["init", "--control-plane", `quorum:${OLD_VERSION}`], "clusterctl-init");
          await stack.startQuorum({ label: `quorum-${OLD_VERSION}`, source: oldSource });
        },
      },
    );
    s.check((await inventoryVersion(s.stack)) === OLD_VERSION, `clusterctl init recorded Quorum ${OLD_VERSION}`);
    const before = await machineIdentities(s);

    await s.operation(
      `clusterctl upgrade apply ${OLD_VERSION}→${NEW_VERSION}`,
      async () => {
        // clusterctl scales the old Deployment to 0 first: the old process goes at that point.
        await s.stack.quorums.find((quorum) => quorum.label === `quorum-${OLD_VERSION}`)?.process.stop(5_000);
        await clusterctl(
          ["upgrade", "apply", "--control-plane", `quorum-system/quorum:${NEW_VERSION}`],
          "clusterctl-upgrade-apply",
        );
        s.check(
          (await inventoryVersion(s.stack)) === NEW_VERSION,
          `clusterctl upgrade apply recorded Quorum ${NEW_VERSION}`,
        );
        await s.stack.startQuorum({ label: `quorum-${NEW_VERSION}` });
      },
      { replicas: 3 },
    );
    const crd = await kubeRequestOk<{ metadata: { labels?: Record<string, string> } }>(
      s.stack.kubeConfig,
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/quorumcontrolplanes.${API_VERSION.split("/")[0]}`,
    );
    s.check(
      crd.metadata.labels?.["cluster.x-k8s.io/provider"] === "control-plane-quorum",
      "the QuorumControlPlane CRD is still clusterctl's, labelled control-plane-quorum",
    );
    const after = await machineIdentities(s);
    s.check(after === before, `no Machine was replaced by the upgrade (${after})`);
    const hooks = (await s.machines()).filter(
      (machine) => machine.metadata.annotations?.[PRE_TERMINATE_HOOK] === undefined,
    );
    s.check(hooks.length === 0, "every Machine still carries Quorum's pre-terminate hook");

    await s.operation("scale 3→5 after the upgrade", () => s.patch({ replicas: 5 }), { replicas: 5 });
    await s.operation("scale 5→3 after the upgrade", () => s.patch({ replicas: 3 }), { replicas: 3 });
    return 3;
  },
};
