// The kubeadm-config ClusterConfiguration a joining node renders its static pods from, brought to the spec the way
// KCP brings it (issue 17), starting from what kubeadm 1.36 uploads after CABPK's init from the sample
// KubeadmConfigTemplate (config/samples/cluster-kubeadm.yaml), defaults included.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse } from "yaml";
import {
  ClusterConfigurationError,
  syncClusterConfiguration,
  syncDNSImage,
} from "../../../../../src/adapters/workload/kubeadm/cluster-configuration.ts";
import { retagImage } from "../../../../../src/adapters/workload/kubeadm/images.ts";
import { kubeadmBindings } from "../../../../../src/adapters/workload/kubeadm/permissions.ts";
import { uploadedClusterConfiguration } from "../../../../env/kubeadm-uploaded.ts";

const UPLOADED = uploadedClusterConfiguration({
  clusterName: "demo",
  kubernetesVersion: "v1.36.3",
  controlPlaneEndpoint: "10.200.1.254:6443",
});

/** The sample template's clusterConfiguration (bootstrap.cluster.x-k8s.io/v1beta2). */
const SAMPLE = { apiServer: { certSANs: ["localhost", "127.0.0.1"] } };

describe("syncing the kubeadm-config ClusterConfiguration", () => {
  it("finds nothing to change for the version and template kubeadm init used, defaults included", () => {
    const result = syncClusterConfiguration(UPLOADED, SAMPLE, "v1.36.3");
    assert.deepEqual(result.changes, []);
    assert.equal(result.yaml, undefined);
  });

  it("moves kubernetesVersion for an upgrade and keeps everything kubeadm init wrote", () => {
    const result = syncClusterConfiguration(UPLOADED, SAMPLE, "v1.37.2");
    assert.deepEqual(result.changes, ['/kubernetesVersion: "v1.36.3" → "v1.37.2"']);
    const written = parse(result.yaml ?? "") as Record<string, unknown>;
    const expected = parse(UPLOADED) as Record<string, unknown>;
    // Empty mappings mean the same to kubeadm and are not written back.
    for (const key of ["controllerManager", "dns", "proxy", "scheduler"]) delete expected[key];
    assert.deepEqual(written, { ...expected, kubernetesVersion: "v1.37.2" });
  });

  it("replaces the control-plane components with a new template's, so joiners run its extra args", () => {
    const template = {
      apiServer: { certSANs: ["localhost"], extraArgs: [{ name: "audit-log-maxage", value: "30" }] },
      controllerManager: { extraArgs: [{ name: "node-monitor-grace-period", value: "50s" }] },
      etcd: { local: { extraArgs: [{ name: "quota-backend-bytes", value: "8589934592" }] } },
    };
    const result = syncClusterConfiguration(UPLOADED, template, "v1.36.3");
    const written = parse(result.yaml ?? "") as Record<string, Record<string, unknown>>;
    assert.deepEqual(written.apiServer, template.apiServer);
    assert.deepEqual(written.controllerManager, template.controllerManager);
    // etcd's extra args come from the template; the data dir kubeadm defaulted stays.
    assert.deepEqual(written.etcd, {
      local: { extraArgs: [{ name: "quota-backend-bytes", value: "8589934592" }], dataDir: "/var/lib/etcd" },
    });
    assert.equal(written.networking.serviceSubnet, "10.96.0.0/12");
    assert.ok(result.changes.some((change) => change.startsWith("/apiServer/extraArgs")));
    assert.ok(result.changes.some((change) => change.startsWith('/apiServer/certSANs/1: "127.0.0.1" → (removed)')));
  });

  it("reads a v1beta1 template's extraArgs map as kubeadm v1beta4's list", () => {
    const result = syncClusterConfiguration(
      UPLOADED,
      { apiServer: { extraArgs: { "enable-admission-plugins": "NodeRestriction", "audit-log-maxage": "30" } } },
      "v1.36.3",
    );
    const written = parse(result.yaml ?? "") as { apiServer: { extraArgs: unknown } };
    assert.deepEqual(written.apiServer.extraArgs, [
      { name: "audit-log-maxage", value: "30" },
      { name: "enable-admission-plugins", value: "NodeRestriction" },
    ]);
  });

  it("drops feature gates the template no longer sets, and sets the image repository and validity it names", () => {
    const withGates = UPLOADED.replace(
      "kind: ClusterConfiguration\n",
      "featureGates:\n  EtcdLearnerMode: true\nkind: ClusterConfiguration\n",
    );
    const result = syncClusterConfiguration(
      withGates,
      { ...SAMPLE, imageRepository: "mirror.example/k8s", certificateValidityPeriodDays: 90 },
      "v1.36.3",
    );
    const written = parse(result.yaml ?? "") as Record<string, unknown>;
    assert.equal(written.featureGates, undefined);
    assert.equal(written.imageRepository, "mirror.example/k8s");
    assert.equal(written.certificateValidityPeriod, "2160h0m0s");
  });

  it("goes back to kubeadm's certificate validity and key algorithm when a new template no longer sets them", () => {
    // The cluster was created from a template asking for 30-day certificates and ECDSA keys; the upgrade's template
    // asks for neither: KCP drops both fields, so joiners get kubeadm's defaults (a year, RSA-2048), not 30 days
    // that nothing renews.
    const fromOld = UPLOADED.replace(
      "certificateValidityPeriod: 8760h0m0s",
      "certificateValidityPeriod: 720h0m0s",
    ).replace("encryptionAlgorithm: RSA-2048", "encryptionAlgorithm: ECDSA-P256");
    const result = syncClusterConfiguration(fromOld, SAMPLE, "v1.36.3");
    assert.deepEqual(result.changes, [
      '/encryptionAlgorithm: "ECDSA-P256" → (removed)',
      '/certificateValidityPeriod: "720h0m0s" → (removed)',
    ]);
    // kubeadm's defaults, as init uploads them, and no field at all are both no change.
    assert.deepEqual(syncClusterConfiguration(UPLOADED, SAMPLE, "v1.36.3").changes, []);
    const bare = UPLOADED.replace("certificateValidityPeriod: 8760h0m0s\n", "").replace(
      "encryptionAlgorithm: RSA-2048\n",
      "",
    );
    assert.deepEqual(syncClusterConfiguration(bare, SAMPLE, "v1.36.3").changes, []);
    // The old template's own values are no change.
    const old = { ...SAMPLE, certificateValidityPeriodDays: 30, encryptionAlgorithm: "ECDSA-P256" };
    assert.deepEqual(syncClusterConfiguration(fromOld, old, "v1.36.3").changes, []);
    // Without a clusterConfiguration in the template, only the version moves (as KCP).
    assert.deepEqual(syncClusterConfiguration(fromOld, undefined, "v1.36.3").changes, []);
  });

  it("turns on the kubelet local mode for 1.31 to 1.35 unless the template sets it, as KCP does", () => {
    const old = UPLOADED.replace("v1.36.3", "v1.33.4");
    const on = parse(syncClusterConfiguration(old, SAMPLE, "v1.34.1").yaml ?? "") as { featureGates?: unknown };
    assert.deepEqual(on.featureGates, { ControlPlaneKubeletLocalMode: true });
    const off = parse(
      syncClusterConfiguration(old, { ...SAMPLE, featureGates: { ControlPlaneKubeletLocalMode: false } }, "v1.34.1")
        .yaml ?? "",
    ) as { featureGates?: unknown };
    assert.deepEqual(off.featureGates, { ControlPlaneKubeletLocalMode: false });
  });

  it("writes strings Go's YAML 1.1 reads as booleans quoted, and rewrites a document that has one plain", () => {
    // GOGC=off for the API server: kubeadm init (Go) uploads "off" quoted; a plain off is the boolean false to kubeadm
    // (sigs.k8s.io/yaml), and `kubeadm join` cannot decode the document (test/integration/go-yaml-readers.test.ts).
    const apiServer = { ...SAMPLE.apiServer, extraEnvs: [{ name: "GOGC", value: "off" }] };
    const quoted = UPLOADED.replace("apiServer:\n", 'apiServer:\n  extraEnvs:\n  - name: GOGC\n    value: "off"\n');
    assert.deepEqual(syncClusterConfiguration(quoted, { apiServer }, "v1.36.3").changes, []);
    const upgraded = syncClusterConfiguration(quoted, { apiServer }, "v1.37.2").yaml ?? "";
    assert.match(upgraded, /value: "off"/);
    const plain = quoted.replace('value: "off"', "value: off");
    const mended = syncClusterConfiguration(plain, { apiServer }, "v1.36.3");
    assert.deepEqual(mended.changes, ['/apiServer/extraEnvs/0/value: false → "off"']);
    assert.match(mended.yaml ?? "", /value: "off"/);
  });

  it("brings dns to the template's CoreDNS pin, dropping what it leaves unset, and nothing else", () => {
    const initial = UPLOADED.replace(
      "dns: {}",
      "dns:\n  imageRepository: old-mirror.example/coredns\n  imageTag: v1.14.2",
    );
    const result = syncDNSImage(initial, { imageTag: "v1.14.6" });
    assert.deepEqual(result.changes, [
      '/dns/imageTag: "v1.14.2" → "v1.14.6"',
      '/dns/imageRepository: "old-mirror.example/coredns" → (removed)',
    ]);
    const written = parse(result.yaml ?? "") as Record<string, unknown>;
    assert.deepEqual(written.dns, { imageTag: "v1.14.6" });
    assert.deepEqual(syncDNSImage(result.yaml ?? "", { imageTag: "v1.14.6" }).changes, []);
    assert.deepEqual(syncDNSImage(UPLOADED, {}).changes, []);
  });

  it("only moves the version when the template sets no clusterConfiguration", () => {
    const result = syncClusterConfiguration(UPLOADED, undefined, "v1.37.2");
    assert.deepEqual(result.changes, ['/kubernetesVersion: "v1.36.3" → "v1.37.2"']);
  });

  it("refuses a document it must not rewrite, naming the ConfigMap and the fix", () => {
    assert.throws(
      () => syncClusterConfiguration("apiServer: [unclosed", SAMPLE, "v1.37.2"),
      (error: unknown) =>
        error instanceof ClusterConfigurationError &&
        /ConfigMap kube-system\/kubeadm-config: ClusterConfiguration is not YAML .*upload-config/.test(error.message),
    );
    assert.throws(
      () => syncClusterConfiguration("- a\n- b\n", SAMPLE, "v1.37.2"),
      /ClusterConfiguration is not a YAML mapping/,
    );
    assert.throws(
      () => syncClusterConfiguration(UPLOADED.replace("v1beta4", "v1beta3"), SAMPLE, "v1.37.2"),
      /is kubeadm\.k8s\.io\/v1beta3, and Quorum writes only kubeadm\.k8s\.io\/v1beta4/,
    );
  });
});

