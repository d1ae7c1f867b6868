// The process kubelet of the kubeadm e2e Machines (e2e/provider/kubeadm/kubelet-main.ts), as a program, on real
// parts and without namespaces: a real kube-apiserver with kubeadm's Node authorizer, NodeRestriction admission and
// bootstrap-token authentication; the real kube-controller-manager's csrapproving and csrsigning controllers with the
// cluster CA, as kubeadm's manifest runs them; the bootstrap token and its RBAC created by real kubeadm
// (`kubeadm init phase bootstrap-token`); a static pod that runs the real etcd 3.7 on 127.0.0.1 and free ports.
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { stringify } from "yaml";
import { startApiServer, type ApiServer } from "../env/apiserver.ts";
import { startControllerManager, type ControllerManager } from "../env/controller-manager.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import { freePort, httpGet } from "../env/net.ts";
import { kubeletClientSetup } from "../env/kubelet-portforward.ts";
import { openPortForward } from "../env/portforward-client.ts";
import { isProcessAlive, makeTempDir, startProcess, type ManagedProcess } from "../env/processes.ts";
import { builtBinary, repoRoot } from "../env/tools.ts";
import { eventually } from "../env/wait.ts";

const TOKEN = "kl0abc.0123456789abcdef";
const VERSION = "v1.37.2";

interface PodInfo {
  name: string;
  hash: string;
  pid?: number;
  restartCount: number;
  waiting?: { reason: string; message: string };
}

interface MirrorPod {
  metadata: {
    name: string;
    annotations: Record<string, string>;
    ownerReferences: { kind: string; name: string; uid: string; controller: boolean }[];
  };
  spec: { nodeName: string; tolerations: { operator?: string; effect?: string }[] };
  status: {
    phase: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { restartCount: number; state: Record<string, { reason?: string; message?: string }> }[];
  };
}

/** A kubeadm-like etcd static pod manifest for the real etcd 3.7, on 127.0.0.1 and the given free ports. */
function etcdManifest(dir: string, clientPort: number, peerPort: number, extraFlags: string[] = []): string {
  const name = "kl-etcd";
  return stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "etcd",
      namespace: "kube-system",
      labels: { component: "etcd", tier: "control-plane" },
      annotations: { "kubeadm.kubernetes.io/etcd.advertise-client-urls": `http://127.0.0.1:${clientPort}` },
    },
    spec: {
      containers: [
        {
          name: "etcd",
          image: "registry.k8s.io/etcd:3.7.0-0",
          command: [
            "etcd",
            `--name=${name}`,
            `--data-dir=${join(dir, "etcd-data")}`,
            `--listen-client-urls=http://127.0.0.1:${clientPort}`,
            `--advertise-client-urls=http://127.0.0.1:${clientPort}`,
            `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
            `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
            `--initial-cluster=${name}=http://127.0.0.1:${peerPort}`,
            ...extraFlags,
          ],
          env: [{ name: "KUBELET_TEST_MARKER", value: "from-the-manifest" }],
        },
      ],
      hostNetwork: true,
      priority: 2000001000,
      priorityClassName: "system-node-critical",
      volumes: [{ name: "etcd-data", hostPath: { path: join(dir, "etcd-data"), type: "DirectoryOrCreate" } }],
    },
  });
}

/** A running process kubelet and the dirs it was given. */
interface Kubelet {
  process: ManagedProcess;
  nodeName: string;
  manifests: string;
  kubeconfig: string;
  certDir: string;
  logDir: string;
  healthz: string;
  pods(): Promise<PodInfo[]>;
}

