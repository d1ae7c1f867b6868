// The kubeadm scenarios' verdicts on which version a control plane runs (e2e/lib/kubeadm-checks.ts): a Machine left at
// the old version is caught, and every failure names the Machine, the file or process, and what was seen.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  CONTROL_PLANE_COMPONENTS,
  controlPlaneVerdict,
  kubeadmConfigVerdict,
  kubeProxyVerdict,
  parseImageList,
  type Component,
  type ExpectedControlPlane,
  type NodeObservation,
} from "../../../e2e/lib/kubeadm-checks.ts";

const IMAGES_1_37 = `registry.k8s.io/kube-apiserver:v1.37.2
registry.k8s.io/kube-controller-manager:v1.37.2
registry.k8s.io/kube-scheduler:v1.37.2
registry.k8s.io/kube-proxy:v1.37.2
registry.k8s.io/coredns/coredns:v1.12.4
registry.k8s.io/pause:3.10.1
registry.k8s.io/etcd:3.7.0-0
`;

const expected: ExpectedControlPlane = {
  version: "v1.37.2",
  images: parseImageList(IMAGES_1_37),
  binaries: {
    etcd: { link: "bin/etcd-3.7", path: "/cache/etcd-v3.7.3/etcd" },
    "kube-apiserver": { link: "bin/kube-apiserver-1.37", path: "/cache/k8s-v1.37.2/kube-apiserver" },
    "kube-controller-manager": {
      link: "bin/kube-controller-manager-1.37",
      path: "/cache/k8s-v1.37.2/kube-controller-manager",
    },
    "kube-scheduler": { link: "bin/kube-scheduler-1.37", path: "/cache/k8s-v1.37.2/kube-scheduler" },
  },
};

const OLD_BINARIES: Record<Component, string> = {
  etcd: "/cache/etcd-v3.6.16/etcd",
  "kube-apiserver": "/cache/k8s-v1.36.3/kube-apiserver",
  "kube-controller-manager": "/cache/k8s-v1.36.3/kube-controller-manager",
  "kube-scheduler": "/cache/k8s-v1.36.3/kube-scheduler",
};

/** A Machine whose manifests and processes are all at 1.37.2, as the upgrade should leave it. */
function upgradedNode(machine = "demo-abcde", pidBase = 100): NodeObservation {
  return {
    machine,
    host: "ip-10-200-1-4",
    manifests: CONTROL_PLANE_COMPONENTS.map((component) => ({
      component,
      file: `/stack/machines/${machine}/root/etc/kubernetes/manifests/${component}.yaml`,
      image: expected.images[component],
      argv: [`--name=${component}`, "--v=2"],
    })),
    processes: CONTROL_PLANE_COMPONENTS.map((component, index) => ({
      component,
      pid: pidBase + index,
      exe: expected.binaries[component].path,
      argv: [`--name=${component}`, "--v=2"],
    })),
  };
}

/** The same Machine with `component` still at 1.36: its manifest names the old image and the old binary runs. */
function withOld(node: NodeObservation, component: Component): NodeObservation {
  const oldImage = component === "etcd" ? "registry.k8s.io/etcd:3.6.5-0" : `registry.k8s.io/${component}:v1.36.3`;
  return {
    ...node,
    manifests: node.manifests.map((entry) => (entry.component === component ? { ...entry, image: oldImage } : entry)),
    processes: node.processes.map((entry) =>
      entry.component === component ? { ...entry, exe: OLD_BINARIES[component] } : entry,
    ),
  };
}

describe("kubeadm's image list gives the image of every control-plane component and kube-proxy", () => {
  it("maps each repository name to the full image, the etcd one included", () => {
    const images = parseImageList(IMAGES_1_37);
    assert.equal(images.etcd, "registry.k8s.io/etcd:3.7.0-0");
    assert.equal(images["kube-apiserver"], "registry.k8s.io/kube-apiserver:v1.37.2");
    assert.equal(images["kube-proxy"], "registry.k8s.io/kube-proxy:v1.37.2");
  });

  it("refuses a list without etcd instead of expecting nothing of it", () => {
    const withoutEtcd = IMAGES_1_37.replace(/^.*etcd.*$/m, "");
    assert.throws(() => parseImageList(withoutEtcd), /printed no image for etcd/);
  });
});