describe("kube-proxy's image", () => {
  it("moves to the new tag, dropping a digest that pins the old image", () => {
    assert.equal(retagImage("registry.k8s.io/kube-proxy:v1.36.3", "v1.37.2"), "registry.k8s.io/kube-proxy:v1.37.2");
    assert.equal(
      retagImage("registry.k8s.io/kube-proxy:v1.36.3@sha256:0123abcd", "v1.37.2"),
      "registry.k8s.io/kube-proxy:v1.37.2",
    );
    assert.equal(retagImage("localhost:5000/kube-proxy", "v1.37.2"), "localhost:5000/kube-proxy:v1.37.2");
    assert.equal(retagImage("kube-proxy:v1.36.3", "v1.37.2+k3s1"), "kube-proxy:v1.37.2_k3s1");
  });

  it("moves to the repository the template names", () => {
    assert.equal(
      retagImage("registry.k8s.io/kube-proxy:v1.36.3", "v1.37.2", "mirror.example:5000/k8s/"),
      "mirror.example:5000/k8s/kube-proxy:v1.37.2",
    );
  });
});

describe("kubeadm's RBAC for the target version", () => {
  it("asks for both bindings at every version from 1.29, 1.38 included (a 1.36 → 1.38 rollout never ran a 1.37 init)", () => {
    assert.deepEqual(
      kubeadmBindings("v1.37.2").map((binding) => [
        binding.metadata?.name,
        binding.roleRef.name,
        binding.subjects?.[0],
      ]),
      [
        [
          "kubeadm:cluster-admins",
          "cluster-admin",
          { apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "kubeadm:cluster-admins" },
        ],
        [
          "kubeadm:apiserver-kubelet-client",
          "system:kubelet-api-admin",
          { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "kube-apiserver-kubelet-client" },
        ],
      ],
    );
    assert.equal(kubeadmBindings("v1.38.0").length, 2);
    assert.deepEqual(kubeadmBindings("v1.28.9"), []);
    assert.deepEqual(kubeadmBindings("not-a-version"), []);
  });
});
