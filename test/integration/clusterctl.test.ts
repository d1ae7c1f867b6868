// Installing Quorum the way CAPI users do: the real clusterctl (built from the pinned cluster-api module)
// runs `clusterctl init --control-plane quorum` against a real kube-apiserver, from a local repository that
// holds what `make release-manifests` produces, then `clusterctl upgrade plan` lists the provider.
//
// clusterctl always installs CAPI's core provider first, so the local repository also holds core's components,
// rendered from the cluster-api module's own config/default (as CAPI's release does). cert-manager, which
// clusterctl requires for core's webhooks, is stood in for by its two CRDs that clusterctl's readiness check
// creates objects of; nothing here runs controllers, so none of the installed Deployments start.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { stringify } from "yaml";
import {
  builtBinary,
  capiModuleDir,
  certManagerStandInCRDs,
  kubeRequest,
  kubeRequestOk,
  makeTempDir,
  pinnedVersions,
  startApiServer,
  type ApiServer,
} from "../env/index.ts";
import { kubectlBinary, parseManifests, repoRoot } from "../unit/config/kustomize.ts";

const run = promisify(execFile);
const QUORUM_VERSION = `v${(JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }).version}`;
/** A later patch release in the same repository, so `clusterctl upgrade plan` has somewhere to go. */
const NEXT_VERSION = QUORUM_VERSION.replace(/\.(\d+)$/, (_match, patch: string) => `.${Number(patch) + 1}`);

