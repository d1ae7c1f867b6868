// The kubeadm flavour's workload steps (issue 17) against a real kube-apiserver standing in for a workload cluster that
// kubeadm 1.36 initialised: kube-system/kubeadm-config as kubeadm uploads it, kube-proxy's DaemonSet as its addon phase
// creates it, and none of the RBAC kubeadm 1.37 expects. An upgrade to v1.37.2 must bring all three along, through
// the same adapter (ClusterWorkloadAccess) the controller uses, and every later look must find them done.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import { buildKubeconfig } from "../../src/adapters/certs/kubeconfig.ts";
import { issueCertificate, oneDay, validFor } from "../../src/adapters/certs/pki.ts";
import type { Cluster } from "../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import type { WorkloadStep } from "../../src/ports/index.ts";
import { startApiServer, type ApiServer } from "../env/apiserver.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import { freePort } from "../env/net.ts";
import { sampleKubeadmConfigTemplate } from "../env/kubeadm-sample.ts";
import { uploadedClusterConfiguration } from "../env/kubeadm-uploaded.ts";
import { MemorySecretStore } from "../unit/adapters/memory-secret-store.ts";

const NS = "tenant";
const CLUSTER = "c1";

const UPLOADED = uploadedClusterConfiguration({
  clusterName: "c1",
  kubernetesVersion: "v1.36.3",
  controlPlaneEndpoint: "10.200.1.254:6443",
});

function controlPlane(version: string, annotations: Record<string, string> = {}): QuorumControlPlane {
  return {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta2",
    kind: "QuorumControlPlane",
    metadata: { name: "qcp", namespace: NS, annotations },
    spec: {
      replicas: 3,
      version,
      machineTemplate: {
        spec: {
          infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "ProcessMachineTemplate", name: "m" },
          bootstrapConfigTemplateRef: {
            apiGroup: "bootstrap.cluster.x-k8s.io",
            kind: "KubeadmConfigTemplate",
            name: "kubeadm",
          },
        },
      },
    },
  } as QuorumControlPlane;
}

const cluster = (name = CLUSTER): Cluster => ({ metadata: { name, namespace: NS }, spec: {} }) as Cluster;
const template = async () => ({ ...sampleKubeadmConfigTemplate(), metadata: { name: "kubeadm", namespace: NS } });

function step(steps: WorkloadStep[], name: string): WorkloadStep {
  const found = steps.find((candidate) => candidate.name === name);
  assert.ok(found, `no step ${name} in ${JSON.stringify(steps)}`);
  return found;
}

