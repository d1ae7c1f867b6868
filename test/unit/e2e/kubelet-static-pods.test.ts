// The process kubelet's reading of static pod manifests (e2e/provider/kubeadm/static-pods.ts), on the manifests
// kubeadm v1.37.2 writes (fixtures/, from `kubeadm init phase ... --dry-run`).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import {
  binaryForImage,
  mirrorPod,
  mirrorPodStatus,
  parseStaticPod,
  podCommand,
} from "../../../e2e/provider/kubeadm/static-pods.ts";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");
const etcdYaml = readFileSync(join(fixtures, "kubeadm-1.37-etcd.yaml"), "utf8");
const apiServerYaml = readFileSync(join(fixtures, "kubeadm-1.37-kube-apiserver.yaml"), "utf8");
const NODE = "ip-10-200-0-5";

// A bin/ with the binaries make deps builds, as empty files: only their existence is looked at.
const binDir = mkdtempSync(join(tmpdir(), "quorum-unit-bin-"));
for (const name of [
  "kube-apiserver-1.37",
  "kube-apiserver-1.36",
  "kube-controller-manager-1.37",
  "kube-scheduler-1.36",
]) {
  writeFileSync(join(binDir, name), "");
}
for (const name of ["etcd-3.7", "etcd-3.6"]) writeFileSync(join(binDir, name), "");
after(() => rmSync(binDir, { recursive: true, force: true }));

describe("an image maps to the local binary of its component and minor version", () => {
  const cases: [string, string][] = [
    ["registry.k8s.io/kube-apiserver:v1.37.2", "kube-apiserver-1.37"],
    ["registry.k8s.io/kube-apiserver:v1.36.3", "kube-apiserver-1.36"],
    ["registry.k8s.io/kube-controller-manager:v1.37.2", "kube-controller-manager-1.37"],
    ["registry.k8s.io/kube-scheduler:v1.36.3", "kube-scheduler-1.36"],
    ["registry.k8s.io/etcd:3.7.0-0", "etcd-3.7"],
    ["registry.k8s.io/etcd:3.6.5-0", "etcd-3.6"],
    ["mirror.example.com/k8s/kube-apiserver:v1.37.2", "kube-apiserver-1.37"],
  ];
  for (const [image, binary] of cases) {
    it(`${image} runs bin/${binary}`, () => {
      assert.equal(binaryForImage(image, binDir), join(binDir, binary));
    });
  }

  const refused: [string, RegExp][] = [
    ["registry.k8s.io/etcd:3.5.21-0", /no local binary .*etcd-3\.5.*make deps/],
    ["registry.k8s.io/kube-controller-manager:v1.36.3", /no local binary .*kube-controller-manager-1\.36/],
    ["registry.k8s.io/coredns/coredns:v1.12.1", /no local binary for coredns/],
    ["registry.k8s.io/kube-apiserver:latest", /no local binary/],
  ];
  for (const [image, message] of refused) {
    it(`${image} is refused with the reason, not run with another version`, () => {
      assert.throws(() => binaryForImage(image, binDir), message);
    });
  }
});

describe("a manifest becomes a command line", () => {
  it("kubeadm's etcd manifest runs bin/etcd-3.7 with the container's flags after the image's binary name", () => {
    const pod = parseStaticPod("/etc/kubernetes/manifests/etcd.yaml", etcdYaml, NODE);
    const command = podCommand(pod, binDir, NODE);
    assert.equal(command.command, join(binDir, "etcd-3.7"));
    assert.equal(command.args[0], "--advertise-client-urls=https://10.200.0.5:2379");
    assert.ok(command.args.includes("--name=ip-10-200-0-5"));
    assert.ok(!command.args.includes("etcd"), "command[0] is replaced, not passed as an argument");
    assert.equal(command.args.length, 19);
    assert.equal(command.env.HOSTNAME, NODE);
  });

  it("args follow command and env comes from the container", () => {
    const yaml = [
      "apiVersion: v1",
      "kind: Pod",
      "metadata: { name: kube-scheduler, namespace: kube-system }",
      "spec:",
      "  containers:",
      "  - name: kube-scheduler",
      "    image: registry.k8s.io/kube-scheduler:v1.36.3",
      "    command: [kube-scheduler, --v=2]",
      "    args: [--leader-elect=true]",
      "    env: [{ name: GODEBUG, value: 'x509sha1=1' }]",
    ].join("\n");
    const command = podCommand(parseStaticPod("/m/s.yaml", yaml, NODE), binDir, NODE);
    assert.equal(command.command, join(binDir, "kube-scheduler-1.36"));
    assert.deepEqual(command.args, ["--v=2", "--leader-elect=true"]);
    assert.equal(command.env.GODEBUG, "x509sha1=1");
  });

  it("a container without a command or with env from the API is refused with the fix", () => {
    const withoutCommand = parse(etcdYaml) as { spec: { containers: { command?: string[] }[] } };
    delete withoutCommand.spec.containers[0].command;
    const noCommand = stringify(withoutCommand);
    assert.throws(() => podCommand(parseStaticPod("/m/e.yaml", noCommand, NODE), binDir, NODE), /has no command/);
    const valueFrom = etcdYaml.replace(
      "    image: registry.k8s.io/etcd",
      "    env: [{ name: POD_IP, valueFrom: { fieldRef: { fieldPath: status.podIP } } }]\n    image: registry.k8s.io/etcd",
    );
    assert.throws(
      () => podCommand(parseStaticPod("/m/e.yaml", valueFrom, NODE), binDir, NODE),
      /POD_IP uses valueFrom/,
    );
  });

  it("a host path mounted at another path is refused: the process would look for its files in the wrong place", () => {
    const moved = etcdYaml.replace("  - mountPath: /var/lib/etcd\n", "  - mountPath: /data\n");
    assert.throws(
      () => podCommand(parseStaticPod("/m/e.yaml", moved, NODE), binDir, NODE),
      /volume etcd-data mounts host path \/var\/lib\/etcd at \/data/,
    );
  });

  it("a file that is not a one-container Pod is refused with its path", () => {
    assert.throws(
      () => parseStaticPod("/m/x.yaml", "kind: Deployment\napiVersion: apps/v1\n", NODE),
      /\/m\/x.yaml: not a v1 Pod/,
    );
    assert.throws(() => parseStaticPod("/m/x.yaml", "a: [", NODE), /\/m\/x.yaml: not YAML/);
    const twoContainers = etcdYaml.replace("  hostNetwork: true", "  - { name: b, image: b }\n  hostNetwork: true");
    assert.throws(() => parseStaticPod("/m/x.yaml", twoContainers, NODE), /2 containers/);
  });

  it("the hash changes with the manifest and with nothing else", () => {
    const first = parseStaticPod("/m/etcd.yaml", etcdYaml, NODE).hash;
    assert.equal(parseStaticPod("/m/etcd.yaml", etcdYaml, NODE).hash, first);
    assert.notEqual(parseStaticPod("/m/etcd.yaml", etcdYaml.replace("10000", "5000"), NODE).hash, first);
    assert.match(first, /^[0-9a-f]{32}$/);
  });
});