async function startKubelet(nodeName: string, dir: string, clusterCaFile: string): Promise<Kubelet> {
  const manifests = join(dir, "manifests");
  mkdirSync(manifests, { recursive: true });
  const healthzPort = await freePort("127.0.0.1");
  const kubelet = {
    nodeName,
    manifests,
    kubeconfig: join(dir, "kubelet.conf"),
    certDir: join(dir, "pki"),
    logDir: join(dir, "pods"),
    healthz: `http://127.0.0.1:${healthzPort}/healthz`,
  };
  const proc = startProcess({
    name: `process kubelet ${nodeName}`,
    command: process.execPath,
    args: [
      "--import",
      "tsx",
      join(repoRoot, "e2e/provider/kubeadm/kubelet-main.ts"),
      `--node-name=${nodeName}`,
      `--provider-id=process://kubelet-test/${nodeName}`,
      "--node-ip=127.0.0.1",
      `--bin-dir=${join(repoRoot, "bin")}`,
      `--log-dir=${kubelet.logDir}`,
      `--manifests-dir=${manifests}`,
      `--kubeconfig=${kubelet.kubeconfig}`,
      `--bootstrap-kubeconfig=${join(dir, "bootstrap-kubelet.conf")}`,
      `--cert-dir=${kubelet.certDir}`,
      `--healthz-address=127.0.0.1:${healthzPort}`,
      // A free port: 10250 on 127.0.0.1 may be another test's; the Node reports whichever the server took.
      "--kubelet-port=0",
      `--client-ca-file=${clusterCaFile}`,
      `--kubelet-version=${VERSION}`,
    ],
    cwd: repoRoot,
    logFile: join(dir, "kubelet.log"),
  });
  const pods = async () => {
    const { status, body } = await httpGet(kubelet.healthz.replace("/healthz", "/pods"));
    if (status !== 200) throw new Error(`GET /pods: HTTP ${status}`);
    return JSON.parse(body) as PodInfo[];
  };
  return { ...kubelet, process: proc, pods };
}

