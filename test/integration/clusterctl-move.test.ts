// clusterctl move carries the templates a QuorumControlPlane references (issue 15, item 4). The real controller
// (as its ServiceAccount, with config/default's RBAC and a provider ClusterRole granting get/patch on the test
// template kinds) gives both templates a Cluster owner reference; the real clusterctl, built from the pinned
// cluster-api module, then plans a move of the namespace with --dry-run and lists what it would create on the
// target. Its object graph follows ownerReferences from the Cluster, so a template owned by nothing is left behind:
// a stray template in the same namespace shows that the listing is selective.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { parse } from "yaml";
import type { OwnerReference } from "../../src/api/types.ts";
import { builtBinary, capiModuleDir, kubeRequest, kubeRequestOk, makeTempDir } from "../env/index.ts";
import { startStack, type ControllerStack } from "./controller/stack.ts";
import { BOOTSTRAP_GROUP, INFRA_GROUP, TEST_VERSION } from "./controller/test-kinds.ts";

const run = promisify(execFile);
const NS = "move";
const NAME = "c1";
const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
/** clusterctl's object graph reads only the kinds of CRDs with this label; `clusterctl init` puts it on every CRD. */
const CLUSTERCTL_LABEL = "clusterctl.cluster.x-k8s.io";

const TEMPLATES = [
  { path: `/apis/${INFRA_GROUP}/${TEST_VERSION}/namespaces/${NS}/testmachinetemplates`, kind: "TestMachineTemplate" },
  {
    path: `/apis/${BOOTSTRAP_GROUP}/${TEST_VERSION}/namespaces/${NS}/testbootstrapconfigtemplates`,
    kind: "TestBootstrapConfigTemplate",
  },
];

describe("clusterctl move and the templates a QuorumControlPlane references", { timeout: 600_000 }, () => {
  let stack: ControllerStack;
  let clusterUid: string;

  before(async () => {
    stack = await startStack({ capi: true });
    await stack.createCluster(NS, NAME, { replicas: 1, version: "v1.31.0" });
    await stack.installControllerRbac();
    await stack.startController({ asServiceAccount: true });
    await stack.waitConverged(NS, NAME, 1);
    clusterUid = (
      await kubeRequestOk<{ metadata: { uid: string } }>(
        stack.kubeConfig,
        `/apis/cluster.x-k8s.io/v1beta2/namespaces/${NS}/clusters/${NAME}`,
      )
    ).metadata.uid;
  });

  after(async () => {
    await stack?.stop();
  });

  it("gives both referenced templates an owner reference to the Cluster that is neither controller nor blocking", async () => {
    const want: OwnerReference = {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      name: NAME,
      uid: clusterUid,
    };
    for (const [template, suffix] of [
      [TEMPLATES[0], "infra"],
      [TEMPLATES[1], "boot"],
    ] as const) {
      const object = await kubeRequestOk<{ metadata: { ownerReferences?: OwnerReference[] } }>(
        stack.kubeConfig,
        `${template.path}/${NAME}-${suffix}`,
      );
      assert.deepEqual(object.metadata.ownerReferences, [want], `${template.kind} ${NS}/${NAME}-${suffix}`);
    }
  });

  it("clusterctl move --dry-run plans to create both templates on the target, and not a template nothing owns", async () => {
    await kubeRequestOk(stack.kubeConfig, TEMPLATES[0].path, {
      body: {
        apiVersion: `${INFRA_GROUP}/${TEST_VERSION}`,
        kind: "TestMachineTemplate",
        metadata: { name: "stray", namespace: NS },
        spec: { template: { spec: { size: "small" } } },
      },
    });
    await prepareForClusterctl(stack);
    const dir = makeTempDir("clusterctl-move");
    const moved = await run(
      builtBinary("clusterctl"),
      ["move", "--dry-run", "--namespace", NS, "--kubeconfig", stack.apiServer.kubeconfigPath, "-v", "1"],
      {
        // clusterctl keeps its config under $XDG_CONFIG_HOME and would look for newer releases online.
        env: {
          ...process.env,
          HOME: dir,
          XDG_CONFIG_HOME: join(dir, "config"),
          CLUSTERCTL_DISABLE_VERSIONCHECK: "true",
        },
        timeout: 120_000,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    const planned = plannedCreates(`${moved.stdout}\n${moved.stderr}`);
    const output = `clusterctl output:\n${moved.stdout}\n${moved.stderr}`;
    assert.ok(planned.has(`Cluster ${NAME}`), `the Cluster itself is moved (${output})`);
    assert.ok(planned.has(`QuorumControlPlane ${NAME}`), output);
    assert.ok(planned.has(`TestMachineTemplate ${NAME}-infra`), output);
    assert.ok(planned.has(`TestBootstrapConfigTemplate ${NAME}-boot`), output);
    assert.ok(!planned.has("TestMachineTemplate stray"), `a template no Cluster owns stays behind (${output})`);
  });
});

/**
 * What `clusterctl init` would have done: the clusterctl label on every CRD, and clusterctl's own Provider CRD (its
 * inventory, which move reads).
 */
async function prepareForClusterctl(stack: ControllerStack): Promise<void> {
  const kc = stack.kubeConfig;
  const providers = parse(
    readFileSync(
      join(capiModuleDir(), "cmd/clusterctl/config/crd/bases/clusterctl.cluster.x-k8s.io_providers.yaml"),
      "utf8",
    ),
  ) as { metadata: { name: string } };
  const created = await kubeRequest(kc, CRDS, { body: providers });
  assert.ok(created.status === 201 || created.status === 409, `create the Provider CRD: ${created.text}`);
  const crds = await kubeRequestOk<{ items: { metadata: { name: string } }[] }>(kc, CRDS);
  for (const crd of crds.items)
    await kubeRequestOk(kc, `${CRDS}/${crd.metadata.name}`, {
      method: "PATCH",
      body: { metadata: { labels: { [CLUSTERCTL_LABEL]: "" } } },
    });
}

/** "Kind name" of each object clusterctl logs as `Creating <Kind>="<name>" ...` in a dry run. */
function plannedCreates(output: string): Set<string> {
  return new Set([...output.matchAll(/Creating\s+(\w+)="([^"]+)"/g)].map((match) => `${match[1]} ${match[2]}`));
}