describe("the mirror pod of a static pod", () => {
  const pod = parseStaticPod("/etc/kubernetes/manifests/etcd.yaml", etcdYaml, NODE);
  const node = { name: NODE, uid: "0d6a1f52-node-uid" };
  const mirror = mirrorPod(pod, node) as {
    metadata: {
      name: string;
      namespace: string;
      labels: Record<string, string>;
      annotations: Record<string, string>;
      ownerReferences: unknown[];
    };
    spec: { nodeName: string; tolerations: unknown[]; priorityClassName: string };
  };

  it("is named <pod>-<node> in the manifest's namespace and bound to the node", () => {
    assert.equal(mirror.metadata.name, `etcd-${NODE}`);
    assert.equal(mirror.metadata.namespace, "kube-system");
    assert.equal(mirror.spec.nodeName, NODE);
    assert.equal(mirror.spec.priorityClassName, "system-node-critical");
    assert.deepEqual(mirror.metadata.labels, { component: "etcd", tier: "control-plane" });
  });

  it("keeps kubeadm's annotations (etcd-join finds the endpoints there) and adds the kubelet's", () => {
    assert.deepEqual(mirror.metadata.annotations, {
      "kubeadm.kubernetes.io/etcd.advertise-client-urls": "https://10.200.0.5:2379",
      "kubernetes.io/config.hash": pod.hash,
      "kubernetes.io/config.mirror": pod.hash,
      "kubernetes.io/config.source": "file",
    });
  });

  it("is owned by its Node as NodeRestriction demands: controller, no blockOwnerDeletion", () => {
    assert.deepEqual(mirror.metadata.ownerReferences, [
      { apiVersion: "v1", kind: "Node", name: NODE, uid: node.uid, controller: true },
    ]);
  });

  it("tolerates every NoExecute taint, once", () => {
    assert.deepEqual(mirror.spec.tolerations, [{ operator: "Exists", effect: "NoExecute" }]);
    const again = mirrorPod(
      {
        ...pod,
        manifest: { ...pod.manifest, spec: { ...pod.manifest.spec, tolerations: mirror.spec.tolerations as [] } },
      },
      node,
    ) as typeof mirror;
    assert.equal(again.spec.tolerations.length, 1);
  });

  it("is Running and Ready while the process runs, and waits with the reason when it cannot start", () => {
    type Status = {
      phase: string;
      podIP: string;
      conditions: { type: string; status: string }[];
      containerStatuses: { ready: boolean; restartCount: number; state: Record<string, { reason?: string }> }[];
    };
    const t = "2026-12-02T08:00:00.000Z";
    const running = mirrorPodStatus(pod, { runningSince: t, restartCount: 2 }, "10.200.0.5", t) as Status;
    assert.equal(running.phase, "Running");
    assert.equal(running.podIP, "10.200.0.5");
    assert.equal(running.conditions.find((c) => c.type === "Ready")?.status, "True");
    assert.equal(running.containerStatuses[0].ready, true);
    assert.equal(running.containerStatuses[0].restartCount, 2);
    const waiting = { reason: "ErrImagePull", message: "no local binary" };
    const refused = mirrorPodStatus(pod, { restartCount: 0, waiting }, "10.200.0.5", t) as Status;
    assert.equal(refused.phase, "Pending");
    assert.equal(refused.conditions.find((c) => c.type === "Ready")?.status, "False");
    assert.equal(refused.containerStatuses[0].state.waiting?.reason, "ErrImagePull");
  });

  it("of kubeadm's kube-apiserver manifest keeps its advertise-address annotation", () => {
    const apiServer = parseStaticPod("/m/kube-apiserver.yaml", apiServerYaml, NODE);
    const annotations = (mirrorPod(apiServer, node) as { metadata: { annotations: Record<string, string> } }).metadata
      .annotations;
    assert.equal(annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"], "10.200.0.5:6443");
    assert.equal(podCommand(apiServer, binDir, NODE).command, join(binDir, "kube-apiserver-1.37"));
  });
});