describe("clusterctl", () => {
  let apiServer: ApiServer;
  let dir: string;
  let configFile: string;
  let env: NodeJS.ProcessEnv;
  let clusterctl: string;

  const clusterctlRun = async (args: string[], extraEnv: NodeJS.ProcessEnv = {}) => {
    try {
      return await run(
        clusterctl,
        [...args, "--config", configFile, "--kubeconfig", apiServer.kubeconfigPath, "-v", "2"],
        { env: { ...env, ...extraEnv }, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
      );
    } catch (error) {
      const failure = error as Error & { stdout?: string; stderr?: string };
      throw new Error(
        `clusterctl ${args.join(" ")} failed: ${failure.message}\nstdout:\n${failure.stdout}\nstderr:\n${failure.stderr}`,
        { cause: error },
      );
    }
  };

  before(async () => {
    clusterctl = builtBinary("clusterctl");
    dir = makeTempDir("clusterctl");
    const repository = join(dir, "repository");
    const { capi } = pinnedVersions();

    // Core: what CAPI's release ships as core-components.yaml, rendered from the module.
    const coreDir = join(repository, "cluster-api", capi);
    mkdirSync(coreDir, { recursive: true });
    const moduleDir = capiModuleDir();
    const core = await run(kubectlBinary(), ["kustomize", join(moduleDir, "core/config/default")], {
      maxBuffer: 64 * 1024 * 1024,
    });
    writeFileSync(join(coreDir, "core-components.yaml"), core.stdout);
    copyFileSync(join(moduleDir, "metadata.yaml"), join(coreDir, "metadata.yaml"));

    // Quorum: exactly what `make release-manifests` writes, for this version and the next.
    for (const version of [QUORUM_VERSION, NEXT_VERSION]) {
      await run("bash", [join(repoRoot, "hack/release-manifests.sh")], {
        env: {
          ...process.env,
          OUT_DIR: join(repository, "control-plane-quorum", version),
          VERSION: version,
          KUBECTL: kubectlBinary(),
        },
      });
    }

    configFile = join(dir, "clusterctl.yaml");
    writeFileSync(
      configFile,
      stringify({
        providers: [
          { name: "cluster-api", type: "CoreProvider", url: `file://${coreDir}/core-components.yaml` },
          {
            name: "quorum",
            type: "ControlPlaneProvider",
            url: `file://${join(repository, "control-plane-quorum", NEXT_VERSION)}/control-plane-components.yaml`,
          },
        ],
        "cert-manager": { externallyProvisioned: "true" },
      }),
    );
    // clusterctl keeps its config and overrides under $XDG_CONFIG_HOME and would look for newer releases online.
    env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, "config"), CLUSTERCTL_DISABLE_VERSIONCHECK: "true" };

    apiServer = await startApiServer();
    for (const crd of certManagerStandInCRDs()) {
      await kubeRequestOk(apiServer.kubeConfig, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        method: "POST",
        body: crd,
      });
    }
  });

  after(async () => {
    await apiServer?.stop();
  });

  test("clusterctl init --control-plane quorum installs Quorum from the local repository with its variables applied", async () => {
    await clusterctlRun(
      [
        "init",
        "--core",
        `cluster-api:${pinnedVersions().capi}`,
        "--control-plane",
        `quorum:${QUORUM_VERSION}`,
        "--bootstrap",
        "-",
      ],
      { QUORUM_LOG_LEVEL: "debug" },
    );

    const kc = apiServer.kubeConfig;
    const inventory = await kubeRequestOk<{
      items: { metadata: { name: string; namespace: string }; providerName: string; type: string; version: string }[];
    }>(kc, "/apis/clusterctl.cluster.x-k8s.io/v1alpha3/providers");
    const quorum = inventory.items.find((item) => item.providerName === "quorum");
    assert.ok(
      quorum,
      `clusterctl's inventory lists quorum: ${JSON.stringify(inventory.items.map((item) => item.metadata.name))}`,
    );
    assert.equal(quorum.type, "ControlPlaneProvider");
    assert.equal(quorum.version, QUORUM_VERSION);
    assert.equal(quorum.metadata.namespace, "quorum-system");

    for (const crd of [
      "quorumcontrolplanes.controlplane.cluster.x-k8s.io",
      "quorumcontrolplanetemplates.controlplane.cluster.x-k8s.io",
    ]) {
      const object = await kubeRequestOk<{ metadata: { labels: Record<string, string> } }>(
        kc,
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`,
      );
      assert.equal(
        object.metadata.labels["cluster.x-k8s.io/provider"],
        "control-plane-quorum",
        `${crd} carries the provider label`,
      );
    }
    for (const role of ["quorum-manager-role", "quorum-aggregated-manager-role", "quorum-capi-access-role"]) {
      const response = await kubeRequest(kc, `/apis/rbac.authorization.k8s.io/v1/clusterroles/${role}`);
      assert.equal(response.status, 200, `ClusterRole ${role} exists`);
    }
    const deployment = await kubeRequestOk<{
      spec: { template: { spec: { containers: { name: string; image: string; args: string[] }[] } } };
    }>(kc, "/apis/apps/v1/namespaces/quorum-system/deployments/quorum-controller-manager");
    const manager = deployment.spec.template.spec.containers.find((container) => container.name === "manager");
    assert.ok(manager);
    assert.equal(
      manager.image,
      `ghcr.io/quorum-capi/quorum-controller:${QUORUM_VERSION}`,
      "the image variable took its default",
    );
    assert.ok(
      manager.args.includes("--log-level=debug"),
      `QUORUM_LOG_LEVEL reached the args: ${manager.args.join(" ")}`,
    );
    assert.ok(manager.args.includes("--log-format=json"), "an unset variable took its default");
  });

  test("clusterctl upgrade plan lists Quorum with its contract, current version and the next one", async () => {
    const { stdout } = await clusterctlRun(["upgrade", "plan"]);
    const line = stdout.split("\n").find((text) => /\bcontrol-plane-quorum\b/.test(text));
    assert.ok(line, `no control-plane-quorum line in:\n${stdout}`);
    assert.match(line, /quorum-system/);
    assert.match(
      line,
      new RegExp(
        `ControlPlaneProvider\\s+${QUORUM_VERSION.replace(/\./g, "\\.")}\\s+${NEXT_VERSION.replace(/\./g, "\\.")}`,
      ),
    );
    assert.match(stdout, /v1beta2/, "the plan is for the v1beta2 contract");
  });

  test("the installed objects are the components file's objects, each labelled for clusterctl", async () => {
    const components = parseManifests(
      readFileSync(
        join(dir, "repository/control-plane-quorum", QUORUM_VERSION, "control-plane-components.yaml"),
        "utf8",
      ),
      "components",
    );
    const kc = apiServer.kubeConfig;
    const paths: Record<string, (name: string, namespace?: string) => string> = {
      Namespace: (name) => `/api/v1/namespaces/${name}`,
      CustomResourceDefinition: (name) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
      ServiceAccount: (name, namespace) => `/api/v1/namespaces/${namespace}/serviceaccounts/${name}`,
      ClusterRole: (name) => `/apis/rbac.authorization.k8s.io/v1/clusterroles/${name}`,
      ClusterRoleBinding: (name) => `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${name}`,
      Role: (name, namespace) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles/${name}`,
      RoleBinding: (name, namespace) =>
        `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings/${name}`,
      Deployment: (name, namespace) => `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
    };
    for (const object of components) {
      const path = paths[object.kind];
      assert.ok(path, `the test knows where ${object.kind} lives`);
      const live = await kubeRequestOk<{ metadata: { labels?: Record<string, string> } }>(
        kc,
        path(object.metadata.name, object.metadata.namespace),
      );
      assert.equal(
        live.metadata.labels?.["cluster.x-k8s.io/provider"],
        "control-plane-quorum",
        `${object.kind} ${object.metadata.name}`,
      );
      assert.equal(
        live.metadata.labels?.["clusterctl.cluster.x-k8s.io"],
        "",
        `${object.kind} ${object.metadata.name} carries clusterctl's own label`,
      );
    }
  });
});
