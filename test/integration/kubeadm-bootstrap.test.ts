// The real kubeadm bootstrap provider (CABPK) bootstraps a QuorumControlPlane's Machines (issue 16, item 1): the
// bootstrap template is the KubeadmConfigTemplate of config/samples/cluster-kubeadm.yaml, Quorum clones it per
// Machine, and CABPK writes `kubeadm init` for exactly one Machine and `kubeadm join` with a control-plane section
// for every other, using the CA Secrets Quorum created. Real kube-apiserver, the real CAPI core manager (Cluster and
// Machine controllers) and CABPK, the controller as its own process; the MachinePlayer is the infrastructure
// provider (an etcd member per TestMachine, started once the Machine has bootstrap data). The workload cluster's API
// server is a real kube-apiserver serving with the `<cluster>-ca` Quorum generated, at Cluster.spec.controlPlaneEndpoint:
// CABPK creates each join's bootstrap token there.
import assert from "node:assert/strict";
import { createPrivateKey } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { parse, parseAllDocuments, stringify } from "yaml";
import type { Machine } from "../../src/api/capi.ts";
import { CAPI_API_VERSION, secretName } from "../../src/api/constants.ts";
import { loadCA } from "../../src/adapters/certs/pki.ts";
import { startApiServer, type ApiServer } from "../env/apiserver.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import { pinnedVersions } from "../env/tools.ts";
import { sampleKubeadmConfigTemplate } from "../env/kubeadm-sample.ts";
import { eventually } from "../env/wait.ts";
import { startStack, type ControllerProcess, type ControllerStack } from "./controller/stack.ts";

const NS = "kubeadm";
const NAME = "k1";
const KUBEADM_API = "bootstrap.cluster.x-k8s.io/v1beta2";
/** The Kubernetes version the QuorumControlPlane asks for: the one `make deps` builds kubeadm for. */
const VERSION = pinnedVersions().kubernetes;

interface KubeadmConfig {
  metadata: { name: string; ownerReferences?: { kind: string; name: string; controller?: boolean }[] };
  status?: { dataSecretName?: string };
}

interface CloudConfig {
  write_files?: { path: string; content: string }[];
  runcmd?: string[];
}

function fileIn(cloudConfig: CloudConfig, path: string): string {
  const file = cloudConfig.write_files?.find((entry) => entry.path === path);
  if (!file)
    throw new Error(`the cloud-init writes no ${path}: ${cloudConfig.write_files?.map((f) => f.path).join(", ")}`);
  return file.content;
}

/** The kubeadm configuration documents (ClusterConfiguration, InitConfiguration, JoinConfiguration) of a file, by kind. */
function kubeadmDocuments(text: string): Map<string, Record<string, unknown>> {
  const documents = parseAllDocuments(text).map((doc) => doc.toJS() as Record<string, unknown> & { kind: string });
  return new Map(documents.map((document) => [document.kind, document]));
}