describe("the kubeadm flavour in a workload cluster kubeadm 1.36 initialised", { timeout: 300_000 }, () => {
  let api: ApiServer;
  let access: ClusterWorkloadAccess;
  const secrets = new MemorySecretStore();

  /** The workload cluster's `<cluster>-kubeconfig` Secret, as Quorum reads it when the Cluster has no endpoint. */
  async function kubeconfigSecret(name: string, server: string): Promise<void> {
    // system:masters, as Quorum's own workload client certificate is (src/adapters/workload/client.ts).
    const masters = await issueCertificate(api.ca, {
      commonName: "quorum-test",
      organization: "system:masters",
      usages: "client",
      validity: validFor(oneDay),
    });
    secrets.seed(NS, `${name}-kubeconfig`, {
      value: buildKubeconfig({
        cluster: name,
        server,
        caPem: api.ca.certPem,
        certPem: masters.certPem,
        keyPem: masters.keyPem,
      }),
    });
  }

  /** kube-system/kubeadm-config in the workload cluster, as kubeadm init's upload-config phase creates it. */
  const createKubeadmConfig = (clusterConfiguration: string) =>
    kubeRequestOk(api.kubeConfig, "/api/v1/namespaces/kube-system/configmaps", {
      method: "POST",
      body: {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "kubeadm-config", namespace: "kube-system" },
        data: { ClusterConfiguration: clusterConfiguration },
      },
    });

  before(async () => {
    api = await startApiServer();
    await kubeconfigSecret(CLUSTER, api.url);
    access = new ClusterWorkloadAccess({ secrets });
    await createKubeadmConfig(UPLOADED);
    await kubeRequestOk(api.kubeConfig, "/apis/apps/v1/namespaces/kube-system/daemonsets", {
      method: "POST",
      body: {
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: { name: "kube-proxy", namespace: "kube-system" },
        spec: {
          selector: { matchLabels: { "k8s-app": "kube-proxy" } },
          template: {
            metadata: { labels: { "k8s-app": "kube-proxy" } },
            spec: {
              containers: [
                {
                  name: "kube-proxy",
                  image: "registry.k8s.io/kube-proxy:v1.36.3",
                  command: ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf"],
                },
              ],
            },
          },
        },
      },
    });
  });

  after(async () => {
    await access?.closeAll();
    await api?.stop();
  });

  it("finds nothing to do at the version kubeadm init used, but the RBAC kubeadm 1.37 will need", async () => {
    const observed = await access.workloadSteps(controlPlane("v1.36.3"), cluster(), template);
    assert.equal(observed.flavour, "kubeadm");
    assert.equal(observed.error, undefined);
    assert.deepEqual(
      observed.steps.map(({ name, when, done }) => ({ name, when, done })),
      [
        { name: "kubeadm-config", when: "BeforeCreate", done: true },
        { name: "kubeadm-permissions", when: "BeforeCreate", done: false },
        { name: "kube-proxy", when: "AfterRollout", done: true },
      ],
    );
    assert.equal(observed.initialized, true, "kubeadm init uploaded kubeadm-config");
  });

  it("brings kubeadm's RBAC, kubeadm-config and kube-proxy to v1.37.2, each step once", async () => {
    const target = controlPlane("v1.37.2");
    const before = await access.workloadSteps(target, cluster(), template);
    assert.match(step(before.steps, "kubeadm-config").detail, /\/kubernetesVersion: "v1\.36\.3" → "v1\.37\.2"/);
    assert.match(
      step(before.steps, "kube-proxy").detail,
      /runs registry\.k8s\.io\/kube-proxy:v1\.36\.3, not .*:v1\.37\.2/,
    );

    for (const name of ["kubeadm-config", "kubeadm-permissions", "kube-proxy"]) {
      const message = await access.prepareWorkload(target, cluster(), name, template);
      assert.doesNotMatch(message, /already done/, `${name}: ${message}`);
    }
    const configMap = await kubeRequestOk<{ data: Record<string, string> }>(
      api.kubeConfig,
      "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
    );
    const written = parse(configMap.data.ClusterConfiguration) as Record<string, unknown>;
    const original = parse(UPLOADED) as Record<string, unknown>;
    for (const key of ["controllerManager", "dns", "proxy", "scheduler"]) delete original[key];
    assert.deepEqual(written, { ...original, kubernetesVersion: "v1.37.2" });

    const daemonSet = await kubeRequestOk<{ spec: { template: { spec: { containers: { image: string }[] } } } }>(
      api.kubeConfig,
      "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy",
    );
    assert.equal(daemonSet.spec.template.spec.containers[0].image, "registry.k8s.io/kube-proxy:v1.37.2");

    for (const [name, role, subject] of [
      ["kubeadm:cluster-admins", "cluster-admin", "kubeadm:cluster-admins"],
      ["kubeadm:apiserver-kubelet-client", "system:kubelet-api-admin", "kube-apiserver-kubelet-client"],
    ]) {
      const binding = await kubeRequestOk<{ roleRef: { name: string }; subjects: { name: string }[] }>(
        api.kubeConfig,
        `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${name}`,
      );
      assert.equal(binding.roleRef.name, role);
      assert.deepEqual(
        binding.subjects.map((candidate) => candidate.name),
        [subject],
      );
    }

    const afterwards = await access.workloadSteps(target, cluster(), template);
    assert.deepEqual(
      afterwards.steps.filter((candidate) => !candidate.done),
      [],
    );
    // Done is done: carrying a step out again changes nothing.
    assert.match(await access.prepareWorkload(target, cluster(), "kubeadm-config", template), /already done/);
  });

  it("leaves kube-proxy alone under KCP's skip annotation", async () => {
    const skipping = controlPlane("v1.37.3", { "controlplane.cluster.x-k8s.io/skip-kube-proxy": "" });
    const observed = await access.workloadSteps(skipping, cluster(), template);
    assert.equal(step(observed.steps, "kube-proxy").done, true);
    // ...while kubeadm-config, whose inputs changed with the version, is read again and found behind.
    assert.equal(step(observed.steps, "kubeadm-config").done, false);
  });

  it("waits for kubeadm init where kubeadm-config does not exist yet, and names a garbage one", async () => {
    await kubeRequestOk(api.kubeConfig, "/api/v1/namespaces/kube-system/configmaps/kubeadm-config", {
      method: "DELETE",
    });
    const missing = step(
      (await access.workloadSteps(controlPlane("v1.37.4"), cluster(), template)).steps,
      "kubeadm-config",
    );
    assert.equal(missing.done, false);
    assert.equal((await access.workloadSteps(controlPlane("v1.37.4"), cluster(), template)).initialized, false);
    assert.match(
      missing.blocked ?? "",
      /ConfigMap kube-system\/kubeadm-config of the workload cluster does not exist: kubeadm init uploads it/,
    );

    await createKubeadmConfig("{{ range .Values }}: [");
    const garbage = step(
      (await access.workloadSteps(controlPlane("v1.37.4"), cluster(), template)).steps,
      "kubeadm-config",
    );
    assert.match(garbage.blocked ?? "", /ClusterConfiguration is not YAML .*restore it from a control-plane node/);
    await assert.rejects(
      access.prepareWorkload(controlPlane("v1.37.4"), cluster(), "kubeadm-config", template),
      /ClusterConfiguration is not YAML/,
    );
    const unchanged = await kubeRequest<{ data: Record<string, string> }>(
      api.kubeConfig,
      "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
    );
    assert.equal(unchanged.body.data.ClusterConfiguration, "{{ range .Values }}: [");
  });

  it("sees each node's static pods through their mirror Pods, with why one is not ready", async () => {
    for (const component of ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      const name = `${component}-ip-10-200-1-3`;
      await kubeRequestOk(api.kubeConfig, "/api/v1/namespaces/kube-system/pods", {
        method: "POST",
        body: {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, namespace: "kube-system", labels: { component, tier: "control-plane" } },
          spec: {
            nodeName: "ip-10-200-1-3",
            containers: [{ name: component, image: `registry.k8s.io/${component}:v1.37.2` }],
          },
        },
      });
      const crashing = component === "kube-apiserver";
      await kubeRequestOk(api.kubeConfig, `/api/v1/namespaces/kube-system/pods/${name}/status`, {
        method: "PATCH",
        body: {
          status: {
            phase: crashing ? "Pending" : "Running",
            conditions: [{ type: "Ready", status: crashing ? "False" : "True" }],
            containerStatuses: [
              {
                name: component,
                image: `registry.k8s.io/${component}:v1.37.2`,
                imageID: "",
                ready: !crashing,
                restartCount: crashing ? 4 : 0,
                state: crashing
                  ? { waiting: { reason: "CrashLoopBackOff", message: "back-off 40s restarting failed container" } }
                  : { running: { startedAt: new Date().toISOString() } },
                ...(crashing ? { lastState: { terminated: { exitCode: 1, reason: "Error" } } } : {}),
              },
            ],
          },
        },
      });
    }
    const observed = await access.workloadSteps(controlPlane("v1.37.2"), cluster(), template);
    assert.deepEqual(observed.componentNames, ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]);
    assert.deepEqual(observed.components?.map(({ node, component, ready }) => `${node} ${component} ${ready}`).sort(), [
      "ip-10-200-1-3 etcd true",
      "ip-10-200-1-3 kube-apiserver false",
      "ip-10-200-1-3 kube-controller-manager true",
      "ip-10-200-1-3 kube-scheduler true",
    ]);
    assert.equal(
      observed.components?.find((component) => component.component === "kube-apiserver")?.detail,
      "pod kube-system/kube-apiserver-ip-10-200-1-3 is not Ready: CrashLoopBackOff, back-off 40s restarting failed container, last exit 1 (Error), 4 restarts",
    );
  });

  it("reports an unreachable workload API as the steps' error, naming the server", async () => {
    const closed = `https://127.0.0.1:${await freePort()}`;
    await kubeconfigSecret("gone", closed);
    const observed = await access.workloadSteps(controlPlane("v1.37.2"), cluster("gone"), template);
    assert.deepEqual(observed.steps, []);
    assert.match(
      observed.error ?? "",
      new RegExp(`workload API server ${closed.replace(/\./g, "\\.")} .*could not be reached`),
    );
  });
});