describe("the process kubelet", { timeout: 150_000 }, () => {
  let api: ApiServer;
  let kcm: ControllerManager;
  const dir = makeTempDir("process-kubelet");
  const kubelets: Kubelet[] = [];

  before(async () => {
    // As kubeadm: kube-apiserver calls kubelets (pods/portforward) with a client certificate the cluster CA signed.
    const cluster = await kubeletClientSetup(dir);
    api = await startApiServer({
      ca: cluster.ca,
      // kubeadm's kube-apiserver flags that the kubelet's API calls go through; the harness sets RBAC already and
      // the flag is a list that appends.
      extraArgs: [
        "--authorization-mode=Node",
        "--enable-admission-plugins=NodeRestriction",
        "--enable-bootstrap-token-auth=true",
        ...cluster.apiServerArgs,
      ],
    });
    writeFileSync(join(dir, "ca.crt"), api.ca.certPem);
    writeFileSync(join(dir, "ca.key"), api.ca.keyPem, { mode: 0o600 });
    kcm = await startControllerManager(api, {
      controllers: ["csrapproving", "csrsigning"],
      extraArgs: [
        `--cluster-signing-cert-file=${join(dir, "ca.crt")}`,
        `--cluster-signing-key-file=${join(dir, "ca.key")}`,
      ],
    });
    // Real kubeadm creates the bootstrap token and the RBAC that lets its holders create node CSRs, and lets
    // kube-controller-manager auto-approve them (nodeclient) and their renewals (selfnodeclient).
    writeFileSync(
      join(dir, "kubeadm.yaml"),
      stringify({
        apiVersion: "kubeadm.k8s.io/v1beta4",
        kind: "InitConfiguration",
        bootstrapTokens: [{ token: TOKEN, groups: ["system:bootstrappers:kubeadm:default-node-token"] }],
      }),
    );
    const kubeadm = startProcess({
      name: "kubeadm init phase bootstrap-token",
      command: builtBinary("kubeadm"),
      args: [
        "init",
        "phase",
        "bootstrap-token",
        `--config=${join(dir, "kubeadm.yaml")}`,
        `--kubeconfig=${api.kubeconfigPath}`,
      ],
      logFile: join(dir, "kubeadm.log"),
    });
    // The child does not keep the event loop alive by itself (see ManagedProcess.exited): poll.
    const exit = await eventually("kubeadm exits", async () => kubeadm.exitStatus(), { timeoutMs: 60_000 });
    assert.equal(exit.code, 0, `kubeadm init phase bootstrap-token failed:\n${kubeadm.lastLogLines()}`);
  });

  after(async () => {
    await Promise.all(kubelets.map((kubelet) => kubelet.process.stop(20_000)));
    await kcm?.stop();
    await api?.stop();
  });

  describe("on an init node (kubeadm wrote kubelet.conf with the node's pair embedded)", () => {
    const nodeName = "ip-127-0-0-1";
    const nodeDir = join(dir, nodeName);
    let kubelet: Kubelet;
    let embeddedSerial: string;
    let clientPort: number;
    let peerPort: number;
    let manifest: string;
    let first: PodInfo;
    let nodeUID: string;
    const context = () => `kubelet log:\n${kubelet.process.lastLogLines(40)}`;
    const etcdPod = async () => (await kubelet.pods()).find((pod) => pod.name === "etcd");
    const etcdHealthy = () =>
      eventually(
        "etcd from the static pod answers /health",
        async () => (await httpGet(`http://127.0.0.1:${clientPort}/health`)).status === 200,
        { timeoutMs: 30_000, context },
      );
    const mirrorPath = `/api/v1/namespaces/kube-system/pods/etcd-${nodeName}`;
    const mirror = (predicate: (pod: MirrorPod) => boolean, what: string) =>
      eventually(
        what,
        async () => {
          const response = await kubeRequest<MirrorPod>(api.kubeConfig, mirrorPath);
          return response.status === 200 && predicate(response.body) ? response.body : undefined;
        },
        { timeoutMs: 30_000, context },
      );

    before(async () => {
      mkdirSync(nodeDir);
      const node = await api.userKubeConfig(`system:node:${nodeName}`, ["system:nodes"]);
      writeFileSync(join(nodeDir, "kubelet.conf"), readFileSync(node.kubeconfigPath));
      const embedded = Buffer.from(node.kubeConfig.getCurrentUser()!.certData!, "base64");
      embeddedSerial = new X509Certificate(embedded).serialNumber;
      kubelet = await startKubelet(nodeName, nodeDir, join(dir, "ca.crt"));
      kubelets.push(kubelet);
      [clientPort, peerPort] = [await freePort("127.0.0.1"), await freePort("127.0.0.1")];
      manifest = join(kubelet.manifests, "etcd.yaml");
    });

    it("answers /healthz and runs a static pod's command with the local binary, its env and a log file", async () => {
      await eventually(
        "/healthz answers ok",
        async () => {
          const { status, body } = await httpGet(kubelet.healthz);
          return status === 200 && body === "ok";
        },
        { timeoutMs: 30_000, context },
      );
      writeFileSync(manifest, etcdManifest(nodeDir, clientPort, peerPort));
      await etcdHealthy();
      first = (await etcdPod())!;
      assert.ok(first.pid && isProcessAlive(first.pid, "etcd-3.7"), `etcd runs bin/etcd-3.7: ${JSON.stringify(first)}`);
      assert.match(readFileSync(`/proc/${first.pid}/environ`, "utf8"), /KUBELET_TEST_MARKER=from-the-manifest/);
      assert.match(readFileSync(join(kubelet.logDir, "etcd.log"), "utf8"), /"name":"kl-etcd"/);
    });

    it("registers its Node with the providerID, InternalIP, version and Ready, and a Lease, as system:node", async () => {
      type Node = {
        metadata: { uid: string; labels: Record<string, string> };
        spec: { providerID: string };
        status: {
          nodeInfo: { kubeletVersion: string };
          addresses: { type: string; address: string }[];
          conditions?: { type: string; status: string }[];
        };
      };
      const registered = await eventually(
        "the Node is registered",
        async () => {
          const response = await kubeRequest<Node>(api.kubeConfig, `/api/v1/nodes/${nodeName}`);
          return response.status === 200 && response.body.status.conditions ? response.body : undefined;
        },
        { timeoutMs: 30_000, context },
      );
      nodeUID = registered.metadata.uid;
      assert.equal(registered.spec.providerID, `process://kubelet-test/${nodeName}`);
      assert.equal(registered.metadata.labels["kubernetes.io/hostname"], nodeName);
      assert.equal(registered.metadata.labels["kubernetes.io/os"], "linux");
      assert.equal(registered.status.nodeInfo.kubeletVersion, VERSION);
      assert.deepEqual(registered.status.addresses, [
        { type: "InternalIP", address: "127.0.0.1" },
        { type: "Hostname", address: nodeName },
      ]);
      assert.equal(registered.status.conditions?.find((c) => c.type === "Ready")?.status, "True");
      await eventually(
        "the node's Lease exists",
        async () => {
          const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`;
          const lease = await kubeRequest<{ spec: { holderIdentity: string } }>(api.kubeConfig, path);
          return lease.status === 200 && lease.body.spec.holderIdentity === nodeName;
        },
        { context },
      );
    });

    it("mirrors the static pod with kubeadm's annotations, the kubelet's, its Node as owner, Running and Ready", async () => {
      const running = await mirror((pod) => pod.status.phase === "Running", "the mirror pod is Running");
      assert.equal(running.metadata.annotations["kubernetes.io/config.source"], "file");
      assert.equal(running.metadata.annotations["kubernetes.io/config.mirror"], first.hash);
      assert.equal(running.metadata.annotations["kubernetes.io/config.hash"], first.hash);
      assert.equal(
        running.metadata.annotations["kubeadm.kubernetes.io/etcd.advertise-client-urls"],
        `http://127.0.0.1:${clientPort}`,
      );
      assert.equal(running.spec.nodeName, nodeName);
      assert.deepEqual(
        running.metadata.ownerReferences.map((owner) => [owner.kind, owner.name, owner.uid, owner.controller]),
        [["Node", nodeName, nodeUID, true]],
      );
      assert.equal(running.status.conditions?.find((c) => c.type === "Ready")?.status, "True");
    });

    it("serves pods/portforward to its etcd on the kubelet port its Node reports, to the API server's client cert", async () => {
      type Node = { status: { daemonEndpoints: { kubeletEndpoint: { Port: number } } } };
      const node = await kubeRequestOk<Node>(api.kubeConfig, `/api/v1/nodes/${nodeName}`);
      const kubeletPort = node.status.daemonEndpoints.kubeletEndpoint.Port;
      assert.notEqual(kubeletPort, 10250, "--kubelet-port=0 picks a free port and the Node reports it");
      const forwarded = await openPortForward(api.kubeConfig, "kube-system", `etcd-${nodeName}`, clientPort);
      try {
        forwarded.send("GET /version HTTP/1.0\r\nHost: etcd\r\n\r\n");
        await eventually(
          "etcd's /version through pods/portforward",
          async () => /"etcdserver"/.test(forwarded.output()),
          {
            timeoutMs: 15_000,
            context: () => `errors: ${forwarded.errors()}\n${context()}`,
          },
        );
      } finally {
        forwarded.close();
      }
      // kube-apiserver does not verify the kubelet's serving certificate (no --kubelet-certificate-authority, as
      // kubeadm), but the kubelet checks the API server's client certificate against the cluster CA.
      const anonymous = await httpGet(`https://127.0.0.1:${kubeletPort}/healthz`, { rejectUnauthorized: false }).then(
        (response) => `HTTP ${response.status}`,
        (error: Error) => error.message,
      );
      assert.doesNotMatch(anonymous, /^HTTP 200/);
    });

    it("restarts a killed port-forward server on the same port", async () => {
      const started = () => [
        ...readFileSync(kubelet.process.logFile, "utf8").matchAll(/started the port-forward server \(pid (\d+)/g),
      ];
      const [first] = started();
      assert.ok(first, `the kubelet logged its port-forward server's start:\n${context()}`);
      process.kill(Number(first[1]), "SIGKILL");
      await eventually("a second port-forward server", async () => started().length >= 2, {
        timeoutMs: 15_000,
        context,
      });
      const forwarded = await eventually(
        "pods/portforward through the restarted server",
        async () => {
          const stream = await openPortForward(api.kubeConfig, "kube-system", `etcd-${nodeName}`, clientPort);
          stream.send("GET /version HTTP/1.0\r\nHost: etcd\r\n\r\n");
          await Promise.race([stream.closed, new Promise((resolve) => setTimeout(resolve, 2_000))]);
          stream.close();
          return /"etcdserver"/.test(stream.output()) ? stream : undefined;
        },
        { timeoutMs: 15_000, context },
      );
      assert.equal(forwarded.errors(), "");
    });

    it("finishes the deletion of a pod the scheduler bound to its node (a drain's eviction), and only of that one", async () => {
      const podPath = (name: string) => `/api/v1/namespaces/kube-system/pods/${name}`;
      for (const name of ["kl-evicted", "kl-kept"]) {
        await kubeRequestOk(api.kubeConfig, "/api/v1/namespaces/kube-system/pods", {
          body: {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: "kube-system" },
            spec: { nodeName, containers: [{ name: "c", image: "registry.k8s.io/coredns/coredns:v1.12.1" }] },
          },
        });
      }
      // What CAPI's drain does: an eviction. A bound pod then keeps its deletionTimestamp until its kubelet deletes it.
      await kubeRequestOk(api.kubeConfig, `${podPath("kl-evicted")}/eviction`, {
        body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "kl-evicted", namespace: "kube-system" } },
      });
      await eventually(
        "the evicted pod is deleted by the kubelet",
        async () => (await kubeRequest(api.kubeConfig, podPath("kl-evicted"))).status === 404,
        { context },
      );
      const kept = await kubeRequest<{ metadata: { deletionTimestamp?: string } }>(api.kubeConfig, podPath("kl-kept"));
      assert.equal(kept.status, 200, "a bound pod nobody deleted stays");
      assert.equal(kept.body.metadata.deletionTimestamp, undefined);
      await kubeRequestOk(api.kubeConfig, `${podPath("kl-kept")}?gracePeriodSeconds=0`, { method: "DELETE" });
    });

    it("restarts a killed process and counts the restart in the mirror pod", async () => {
      process.kill(first.pid!, "SIGKILL");
      const restarted = await eventually(
        "etcd is restarted after SIGKILL",
        async () => {
          const pod = await etcdPod();
          return pod?.pid && pod.pid !== first.pid ? pod : undefined;
        },
        { timeoutMs: 30_000, context },
      );
      assert.equal(restarted.restartCount, 1);
      await etcdHealthy();
      await mirror(
        (pod) => pod.status.containerStatuses?.[0]?.restartCount === 1 && pod.status.phase === "Running",
        "the mirror pod shows 1 restart",
      );
    });

    it("replaces the process and the mirror pod when the manifest changes", async () => {
      const before = (await etcdPod())!;
      writeFileSync(manifest, etcdManifest(nodeDir, clientPort, peerPort, ["--snapshot-count=5000"]));
      const changed = await eventually(
        "etcd runs the changed manifest",
        async () => {
          const pod = await etcdPod();
          return pod?.pid && pod.hash !== first.hash ? pod : undefined;
        },
        { timeoutMs: 30_000, context },
      );
      assert.ok(!isProcessAlive(before.pid!), "the old etcd process is stopped");
      assert.match(readFileSync(`/proc/${changed.pid}/cmdline`, "utf8"), /--snapshot-count=5000/);
      await etcdHealthy();
      await mirror(
        (pod) => pod.metadata.annotations["kubernetes.io/config.mirror"] === changed.hash,
        "the mirror pod carries the new hash",
      );
    });

    it("reports an image without a local binary in /pods and the mirror pod instead of running another version", async () => {
      const oldManifest = etcdManifest(nodeDir, 1, 2)
        .replace("etcd:3.7.0-0", "etcd:3.1.0-0")
        .replace("name: etcd\n  namespace", "name: old-etcd\n  namespace");
      writeFileSync(join(kubelet.manifests, "old-etcd.yaml"), oldManifest);
      const oldEtcd = await eventually(
        "old-etcd is refused",
        async () => {
          const pod = (await kubelet.pods()).find((p) => p.name === "old-etcd");
          // Wrapped: eventually() reads a result with a `waiting` field as "not yet".
          return pod?.waiting?.reason === "ErrImagePull" ? { pod } : undefined;
        },
        { context },
      );
      assert.match(oldEtcd.pod.waiting!.message, /etcd-3\.1/);
      assert.equal(oldEtcd.pod.pid, undefined);
      await eventually(
        "the old-etcd mirror pod shows ErrImagePull",
        async () => {
          const path = `/api/v1/namespaces/kube-system/pods/old-etcd-${nodeName}`;
          const response = await kubeRequest<MirrorPod>(api.kubeConfig, path);
          const waiting = response.body.status?.containerStatuses?.[0]?.state.waiting;
          return response.status === 200 && waiting?.reason === "ErrImagePull";
        },
        { context },
      );
      rmSync(join(kubelet.manifests, "old-etcd.yaml"));
    });

    it("stops the process and deletes the mirror pod when the manifest is removed", async () => {
      const last = (await etcdPod())!;
      rmSync(manifest);
      await eventually("etcd is stopped", async () => !isProcessAlive(last.pid!), { context });
      await eventually(
        "the mirror pod is deleted",
        async () => (await kubeRequest(api.kubeConfig, mirrorPath)).status === 404,
        { context },
      );
    });

    it("stores the embedded pair where kubelet-finalize looks, then renews it through a selfnodeclient CSR", async () => {
      const rotated = await eventually(
        "the client certificate is rotated",
        async () => {
          const pem = readFileSync(join(kubelet.certDir, "kubelet-client-current.pem"), "utf8");
          const certificate = new X509Certificate(pem);
          return certificate.serialNumber !== embeddedSerial ? certificate : undefined;
        },
        { timeoutMs: 30_000, context },
      );
      assert.match(rotated.subject, new RegExp(`CN=system:node:${nodeName}`));
      assert.ok(rotated.checkIssued(new X509Certificate(api.ca.certPem)), "signed by the cluster CA (csrsigning)");
    });
  });

  it("TLS-bootstraps a join node with a bootstrap token: CSR approved and signed, kubelet.conf written, Node registered", async () => {
    const nodeName = "ip-127-0-0-2";
    const nodeDir = join(dir, nodeName);
    mkdirSync(nodeDir);
    const kubelet = await startKubelet(nodeName, nodeDir, join(dir, "ca.crt"));
    kubelets.push(kubelet);
    const context = () => `kubelet log:\n${kubelet.process.lastLogLines(40)}`;
    // kubeadm join's kubelet-start phase writes it (after the kubelet started, which waits for it).
    writeFileSync(
      join(nodeDir, "bootstrap-kubelet.conf"),
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: "kubernetes",
            cluster: { server: api.url, "certificate-authority-data": Buffer.from(api.ca.certPem).toString("base64") },
          },
        ],
        users: [{ name: "tls-bootstrap-token-user", user: { token: TOKEN } }],
        contexts: [
          {
            name: "tls-bootstrap-token-user@kubernetes",
            context: { cluster: "kubernetes", user: "tls-bootstrap-token-user" },
          },
        ],
        "current-context": "tls-bootstrap-token-user@kubernetes",
      }),
    );
    await eventually("kubelet.conf is written", async () => existsSync(kubelet.kubeconfig), {
      timeoutMs: 60_000,
      context,
    });
    const pem = join(kubelet.certDir, "kubelet-client-current.pem");
    assert.match(readFileSync(kubelet.kubeconfig, "utf8"), new RegExp(`client-certificate: ${pem}`));
    assert.match(readlinkSync(pem), /kubelet-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/);
    const certificate = new X509Certificate(readFileSync(pem, "utf8"));
    assert.match(certificate.subject, new RegExp(`CN=system:node:${nodeName}`));
    assert.match(certificate.subject, /O=system:nodes/);
    assert.ok(certificate.checkIssued(new X509Certificate(api.ca.certPem)), "signed by the cluster CA (csrsigning)");

    type CsrList = {
      items: {
        metadata: { name: string };
        spec: { username: string; signerName: string };
        status: { conditions?: { type: string; reason: string }[] };
      }[];
    };
    const csrs = await kubeRequestOk<CsrList>(
      api.kubeConfig,
      "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    );
    const bootstrapCsr = csrs.items.find((csr) => csr.spec.username === `system:bootstrap:${TOKEN.split(".")[0]}`);
    assert.ok(
      bootstrapCsr,
      `a CSR made with the bootstrap token: ${JSON.stringify(csrs.items.map((c) => c.spec.username))}`,
    );
    assert.match(bootstrapCsr.metadata.name, /^node-csr-/);
    assert.equal(bootstrapCsr.spec.signerName, "kubernetes.io/kube-apiserver-client-kubelet");
    assert.equal(bootstrapCsr.status.conditions?.find((c) => c.type === "Approved")?.reason, "AutoApproved");

    await eventually(
      "the Node is registered with the bootstrapped credentials",
      async () => {
        const response = await kubeRequest<{ spec: { providerID: string } }>(
          api.kubeConfig,
          `/api/v1/nodes/${nodeName}`,
        );
        return response.status === 200 && response.body.spec.providerID === `process://kubelet-test/${nodeName}`;
      },
      { timeoutMs: 30_000, context },
    );
  });

  it("stops its static pods on SIGTERM and exits 0", async () => {
    const kubelet = kubelets[1];
    const [clientPort, peerPort] = [await freePort("127.0.0.1"), await freePort("127.0.0.1")];
    writeFileSync(
      join(kubelet.manifests, "etcd.yaml"),
      etcdManifest(join(dir, kubelet.nodeName), clientPort, peerPort),
    );
    const pod = await eventually(
      "etcd runs",
      async () => (await kubelet.pods()).find((p) => p.name === "etcd" && p.pid),
      { timeoutMs: 30_000 },
    );
    // Before its signal handler is installed, a starting etcd dies of SIGTERM without a word.
    await eventually(
      "etcd answers /health",
      async () => (await httpGet(`http://127.0.0.1:${clientPort}/health`)).status === 200,
      { timeoutMs: 30_000 },
    );
    const exit = await kubelet.process.stop(20_000);
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.ok(!isProcessAlive(pod.pid!), "etcd stopped with the kubelet");
    assert.match(readFileSync(join(kubelet.logDir, "etcd.log"), "utf8"), /received signal; shutting down|terminated/i);
  });
});