describe("the real kubeadm bootstrap provider bootstraps a QuorumControlPlane's Machines", { timeout: 600_000 }, () => {
  let stack: ControllerStack;
  let workload: ApiServer | undefined;
  let endpoint: { host: string; port: number };
  const bootstrapData = new Map<string, CloudConfig>();
  let machines: Machine[] = [];
  let crashing: ControllerProcess;
  let crashExit: Awaited<ControllerProcess["process"]["exited"]> | undefined;

  const logs = () =>
    [
      ...stack.controllers.map((controller) => `--- quorum ---\n${controller.process.lastLogLines(30)}`),
      `--- CABPK ---\n${stack.kubeadmBootstrap?.process.lastLogLines(30) ?? ""}`,
      `--- CAPI ---\n${stack.capi?.process.lastLogLines(15) ?? ""}`,
    ].join("\n");

  const kubeadmConfig = (name: string) =>
    kubeRequestOk<KubeadmConfig>(stack.kubeConfig, `/apis/${KUBEADM_API}/namespaces/${NS}/kubeadmconfigs/${name}`);

  /** The cloud-init CABPK wrote for Machine `name`, once its KubeadmConfig says where it is. */
  async function cloudConfigOf(name: string): Promise<CloudConfig> {
    const known = bootstrapData.get(name);
    if (known) return known;
    const config = await eventually(
      `KubeadmConfig ${NS}/${name} to have status.dataSecretName`,
      async () => {
        const current = await kubeadmConfig(name);
        return current.status?.dataSecretName ? current : { waiting: JSON.stringify(current.status ?? {}) };
      },
      { timeoutMs: 120_000, context: logs },
    );
    const secret = await kubeRequestOk<{ data: Record<string, string> }>(
      stack.kubeConfig,
      `/api/v1/namespaces/${NS}/secrets/${config.status!.dataSecretName}`,
    );
    const cloudConfig = parse(Buffer.from(secret.data.value, "base64").toString("utf8")) as CloudConfig;
    bootstrapData.set(name, cloudConfig);
    return cloudConfig;
  }

  /**
   * kubeadm init's upload-config phase, played here (no kubeadm runs on these Machines): the init Machine's
   * ClusterConfiguration into the workload cluster's kube-system/kubeadm-config, which every kubeadm join reads and
   * Quorum waits for before it creates a joining Machine.
   */
  async function uploadKubeadmConfig(): Promise<void> {
    const first = await eventually(
      `a Machine of ${NS}/${NAME} with a KubeadmConfig`,
      async () => {
        const found = (await stack.machines(NS, NAME)).find((machine) => machine.spec.bootstrap.configRef?.name);
        return found ?? { waiting: "no Machine yet" };
      },
      { timeoutMs: 120_000, context: logs },
    );
    const init = await cloudConfigOf(first.spec.bootstrap.configRef!.name);
    const clusterConfiguration = kubeadmDocuments(fileIn(init, "/run/kubeadm/kubeadm.yaml")).get(
      "ClusterConfiguration",
    );
    await kubeRequestOk(workload!.kubeConfig, "/api/v1/namespaces/kube-system/configmaps", {
      method: "POST",
      body: {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "kubeadm-config", namespace: "kube-system" },
        data: { ClusterConfiguration: stringify(clusterConfiguration) },
      },
    });
  }

  before(async () => {
    stack = await startStack({ capi: true, kubeadmBootstrap: true });
    // The shipped sample, asking for ECDSA P-384 keys (kubeadm's encryptionAlgorithm): Quorum's CAs and service-account
    // key follow it, as KCP's do. The e2e kubeadm scenarios run the sample as shipped (kubeadm's RSA-2048 default).
    const template = sampleKubeadmConfigTemplate();
    const spec = (template.spec.template as { spec: { clusterConfiguration: Record<string, unknown> } }).spec;
    spec.clusterConfiguration.encryptionAlgorithm = "ECDSA-P384";
    await stack.createCluster(NS, NAME, { replicas: 3, version: VERSION }, { bootstrapTemplate: template });
    // Killed right after its first workload step (issue 17: the new action is crash-safe like the others); the
    // controller started next finishes from the sources of truth.
    crashing = await stack.startController({ env: { QUORUM_CRASH_AFTER: "PrepareWorkload:1" } });
    // The workload API server trusts the cluster CA Quorum generates on its first reconcile; Cluster.spec.controlPlaneEndpoint
    // then points at it, as an infrastructure provider's load balancer would.
    const ca = await eventually(
      `Secret ${NS}/${secretName.ca(NAME)}`,
      async () => {
        const secret = await kubeRequest<{ data: Record<string, string> }>(
          stack.kubeConfig,
          `/api/v1/namespaces/${NS}/secrets/${secretName.ca(NAME)}`,
        );
        if (secret.status !== 200) return { waiting: `HTTP ${secret.status}` };
        const decode = (key: string) => Buffer.from(secret.body.data[key], "base64").toString("utf8");
        return loadCA(decode("tls.crt"), decode("tls.key"));
      },
      { timeoutMs: 60_000, context: logs },
    );
    workload = await startApiServer({ ca });
    const url = new URL(workload.url);
    endpoint = { host: url.hostname, port: Number(url.port) };
    await kubeRequestOk(stack.kubeConfig, `/apis/${CAPI_API_VERSION}/namespaces/${NS}/clusters/${NAME}`, {
      method: "PATCH",
      body: { spec: { controlPlaneEndpoint: endpoint } },
    });
    await uploadKubeadmConfig();
    const deadline = new AbortController();
    crashExit = await Promise.race([
      crashing.process.exited,
      sleep(180_000, undefined, { signal: deadline.signal }).catch(() => undefined),
    ]).finally(() => deadline.abort());
    if (crashing.process.isRunning()) await crashing.process.kill();
    await stack.startController();
    await stack.waitConverged(NS, NAME, 3, 300_000);
    machines = (await stack.machines(NS, NAME)).sort((a, b) =>
      (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""),
    );
  });

  after(async () => {
    await stack?.stop();
    await workload?.stop();
  });

  it("each Machine's KubeadmConfig is owned by its Machine and names the data Secret the Machine uses", async () => {
    assert.equal(machines.length, 3);
    for (const machine of machines) {
      const config = await kubeadmConfig(machine.spec.bootstrap.configRef!.name);
      const owner = config.metadata.ownerReferences?.find((reference) => reference.controller);
      assert.deepEqual(
        { kind: owner?.kind, name: owner?.name },
        { kind: "Machine", name: machine.metadata.name },
        `KubeadmConfig ${config.metadata.name}'s controller`,
      );
      assert.ok(config.status?.dataSecretName, `KubeadmConfig ${config.metadata.name} has status.dataSecretName`);
      assert.equal(machine.spec.bootstrap.dataSecretName, config.status.dataSecretName);
    }
  });

  it("the first Machine runs kubeadm init with the QuorumControlPlane's version, and no other Machine does", async () => {
    const [first, ...others] = machines;
    const initData = await cloudConfigOf(first.spec.bootstrap.configRef!.name);
    assert.ok(
      initData.runcmd?.some((command) => command.startsWith("kubeadm init --config /run/kubeadm/kubeadm.yaml")),
      `runcmd: ${JSON.stringify(initData.runcmd)}`,
    );
    const documents = kubeadmDocuments(fileIn(initData, "/run/kubeadm/kubeadm.yaml"));
    assert.equal(documents.get("ClusterConfiguration")?.kubernetesVersion, VERSION);
    assert.ok(documents.has("InitConfiguration"));
    for (const machine of others) {
      const data = await cloudConfigOf(machine.spec.bootstrap.configRef!.name);
      assert.ok(
        !data.runcmd?.some((command) => command.includes("kubeadm init")),
        `${machine.metadata.name} runcmd: ${JSON.stringify(data.runcmd)}`,
      );
    }
  });

  it("once the Cluster is initialised, every other Machine joins as a control-plane node through the endpoint", async () => {
    const cluster = await kubeRequestOk<{ status?: { conditions?: { type: string; status: string }[] } }>(
      stack.kubeConfig,
      `/apis/${CAPI_API_VERSION}/namespaces/${NS}/clusters/${NAME}`,
    );
    assert.equal(cluster.status?.conditions?.find((c) => c.type === "ControlPlaneInitialized")?.status, "True");
    for (const machine of machines.slice(1)) {
      const data = await cloudConfigOf(machine.spec.bootstrap.configRef!.name);
      assert.ok(
        data.runcmd?.some((command) =>
          command.startsWith("kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml"),
        ),
        `${machine.metadata.name} runcmd: ${JSON.stringify(data.runcmd)}`,
      );
      const joinConfiguration = kubeadmDocuments(fileIn(data, "/run/kubeadm/kubeadm-join-config.yaml")).get(
        "JoinConfiguration",
      ) as { controlPlane?: unknown; discovery?: { bootstrapToken?: { apiServerEndpoint?: string; token?: string } } };
      // `controlPlane` in the JoinConfiguration is what makes `kubeadm join` a control-plane join.
      assert.ok(joinConfiguration?.controlPlane, `${machine.metadata.name}: JoinConfiguration without controlPlane`);
      assert.equal(joinConfiguration.discovery?.bootstrapToken?.apiServerEndpoint, `${endpoint.host}:${endpoint.port}`);
      const tokenId = joinConfiguration.discovery?.bootstrapToken?.token?.split(".")[0];
      const token = await kubeRequest(
        workload!.kubeConfig,
        `/api/v1/namespaces/kube-system/secrets/bootstrap-token-${tokenId}`,
      );
      assert.equal(token.status, 200, `the workload cluster holds bootstrap token ${tokenId}`);
    }
  });

  it("a controller killed right after its first PrepareWorkload leaves nothing a restarted one cannot finish", () => {
    assert.ok(
      crashExit,
      `the controller never ran PrepareWorkload within 180 s:\n${crashing.process.lastLogLines(30)}`,
    );
    assert.equal(crashExit.code, 137, `exit: ${JSON.stringify(crashExit)}\n${crashing.process.lastLogLines(30)}`);
    assert.match(crashing.process.lastLogLines(400), /QUORUM_CRASH_AFTER: exiting with 137 after PrepareWorkload #1/);
    assert.match(
      crashing.process.lastLogLines(400),
      /created ClusterRoleBinding kubeadm:cluster-admins, kubeadm:apiserver-kubelet-client/,
    );
  });

  it("before the first join, Quorum created the RBAC kubeadm expects and left kubeadm-config as init uploaded it", async () => {
    for (const name of ["kubeadm:cluster-admins", "kubeadm:apiserver-kubelet-client"]) {
      const binding = await kubeRequest(
        workload!.kubeConfig,
        `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${name}`,
      );
      assert.equal(binding.status, 200, `ClusterRoleBinding ${name} in the workload cluster`);
    }
    const configMap = await kubeRequestOk<{ data: Record<string, string> }>(
      workload!.kubeConfig,
      "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
    );
    const uploaded = kubeadmDocuments(
      fileIn(await cloudConfigOf(machines[0].spec.bootstrap.configRef!.name), "/run/kubeadm/kubeadm.yaml"),
    ).get("ClusterConfiguration");
    assert.deepEqual(parse(configMap.data.ClusterConfiguration), uploaded);
  });

  it("the certificates CABPK hands to joining Machines are the CAs Quorum created", async () => {
    const caCertificate = async (purpose: "ca" | "etcd" | "sa" | "proxy") => {
      const secret = await kubeRequestOk<{ data: Record<string, string> }>(
        stack.kubeConfig,
        `/api/v1/namespaces/${NS}/secrets/${secretName[purpose](NAME)}`,
      );
      return Buffer.from(secret.data["tls.crt"], "base64").toString("utf8").trim();
    };
    const data = await cloudConfigOf(machines[1].spec.bootstrap.configRef!.name);
    const files: Record<string, "ca" | "etcd" | "sa" | "proxy"> = {
      "/etc/kubernetes/pki/ca.crt": "ca",
      "/etc/kubernetes/pki/etcd/ca.crt": "etcd",
      "/etc/kubernetes/pki/front-proxy-ca.crt": "proxy",
      "/etc/kubernetes/pki/sa.pub": "sa",
    };
    for (const [path, purpose] of Object.entries(files))
      assert.equal(fileIn(data, path).trim(), await caCertificate(purpose), `${path} is ${secretName[purpose](NAME)}`);
  });

  it("made every CA and the service-account key ECDSA P-384, as the template's encryptionAlgorithm asks", async () => {
    for (const purpose of ["ca", "etcd", "proxy", "sa"] as const) {
      const secret = await kubeRequestOk<{ data: Record<string, string> }>(
        stack.kubeConfig,
        `/api/v1/namespaces/${NS}/secrets/${secretName[purpose](NAME)}`,
      );
      const key = createPrivateKey(Buffer.from(secret.data["tls.key"], "base64").toString("utf8"));
      assert.equal(
        `${key.asymmetricKeyType} ${key.asymmetricKeyDetails?.namedCurve}`,
        "ec secp384r1",
        secretName[purpose](NAME),
      );
    }
  });
});
