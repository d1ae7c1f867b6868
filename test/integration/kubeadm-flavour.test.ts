// The kubeadm flavour's workload steps (issue 17) against a real kube-apiserver standing in for a workload cluster that
// kubeadm 1.36 initialised: kube-system/kubeadm-config as kubeadm uploads it, kube-proxy's DaemonSet and CoreDNS's
// Deployment as its addon phase creates them, and none of the RBAC kubeadm 1.37 expects. An upgrade to v1.37.2 must
// bring all three along, through the same adapter (ClusterWorkloadAccess) the controller uses, and every later look
// must find them done; CoreDNS moves only where the template pins it (as KCP). Both pod templates carry a field that
// client-node's models do not know (spec.schedulingGroup, alpha in Kubernetes 1.37 behind GenericWorkload, which this
// API server enables): a field of a later Kubernetes that an image move must keep.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parse, stringify } from "yaml";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import { WorkloadClients } from "../../src/adapters/workload/client.ts";
import { KUBE_PROXY } from "../../src/adapters/workload/kubeadm/flavour.ts";
import { moveImage } from "../../src/adapters/workload/kubeadm/move-image.ts";
import { buildKubeconfig } from "../../src/adapters/certs/kubeconfig.ts";
import { issueCertificate, oneDay, validFor } from "../../src/adapters/certs/pki.ts";
import type { Cluster, Machine } from "../../src/api/capi.ts";
import { nodeQuery } from "../../src/controller/observe.ts";
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

/** What kubeadm 1.36.3's addon phase deploys (cmd/kubeadm/app/constants: CoreDNSVersion v1.14.2). */
const COREDNS_1_36 = "registry.k8s.io/coredns/coredns:v1.14.2";
/** kubeadm 1.37.2's CoreDNSVersion. */
const COREDNS_1_37 = "registry.k8s.io/coredns/coredns:v1.14.6";
/** A pod spec field the API server keeps and client-node 1.4.0's V1PodSpec lacks (a PUT of the model drops it). */
const NEWER_FIELD = { schedulingGroup: { podGroupName: "control-plane-addons" } };
const COREFILE =
  ".:53 {\n    errors\n    kubernetes cluster.local in-addr.arpa ip6.arpa\n    forward . /etc/resolv.conf\n}\n";

const UPLOADED = uploadedClusterConfiguration({
  clusterName: "c1",
  kubernetesVersion: "v1.36.3",
  controlPlaneEndpoint: "10.200.1.254:6443",
});

function controlPlane(
  version: string,
  annotations: Record<string, string> = {},
  templateName = "kubeadm",
): QuorumControlPlane {
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
            name: templateName,
          },
        },
      },
    },
  } as QuorumControlPlane;
}

const cluster = (name = CLUSTER): Cluster => ({ metadata: { name, namespace: NS }, spec: {} }) as Cluster;
const template = async () => ({ ...sampleKubeadmConfigTemplate(), metadata: { name: "kubeadm", namespace: NS } });

/** The sample template under another name, its clusterConfiguration pinning CoreDNS's tag (dns.imageTag). */
function pinningTemplate(name: string, imageTag: string) {
  return async () => {
    const sample = structuredClone(sampleKubeadmConfigTemplate());
    const spec = sample.spec as { template: { spec: { clusterConfiguration: Record<string, unknown> } } };
    spec.template.spec.clusterConfiguration.dns = { imageTag };
    return { ...sample, metadata: { name, namespace: NS } };
  };
}

