// Cluster certificates and the kubeconfig Secret on a real management kube-apiserver, proven usable by real
// components: a workload control plane (a 2-member TLS etcd and a kube-apiserver) is started from nothing
// but the Secrets Quorum generated, the way a bootstrap provider would lay them out. Quorum's etcd client and
// its kubeconfig Secret then have to work against it. Also: users' own CA Secrets stay byte-for-byte as they were.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { Cluster } from "../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { caSecretChecks, readCASecret } from "../../src/adapters/certs/ca-secret.ts";
import { ensureKubeconfig, kubeconfigFromSecret } from "../../src/adapters/certs/kubeconfig.ts";
import {
  createCA,
  issueCertificate,
  oneDay,
  validFor,
  type CertificateAuthority,
} from "../../src/adapters/certs/pki.ts";
import {
  coreV1SecretStore,
  dataText,
  type SecretObject,
  type SecretStore,
} from "../../src/adapters/certs/secret-store.ts";
import { WorkloadApiError } from "../../src/adapters/errors.ts";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import { WorkloadClients } from "../../src/adapters/workload/client.ts";
import {
  builtBinary,
  freePort,
  kubeRequest,
  makeTempDir,
  removeTempDir,
  startApiServer,
  startEtcdCluster,
  startProcess,
  waitUntilReady,
  type ApiServer,
  type EtcdCluster,
  type ManagedProcess,
} from "../env/index.ts";

const namespace = "default";
let management: ApiServer;
let store: SecretStore;
let core: CoreV1Api;
const cleanups: (() => Promise<void> | void)[] = [];

function controlPlane(name: string, uid: string): QuorumControlPlane {
  return {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
    kind: "QuorumControlPlane",
    metadata: { name, namespace, uid },
    spec: {
      version: "v1.31.0",
      machineTemplate: {
        spec: {
          infrastructureRef: { kind: "X", name: "x" },
          bootstrapConfigTemplateRef: { kind: "Y", name: "y" },
        },
      },
    },
  } as QuorumControlPlane;
}

function cluster(name: string, endpoint?: { host: string; port: number }): Cluster {
  return { metadata: { name, namespace }, spec: endpoint ? { controlPlaneEndpoint: endpoint } : {} };
}

async function secret(name: string): Promise<SecretObject> {
  const found = await store.get({ namespace, name });
  assert.ok(found, `Secret ${namespace}/${name} should exist`);
  return found;
}

async function caFrom(name: string): Promise<CertificateAuthority> {
  return readCASecret({ namespace, name }, await secret(name), new Date(), "for the test");
}

before(async () => {
  management = await startApiServer();
  core = management.kubeConfig.makeApiClient(CoreV1Api);
  store = coreV1SecretStore(core);
});

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await management?.stop();
});