describe("the control-plane verdict tells an upgraded Machine from one left at the old version", () => {
  it("passes Machines whose manifests and processes are all at the new version", () => {
    const verdict = controlPlaneVerdict([upgradedNode("m1", 100), upgradedNode("m2", 200)], expected);
    assert.deepEqual(verdict.failed, []);
    assert.equal(verdict.passed.length, 2);
    assert.match(verdict.passed[1], /8 processes/);
  });

  for (const component of CONTROL_PLANE_COMPONENTS) {
    it(`fails a Machine whose ${component} is still at the old version, naming the Machine, file, image and binary`, () => {
      const verdict = controlPlaneVerdict([upgradedNode("m1"), withOld(upgradedNode("m2", 200), component)], expected);
      assert.deepEqual(verdict.passed, []);
      assert.equal(verdict.failed.length, 2);
      assert.match(
        verdict.failed[0],
        new RegExp(`^Machine m2 \\(ip-10-200-1-4\\): .*/m2/.*/${component}\\.yaml names`),
      );
      assert.ok(verdict.failed[0].includes(`, expected ${expected.images[component]}`), verdict.failed[0]);
      assert.ok(verdict.failed[1].includes(`runs ${OLD_BINARIES[component]}, expected`), verdict.failed[1]);
      assert.ok(verdict.failed[1].includes(`(${expected.binaries[component].link})`), verdict.failed[1]);
    });
  }

  it("fails a Machine on which a component runs no process, or two", () => {
    const node = upgradedNode("m1");
    const none = { ...node, processes: node.processes.filter((entry) => entry.component !== "kube-scheduler") };
    assert.deepEqual(controlPlaneVerdict([none], expected).failed, [
      "Machine m1 (ip-10-200-1-4): no kube-scheduler process runs in its network namespace",
    ]);
    const twice = { ...node, processes: [...node.processes, { ...node.processes[1], pid: 999 }] };
    assert.match(controlPlaneVerdict([twice], expected).failed[0], /2 kube-apiserver processes .*pids 101, 999/);
  });

  it("fails a process whose arguments are not its manifest's, naming the first that differs", () => {
    const node = upgradedNode("m1");
    node.processes[0] = { ...node.processes[0], argv: ["--name=etcd", "--v=4"] };
    assert.deepEqual(controlPlaneVerdict([node], expected).failed, [
      `Machine m1 (ip-10-200-1-4): etcd pid 100 does not run the arguments of ${node.manifests[0].file}: argument 2 is "--v=4", the manifest has "--v=2"`,
    ]);
  });

  it("fails a manifest that could not be read, naming the file and the cause", () => {
    const node = upgradedNode("m1");
    node.manifests[1] = { component: "kube-apiserver", file: "/x/kube-apiserver.yaml", error: "ENOENT" };
    assert.deepEqual(controlPlaneVerdict([node], expected).failed, [
      "Machine m1 (ip-10-200-1-4): /x/kube-apiserver.yaml: ENOENT",
    ]);
  });

  it("fails when there is no Machine to look at", () => {
    assert.equal(controlPlaneVerdict([], expected).failed.length, 1);
  });
});

describe("kubeadm-config and kube-proxy must say the new version", () => {
  const configMap = (version: string) =>
    JSON.stringify({
      data: {
        ClusterConfiguration: `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: ${version}\n`,
      },
    });
  const daemonSet = (image: string) =>
    JSON.stringify({ spec: { template: { spec: { containers: [{ name: "kube-proxy", image }] } } } });

  it("passes a kubeadm-config at the new version and fails one at the old, saying what it says", () => {
    assert.deepEqual(kubeadmConfigVerdict(200, configMap("v1.37.2"), "v1.37.2").failed, []);
    assert.deepEqual(kubeadmConfigVerdict(200, configMap("v1.36.3"), "v1.37.2").failed, [
      "the workload cluster's kube-system/kubeadm-config ConfigMap's ClusterConfiguration says kubernetesVersion: v1.36.3, expected v1.37.2",
    ]);
    assert.match(kubeadmConfigVerdict(404, "not found", "v1.37.2").failed[0], /HTTP 404/);
  });

  it("passes kube-proxy at the new image, fails it at the old one and when kubeadm never created it", () => {
    assert.deepEqual(
      kubeProxyVerdict(200, daemonSet(expected.images["kube-proxy"]), expected.images["kube-proxy"]).failed,
      [],
    );
    assert.deepEqual(
      kubeProxyVerdict(200, daemonSet("registry.k8s.io/kube-proxy:v1.36.3"), expected.images["kube-proxy"]).failed,
      [
        "the workload cluster's kube-system/kube-proxy DaemonSet's container kube-proxy runs image registry.k8s.io/kube-proxy:v1.36.3, expected registry.k8s.io/kube-proxy:v1.37.2",
      ],
    );
    assert.match(kubeProxyVerdict(404, "", expected.images["kube-proxy"]).failed[0], /does not exist \(HTTP 404\)/);
  });
});