interface CoreDNSDeployment {
  metadata: { resourceVersion: string };
  spec: {
    template: {
      spec: {
        containers: { name: string; image: string; args: string[] }[];
        volumes: { name: string }[];
        schedulingGroup?: unknown;
      };
    };
  };
}

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

  /** A ConfigMap in the workload cluster's kube-system, as kubeadm creates its own. */
  const createConfigMap = (name: string, data: Record<string, string>) =>
    kubeRequestOk(api.kubeConfig, "/api/v1/namespaces/kube-system/configmaps", {
      method: "POST",
      body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "kube-system" }, data },
    });

  /** kube-system/kubeadm-config in the workload cluster, as kubeadm init's upload-config phase creates it. */
  const createKubeadmConfig = (clusterConfiguration: string) =>
    createConfigMap("kubeadm-config", { ClusterConfiguration: clusterConfiguration });

  const readCoreDNS = () =>
    kubeRequestOk<CoreDNSDeployment>(api.kubeConfig, "/apis/apps/v1/namespaces/kube-system/deployments/coredns");

  const KUBEADM_CONFIG_PATH = "/api/v1/namespaces/kube-system/configmaps/kubeadm-config";
  const readKubeadmConfig = () =>
    kubeRequestOk<{ metadata: { resourceVersion: string }; data: Record<string, string> }>(
      api.kubeConfig,
      KUBEADM_CONFIG_PATH,
    );
  /** kubeadm-config's dns, which `kubeadm join --control-plane` pre-pulls CoreDNS from. */
  const kubeadmConfigDNS = async () =>
    (parse((await readKubeadmConfig()).data.ClusterConfiguration) as { dns?: unknown }).dns;

  /** kube-system/coredns and its Corefile, as kubeadm's addon phase creates them (the fields the step must keep). */
  async function createCoreDNS(withCorefile = true): Promise<void> {
    if (withCorefile) await createConfigMap("coredns", { Corefile: COREFILE });
    await kubeRequestOk(api.kubeConfig, "/apis/apps/v1/namespaces/kube-system/deployments", {
      method: "POST",
      body: {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "coredns", namespace: "kube-system", labels: { "k8s-app": "kube-dns" } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { "k8s-app": "kube-dns" } },
          template: {
            metadata: { labels: { "k8s-app": "kube-dns" } },
            spec: {
              containers: [
                {
                  name: "coredns",
                  image: COREDNS_1_36,
                  args: ["-conf", "/etc/coredns/Corefile"],
                  volumeMounts: [{ name: "config-volume", mountPath: "/etc/coredns", readOnly: true }],
                },
              ],
              volumes: [
                {
                  name: "config-volume",
                  configMap: { name: "coredns", items: [{ key: "Corefile", path: "Corefile" }] },
                },
              ],
              ...NEWER_FIELD,
            },
          },
        },
      },
    });
  }

  before(async () => {
    api = await startApiServer({ extraArgs: ["--feature-gates=GenericWorkload=true"] });
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
              ...NEWER_FIELD,
            },
          },
        },
      },
    });
    await createCoreDNS();
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
        { name: "coredns", when: "AfterRollout", done: true },
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

    const daemonSet = await kubeRequestOk<{
      spec: { template: { spec: { containers: { image: string }[]; schedulingGroup?: unknown } } };
    }>(api.kubeConfig, "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy");
    assert.equal(daemonSet.spec.template.spec.containers[0].image, "registry.k8s.io/kube-proxy:v1.37.2");
    assert.deepEqual(daemonSet.spec.template.spec.schedulingGroup, NEWER_FIELD.schedulingGroup, "a newer field kept");

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
    // The sample template pins no CoreDNS: an upgrade leaves it where kubeadm init put it (as KCP).
    assert.equal(step(afterwards.steps, "coredns").done, true);
    assert.match(await access.prepareWorkload(target, cluster(), "coredns", template), /already done/);
    assert.equal((await readCoreDNS()).spec.template.spec.containers[0].image, COREDNS_1_36);
  });

  it("moves CoreDNS to a template's dns.imageTag once, keeping the rest of the Deployment and the Corefile", async () => {
    const target = controlPlane("v1.37.2", {}, "kubeadm-coredns");
    const pinned = pinningTemplate("kubeadm-coredns", "v1.14.6");
    const coredns = step((await access.workloadSteps(target, cluster(), pinned)).steps, "coredns");
    assert.deepEqual(
      { when: coredns.when, done: coredns.done, blocked: coredns.blocked },
      { when: "AfterRollout", done: false, blocked: undefined },
    );
    assert.equal(
      coredns.detail,
      `Deployment kube-system/coredns of the workload cluster runs ${COREDNS_1_36}, not ${COREDNS_1_37}`,
    );
    assert.match(
      await access.prepareWorkload(target, cluster(), "coredns", pinned),
      /^moved .* to .*:v1\.14\.6; ConfigMap kube-system\/kubeadm-config of the workload cluster names it for joining Machines: \/dns: \(absent\) → \{"imageTag":"v1\.14\.6"\}$/,
    );
    // As KCP: every later control-plane join pre-pulls CoreDNS from what kubeadm-config names.
    assert.deepEqual(await kubeadmConfigDNS(), { imageTag: "v1.14.6" });
    const moved = await readCoreDNS();
    assert.deepEqual(
      moved.spec.template.spec.containers.map(({ name, image, args }) => ({ name, image, args })),
      [{ name: "coredns", image: COREDNS_1_37, args: ["-conf", "/etc/coredns/Corefile"] }],
    );
    assert.deepEqual(
      moved.spec.template.spec.volumes.map(({ name }) => name),
      ["config-volume"],
    );
    assert.deepEqual(moved.spec.template.spec.schedulingGroup, NEWER_FIELD.schedulingGroup, "a newer field kept");

    // A second run finds it done and writes nothing.
    assert.match(await access.prepareWorkload(target, cluster(), "coredns", pinned), /already done/);
    assert.equal((await readCoreDNS()).metadata.resourceVersion, moved.metadata.resourceVersion);
    assert.equal(step((await access.workloadSteps(target, cluster(), pinned)).steps, "coredns").done, true);
    const corefile = await kubeRequestOk<{ data: Record<string, string> }>(
      api.kubeConfig,
      "/api/v1/namespaces/kube-system/configmaps/coredns",
    );
    assert.deepEqual(corefile.data, { Corefile: COREFILE });
  });

  it("writes the pin into kubeadm-config where CoreDNS already runs it and kubeadm-config names a retired registry", async () => {
    // kubeadm init from an older template that pinned CoreDNS in a mirror since retired (or a Quorum that moved the
    // Deployment without writing kubeadm-config): every `kubeadm join --control-plane` would fail its image pre-pull.
    const configMap = await readKubeadmConfig();
    const document = parse(configMap.data.ClusterConfiguration) as Record<string, unknown>;
    document.dns = { imageRepository: "old-mirror.example/coredns", imageTag: "v1.14.2" };
    await kubeRequestOk(api.kubeConfig, KUBEADM_CONFIG_PATH, {
      method: "PUT",
      body: { ...configMap, data: { ClusterConfiguration: stringify(document) } },
    });
    const target = controlPlane("v1.37.2", {}, "kubeadm-coredns-config");
    const pinned = pinningTemplate("kubeadm-coredns-config", "v1.14.6");
    const coredns = step((await access.workloadSteps(target, cluster(), pinned)).steps, "coredns");
    assert.equal(coredns.done, false);
    assert.equal(
      coredns.detail,
      `Deployment kube-system/coredns of the workload cluster runs ${COREDNS_1_37}, but ConfigMap kube-system/kubeadm-config ` +
        "of the workload cluster, which joining Machines pre-pull CoreDNS from, differs: " +
        '/dns/imageTag: "v1.14.2" → "v1.14.6"; /dns/imageRepository: "old-mirror.example/coredns" → (removed)',
    );
    const deployment = await readCoreDNS();
    assert.match(
      await access.prepareWorkload(target, cluster(), "coredns", pinned),
      /^updated ConfigMap kube-system\/kubeadm-config/,
    );
    assert.deepEqual(await kubeadmConfigDNS(), { imageTag: "v1.14.6" });
    assert.equal((await readCoreDNS()).metadata.resourceVersion, deployment.metadata.resourceVersion);
    assert.match(await access.prepareWorkload(target, cluster(), "coredns", pinned), /already done/);
  });

  it("leaves CoreDNS alone under KCP's skip annotation, and looks again once it is removed", async () => {
    const pinned = pinningTemplate("kubeadm-coredns-next", "v1.14.7");
    const skipping = controlPlane(
      "v1.37.2",
      { "controlplane.cluster.x-k8s.io/skip-coredns": "" },
      "kubeadm-coredns-next",
    );
    assert.equal(step((await access.workloadSteps(skipping, cluster(), pinned)).steps, "coredns").done, true);
    assert.match(await access.prepareWorkload(skipping, cluster(), "coredns", pinned), /already done/);
    assert.equal((await readCoreDNS()).spec.template.spec.containers[0].image, COREDNS_1_37);

    // Same version and template, annotation gone: not the skipped result from the done-cache.
    const watching = controlPlane("v1.37.2", {}, "kubeadm-coredns-next");
    const coredns = step((await access.workloadSteps(watching, cluster(), pinned)).steps, "coredns");
    assert.equal(coredns.done, false);
    assert.match(coredns.detail, /not registry\.k8s\.io\/coredns\/coredns:v1\.14\.7$/);
  });

  it("refuses to move CoreDNS backwards, saying why, and writes nothing", async () => {
    const target = controlPlane("v1.37.2", {}, "kubeadm-coredns-old");
    const older = pinningTemplate("kubeadm-coredns-old", "v1.14.2");
    const coredns = step((await access.workloadSteps(target, cluster(), older)).steps, "coredns");
    assert.equal(coredns.done, false);
    assert.match(coredns.blocked ?? "", /stays at .*:v1\.14\.6: dns\.imageTag v1\.14\.2 is older than the v1\.14\.6/);
    const before = await readCoreDNS();
    const config = await readKubeadmConfig();
    await assert.rejects(access.prepareWorkload(target, cluster(), "coredns", older), /is older than/);
    assert.equal((await readCoreDNS()).metadata.resourceVersion, before.metadata.resourceVersion);
    assert.equal((await readKubeadmConfig()).metadata.resourceVersion, config.metadata.resourceVersion);
  });

  it("finds a pinned CoreDNS done while its Deployment does not exist, and looks again once it does", async () => {
    const target = controlPlane("v1.37.2", {}, "kubeadm-coredns-next");
    const pinned = pinningTemplate("kubeadm-coredns-next", "v1.14.7");
    await kubeRequestOk(api.kubeConfig, "/apis/apps/v1/namespaces/kube-system/deployments/coredns", {
      method: "DELETE",
    });
    assert.equal(step((await access.workloadSteps(target, cluster(), pinned)).steps, "coredns").done, true);
    // kubeadm init's addon phase creates it later: the absence is not what the done-cache keeps.
    await createCoreDNS(false);
    const coredns = step((await access.workloadSteps(target, cluster(), pinned)).steps, "coredns");
    assert.equal(coredns.done, false);
    assert.match(coredns.detail, /runs registry\.k8s\.io\/coredns\/coredns:v1\.14\.2, not .*:v1\.14\.7$/);
  });

  it("moves an image only at the resourceVersion it read: someone else's edit in between is a conflict", async () => {
    const path = "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy";
    type DaemonSet = {
      metadata: { resourceVersion: string };
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    const read = await kubeRequestOk<DaemonSet>(api.kubeConfig, path);
    await kubeRequestOk(api.kubeConfig, path, {
      method: "PATCH",
      body: { metadata: { annotations: { "example.com/edited": "by someone else" } } },
    });
    const call = new WorkloadClients(secrets).caller(NS, CLUSTER, undefined, new Date());
    const move = {
      ...KUBE_PROXY,
      kind: "DaemonSet",
      container: "kube-proxy",
      image: "example.com/kube-proxy:v9",
    } as const;
    await assert.rejects(
      moveImage(
        call,
        { ...move, resourceVersion: read.metadata.resourceVersion },
        "update DaemonSet kube-system/kube-proxy",
      ),
      /HTTP 409/,
    );
    const after = await kubeRequestOk<DaemonSet>(api.kubeConfig, path);
    assert.equal(after.spec.template.spec.containers[0].image, read.spec.template.spec.containers[0].image);
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

  it("reads the Nodes kubeadm labelled control-plane and those a Machine's nodeRef names, never the workers", async () => {
    const node = (name: string, labels: Record<string, string>) =>
      kubeRequestOk(api.kubeConfig, "/api/v1/nodes", { body: { metadata: { name, labels } } });
    // kubeadm labels a control-plane Node in its join's last phase; a join that stopped before it leaves it unlabelled.
    await node("ip-10-200-1-2", { "node-role.kubernetes.io/control-plane": "", "kubernetes.io/os": "linux" });
    await node("ip-10-200-1-3", { "kubernetes.io/os": "linux" });
    for (const worker of ["worker-a", "worker-b", "worker-c"]) await node(worker, { "kubernetes.io/os": "linux" });
    const machine = (name: string, nodeRef?: string) =>
      ({
        metadata: { name, namespace: NS },
        spec: {},
        status: nodeRef ? { nodeRef: { name: nodeRef } } : {},
      }) as Machine;
    const machines = [
      machine("qcp-a", "ip-10-200-1-2"),
      machine("qcp-b", "ip-10-200-1-3"),
      machine("qcp-c", "ip-10-200-1-9"),
      machine("qcp-d"),
    ];
    const query = nodeQuery(controlPlane("v1.36.3"), machines);
    const names = (await access.nodes(controlPlane("v1.36.3"), cluster(), query)).map((read) => read.metadata.name);
    assert.deepEqual(names, ["ip-10-200-1-2", "ip-10-200-1-3"], "a nodeRef to a Node that is gone reads nothing");
    const every = await access.nodes(controlPlane("v1.36.3"), cluster());
    assert.equal(every.length, 5, "without a query (another flavour), every Node");
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