describe("cluster certificates on a real kube-apiserver", () => {
  it("leaves CA Secrets a user brought byte-for-byte unchanged and creates only the missing ones", async () => {
    const userCA = await createCA("corp-root", validFor(30 * oneDay));
    const userEtcdCA = await createCA("corp-etcd", validFor(30 * oneDay));
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    for (const [name, ca] of [
      ["byo-ca", userCA],
      ["byo-etcd", userEtcdCA],
    ] as const) {
      await core.createNamespacedSecret({
        namespace,
        body: {
          metadata: {
            name,
            labels: { "corp.example/owner": "platform" },
            annotations: { "corp.example/rotated": "2029" },
          },
          type: "Opaque",
          data: {
            "tls.crt": b64(ca.certPem),
            "tls.key": b64(ca.keyPem),
            "ca-bundle.crt": b64(`${ca.certPem}\n# trailing bytes kept as they are\n`),
          },
        },
      });
    }
    const before = await Promise.all(
      ["byo-ca", "byo-etcd"].map((name) => core.readNamespacedSecret({ name, namespace })),
    );

    const access = new ClusterWorkloadAccess({ secrets: store });
    const outcome = await access.reconcileCertificates(
      controlPlane("byo-cp", "00000000-0000-4000-8000-00000000b10b"),
      cluster("byo", { host: "127.0.0.1", port: 6443 }),
    );
    assert.deepEqual(outcome.secrets.existing.sort(), ["byo-ca", "byo-etcd"]);
    assert.deepEqual(outcome.secrets.created.sort(), ["byo-proxy", "byo-sa"]);
    assert.equal(outcome.kubeconfig?.action, "created");
    // A second reconcile changes nothing anywhere.
    const again = await access.reconcileCertificates(
      controlPlane("byo-cp", "00000000-0000-4000-8000-00000000b10b"),
      cluster("byo", { host: "127.0.0.1", port: 6443 }),
    );
    assert.deepEqual(again.secrets.created, []);
    assert.deepEqual(again.kubeconfig, { action: "unchanged" });

    const afterwards = await Promise.all(
      ["byo-ca", "byo-etcd"].map((name) => core.readNamespacedSecret({ name, namespace })),
    );
    for (let i = 0; i < before.length; i++) {
      assert.equal(afterwards[i].metadata?.resourceVersion, before[i].metadata?.resourceVersion);
      assert.deepEqual(afterwards[i].data, before[i].data);
      assert.deepEqual(afterwards[i].metadata?.labels, before[i].metadata?.labels);
      assert.deepEqual(afterwards[i].metadata?.annotations, before[i].metadata?.annotations);
      assert.equal(afterwards[i].metadata?.ownerReferences, undefined);
      assert.equal(afterwards[i].type, "Opaque");
    }
    // The kubeconfig trusts and chains to the user's CA, not to one Quorum made up.
    const { contents } = kubeconfigFromSecret({ namespace, name: "byo-kubeconfig" }, await secret("byo-kubeconfig"));
    assert.equal(contents.caPem.trim(), userCA.certPem.trim());
  });

  it("generates Secrets a real etcd (server, peer, client) and a real kube-apiserver accept; Quorum's own workload client certificate and the kubeconfig each list Nodes", async () => {
    const apiserverPort = await freePort("127.0.0.1");
    const qcp = controlPlane("wl-cp", "00000000-0000-4000-8000-0000000000a1");
    const workloadCluster = cluster("wl", { host: "127.0.0.1", port: apiserverPort });
    const access = new ClusterWorkloadAccess({ secrets: store, etcdCallDeadlineMs: 5000 });
    const checksBefore = caSecretChecks();
    const outcome = await access.reconcileCertificates(qcp, workloadCluster);
    assert.deepEqual(outcome.secrets.created.sort(), ["wl-ca", "wl-etcd", "wl-proxy", "wl-sa"]);
    // wl-ca and wl-etcd, read back from the API server to sign the kubeconfig's and the etcd client certificates, are
    // the CAs just generated: known without parsing them back (the certificates below prove they sign right).
    assert.equal(caSecretChecks(), checksBefore);
    for (const name of ["wl-ca", "wl-etcd", "wl-proxy", "wl-sa", "wl-kubeconfig"]) {
      const stored = await secret(name);
      assert.equal(stored.type, "cluster.x-k8s.io/secret");
      assert.equal(stored.metadata.labels?.["cluster.x-k8s.io/cluster-name"], "wl");
      assert.deepEqual(
        stored.metadata.ownerReferences?.map((owner) => [owner.kind, owner.name, owner.uid, owner.controller]),
        [["QuorumControlPlane", "wl-cp", qcp.metadata.uid, true]],
      );
    }

    const workload = await startWorkloadControlPlane(apiserverPort);
    cleanups.push(workload.stop);

    // Quorum's own etcd client certificate, issued from wl-etcd, against members serving wl-etcd certificates.
    const etcd = await access.etcd(qcp, workloadCluster, workload.etcdEndpoints);
    try {
      const members = await etcd.listMembers();
      assert.deepEqual(members.map((member) => member.name).sort(), ["wl-etcd-1", "wl-etcd-2"]);
      const statuses = await etcd.memberStatuses(members);
      assert.ok(
        statuses.every((status) => status.reachable),
        JSON.stringify(statuses),
      );
      assert.equal(statuses.filter((status) => status.leader).length, 1);
    } finally {
      await etcd.close();
    }

    // Quorum's own short-lived client certificate, issued in memory from wl-ca, authenticates as an admin and lists
    // Nodes at the control-plane endpoint; the kubeconfig Secret is not even read (this store refuses to show it).
    const kubeconfigHidden: SecretStore = {
      ...store,
      get: async (ref) => {
        if (ref.name === "wl-kubeconfig") throw new Error("the workload client read the kubeconfig Secret");
        return store.get(ref);
      },
    };
    const ownAccess = new ClusterWorkloadAccess({ secrets: kubeconfigHidden, etcdCallDeadlineMs: 5000 });
    assert.deepEqual(await ownAccess.nodes(qcp, workloadCluster), []);
    const workloadCore = workload.adminKubeConfigCore;
    await workloadCore.createNode({
      body: { metadata: { name: "wl-node-1" }, spec: { providerID: "process://wl-node-1" } },
    });
    // As a kubelet posts it on registration, before its network plugin runs: NotReady, and since when.
    const created = await workloadCore.readNode({ name: "wl-node-1" });
    const registered = new Date("2026-11-29T11:59:00Z");
    await workloadCore.replaceNodeStatus({
      name: "wl-node-1",
      body: {
        ...created,
        status: {
          conditions: [
            {
              type: "Ready",
              status: "False",
              reason: "KubeletNotReady",
              message: "container runtime network not ready: NetworkReady=false",
              lastHeartbeatTime: registered,
              lastTransitionTime: registered,
            },
          ],
        },
      },
    });
    const nodes = await ownAccess.nodes(qcp, workloadCluster);
    assert.deepEqual(
      nodes.map((node) => [node.metadata.name, node.spec?.providerID, node.status?.conditions]),
      [
        [
          "wl-node-1",
          "process://wl-node-1",
          [{ type: "Ready", status: "False", lastTransitionTime: "2026-11-29T11:59:00.000Z" }],
        ],
      ],
    );
    await ownAccess.closeAll();
    // The kubeconfig Secret, as CAPI reads it (and Quorum without an endpoint), authenticates as an admin too.
    assert.deepEqual(
      (await new WorkloadClients(store).listNodes(namespace, "wl")).map((node) => node.metadata.name),
      ["wl-node-1"],
    );
  });

  it("rebuilds the workload client when the kubeconfig Secret changes, and names the Secret and server when it cannot connect", async () => {
    const qcp = controlPlane("wl-cp", "00000000-0000-4000-8000-0000000000a1");
    const clients = new WorkloadClients(store, { timeoutMs: 3000 });
    const working = await secret("wl-kubeconfig");
    const server = kubeconfigFromSecret({ namespace, name: "wl-kubeconfig" }, working).contents.server;
    const port = Number(new URL(server).port);
    assert.equal((await clients.listNodes(namespace, "wl")).length, 1);

    // Point the kubeconfig at a port nobody listens on: the cached client must not be reused.
    const deadPort = await freePort("127.0.0.1");
    await ensureKubeconfig(store, {
      cluster: "wl",
      owner: { namespace, name: "wl-cp", uid: qcp.metadata.uid! },
      endpoint: { host: "127.0.0.1", port: deadPort },
      now: new Date(),
    });
    await assert.rejects(clients.listNodes(namespace, "wl"), (error: unknown) => {
      assert.ok(error instanceof WorkloadApiError);
      assert.match(
        error.message,
        new RegExp(
          `workload API server https://127\\.0\\.0\\.1:${deadPort} \\(from Secret default/wl-kubeconfig\\) could not be reached`,
        ),
      );
      return true;
    });

    // Another controller guards the Secret (a backup tool's finalizer and annotation): a rotation keeps both.
    const guard = "backup.example.com/protect";
    await core.patchNamespacedSecret(
      {
        name: "wl-kubeconfig",
        namespace,
        body: { metadata: { finalizers: [guard], annotations: { "backup.example.com/last": "2026-12-07" } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );

    // Rotation back to the real endpoint (new certificate, same CA) is picked up too.
    const rotated = await ensureKubeconfig(store, {
      cluster: "wl",
      owner: { namespace, name: "wl-cp", uid: qcp.metadata.uid! },
      endpoint: { host: "127.0.0.1", port },
      now: new Date(),
    });
    assert.equal(rotated.action, "rotated");
    assert.equal((await clients.listNodes(namespace, "wl")).length, 1);
    const kept = await core.readNamespacedSecret({ name: "wl-kubeconfig", namespace });
    assert.deepEqual(kept.metadata?.finalizers, [guard]);
    assert.equal(kept.metadata?.annotations?.["backup.example.com/last"], "2026-12-07");
    await core.patchNamespacedSecret(
      { name: "wl-kubeconfig", namespace, body: { metadata: { finalizers: null } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  });
});

describe("bad cluster Secrets on a real kube-apiserver", () => {
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  const create = (name: string, data: Record<string, string>) =>
    core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name },
        data: Object.fromEntries(Object.entries(data).map(([key, text]) => [key, b64(text)])),
      },
    });

  it("reports each broken Secret as its typed error naming the Secret, and writes no kubeconfig from a broken CA", async () => {
    const now = new Date();
    const good = await createCA("good", validFor(oneDay, now));
    const other = await createCA("other", validFor(oneDay, now));
    const expired = await createCA("expired", {
      notBefore: new Date(now.getTime() - 3 * oneDay),
      notAfter: new Date(now.getTime() - oneDay),
    });
    await create("garbage-etcd", { "tls.crt": "this is not a certificate", "tls.key": "nor a key" });
    await create("mismatch-ca", { "tls.crt": good.certPem, "tls.key": other.keyPem });
    await create("expired-ca", { "tls.crt": expired.certPem, "tls.key": expired.keyPem });
    const access = new ClusterWorkloadAccess({ secrets: store });
    const endpoint = { host: "127.0.0.1", port: 6443 };

    await assert.rejects(
      access.etcd(controlPlane("garbage-cp", "00000000-0000-4000-8000-0000000000c1"), cluster("garbage"), [
        "https://127.0.0.1:2379",
      ]),
      {
        name: "SecretGarbageError",
        message:
          /^Secret default\/garbage-etcd: data key "tls\.crt" does not hold a PEM certificate .*: put a PEM CA certificate in tls\.crt/,
      },
    );
    await assert.rejects(
      access.reconcileCertificates(
        controlPlane("mismatch-cp", "00000000-0000-4000-8000-0000000000c2"),
        cluster("mismatch", endpoint),
      ),
      {
        name: "CAKeyMismatchError",
        message:
          /^Secret default\/mismatch-ca: tls\.key is not the private key of the certificate in tls\.crt \(CN=good\)/,
      },
    );
    await assert.rejects(
      access.reconcileCertificates(
        controlPlane("expired-cp", "00000000-0000-4000-8000-0000000000c3"),
        cluster("expired", endpoint),
      ),
      {
        name: "CertificateExpiredError",
        message: /^Secret default\/expired-ca: certificate CN=expired expired at .*: rotate it/,
      },
    );
    await assert.rejects(
      access.nodes(controlPlane("missing-cp", "00000000-0000-4000-8000-0000000000c4"), cluster("missing")),
      {
        name: "SecretMissingError",
        message: /^Secret default\/missing-kubeconfig not found/,
      },
    );
    for (const name of ["mismatch-kubeconfig", "expired-kubeconfig"])
      assert.equal(await store.get({ namespace, name }), undefined);
  });

  it("creates no new etcd CA when a user deletes it on a running cluster, and names the Secret and the restore", async () => {
    const access = new ClusterWorkloadAccess({ secrets: store });
    const endpoint = { host: "127.0.0.1", port: 6443 };
    const created = await access.reconcileCertificates(
      controlPlane("running-cp", "00000000-0000-4000-8000-0000000000d1"),
      cluster("running", endpoint),
    );
    assert.deepEqual(created.secrets.created.sort(), ["running-ca", "running-etcd", "running-proxy", "running-sa"]);
    const kept = await Promise.all(
      ["running-ca", "running-proxy", "running-sa", "running-kubeconfig"].map((name) =>
        core.readNamespacedSecret({ name, namespace }),
      ),
    );

    // The cluster runs: CAPI saw its control plane initialise, Quorum counts three Machines.
    const running = {
      ...controlPlane("running-cp", "00000000-0000-4000-8000-0000000000d1"),
      status: { replicas: 3, initialization: { controlPlaneInitialized: true } },
    };
    const initialized: Cluster = {
      ...cluster("running", endpoint),
      status: { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } },
    };
    await core.deleteNamespacedSecret({ name: "running-etcd", namespace });

    await assert.rejects(access.reconcileCertificates(running, initialized), {
      name: "RunningClusterSecretMissingError",
      message:
        /^Secret default\/running-etcd not found, but the cluster is running \(Cluster default\/running reports its control plane initialized\): restore default\/running-etcd from backup; Quorum does not regenerate/,
    });
    // Nor does anything that would need a new CA go ahead: no etcd client certificate can be issued.
    await assert.rejects(access.etcd(running, initialized, ["https://127.0.0.1:2379"]), {
      name: "SecretMissingError",
      message: /^Secret default\/running-etcd not found: .*restore it from backup/,
    });

    const etcdSecret = await kubeRequest(management.kubeConfig, `/api/v1/namespaces/${namespace}/secrets/running-etcd`);
    assert.equal(etcdSecret.status, 404, "no new etcd CA Secret was created");
    const afterwards = await Promise.all(
      ["running-ca", "running-proxy", "running-sa", "running-kubeconfig"].map((name) =>
        core.readNamespacedSecret({ name, namespace }),
      ),
    );
    assert.deepEqual(
      afterwards.map((secret) => secret.metadata?.resourceVersion),
      kept.map((secret) => secret.metadata?.resourceVersion),
      "the other Secrets are left as they were",
    );
  });
});

interface WorkloadControlPlane {
  etcdEndpoints: string[];
  adminKubeConfigCore: CoreV1Api;
  stop: () => Promise<void>;
}

/**
 * A workload control plane laid out like kubeadm would from the cluster Secrets: etcd members with
 * server/peer certificates from `wl-etcd`, a kube-apiserver serving with a `wl-ca` certificate, trusting
 * `wl-ca` for clients and `wl-proxy` for the front proxy, signing tokens with `wl-sa`, reaching etcd with
 * a `wl-etcd` client certificate.
 */
async function startWorkloadControlPlane(apiserverPort: number): Promise<WorkloadControlPlane> {
  const dir = makeTempDir("wl-control-plane");
  let apiserver: ManagedProcess | undefined;
  let etcd: EtcdCluster | undefined;
  const stop = async () => {
    await apiserver?.stop(15_000);
    await etcd?.stop();
    removeTempDir(dir);
  };
  try {
    const file = (name: string, contents: string) => {
      const path = join(dir, name);
      writeFileSync(path, contents, { mode: 0o600 });
      return path;
    };
    const etcdCA = await caFrom("wl-etcd");
    const clusterCA = await caFrom("wl-ca");
    const proxyCA = await caFrom("wl-proxy");
    const sa = await secret("wl-sa");

    // The harness signs each member's server/peer certificate with the CA from the Secret.
    etcd = await startEtcdCluster({ members: 2, tls: true, ca: etcdCA, namePrefix: "wl-etcd-" });
    const etcdCAFile = file("etcd-ca.crt", etcdCA.certPem);

    const apiserverEtcdClient = await issueCertificate(etcdCA, {
      commonName: "kube-apiserver-etcd-client",
      usages: "client",
      validity: validFor(oneDay),
    });
    const serving = await issueCertificate(clusterCA, {
      commonName: "kube-apiserver",
      dnsNames: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
      ipAddresses: ["127.0.0.1", "10.0.0.1"],
      usages: "server",
      validity: validFor(oneDay),
    });
    const frontProxyClient = await issueCertificate(proxyCA, {
      commonName: "front-proxy-client",
      usages: "client",
      validity: validFor(oneDay),
    });
    const url = `https://127.0.0.1:${apiserverPort}`;
    apiserver = startProcess({
      name: `workload kube-apiserver (${url})`,
      command: builtBinary("kube-apiserver"),
      args: [
        `--etcd-servers=${etcd.endpoints().join(",")}`,
        `--etcd-cafile=${etcdCAFile}`,
        `--etcd-certfile=${file("apiserver-etcd-client.crt", apiserverEtcdClient.certPem)}`,
        `--etcd-keyfile=${file("apiserver-etcd-client.key", apiserverEtcdClient.keyPem)}`,
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        "--endpoint-reconciler-type=none",
        `--secure-port=${apiserverPort}`,
        `--cert-dir=${join(dir, "apiserver-certs")}`,
        `--tls-cert-file=${file("apiserver.crt", serving.certPem)}`,
        `--tls-private-key-file=${file("apiserver.key", serving.keyPem)}`,
        `--client-ca-file=${file("ca.crt", clusterCA.certPem)}`,
        `--requestheader-client-ca-file=${file("front-proxy-ca.crt", proxyCA.certPem)}`,
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        `--proxy-client-cert-file=${file("front-proxy-client.crt", frontProxyClient.certPem)}`,
        `--proxy-client-key-file=${file("front-proxy-client.key", frontProxyClient.keyPem)}`,
        "--authorization-mode=RBAC",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=true",
        `--service-account-issuer=${url}`,
        `--service-account-key-file=${file("sa.pub", dataText(sa, "tls.crt") ?? "")}`,
        `--service-account-signing-key-file=${file("sa.key", dataText(sa, "tls.key") ?? "")}`,
        "--disable-admission-plugins=ServiceAccount",
      ],
      logFile: join(dir, "kube-apiserver.log"),
    });

    // Admin access for the test itself comes from the kubeconfig Secret too: that is what is under test.
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(dataText(await secret("wl-kubeconfig"), "value") ?? "");
    // kube-apiserver is not ready before its etcd is, so its /readyz also waits for (and proves) the members.
    await waitUntilReady({
      process: apiserver,
      what: `GET ${url}/readyz`,
      timeoutMs: 120_000,
      intervalMs: 500,
      probe: async () => {
        const { status, text } = await kubeRequest(kubeConfig, "/readyz", { timeoutMs: 5_000 });
        return status === 200 ? true : `HTTP ${status}: ${text.trim().split("\n").slice(-3).join(" | ")}`;
      },
    });
    return {
      etcdEndpoints: etcd.endpoints(),
      adminKubeConfigCore: kubeConfig.makeApiClient(CoreV1Api),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
