// ClusterWorkloadAccess.etcd as the controller uses it (one etcd() and one close() per reconcile), with a
// counting fake etcd client factory: which clients it opens and closes, and with which credentials.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPrivateKey } from "node:crypto";
import type { Cluster } from "../../../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../../../src/api/types.ts";
import { createCA, oneHour, validFor } from "../../../../src/adapters/certs/pki.ts";
import { checkedCASecrets, readCASecret } from "../../../../src/adapters/certs/ca-secret.ts";
import { dataText } from "../../../../src/adapters/certs/secret-store.ts";
import {
  CertificateExpiredError,
  RunningClusterSecretMissingError,
  SecretGarbageError,
  WorkloadApiError,
} from "../../../../src/adapters/errors.ts";
import { silentLogger } from "../../../../src/adapters/kube/log.ts";
import { ClusterWorkloadAccess } from "../../../../src/adapters/workload/access.ts";
import { FakeEtcdClients } from "../etcd/fake-clients.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

const start = new Date("2030-01-01T00:00:00Z");
const endpoints = ["https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"];

function controlPlane(namespace: string, name: string): QuorumControlPlane {
  return {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
    kind: "QuorumControlPlane",
    metadata: { name, namespace, uid: `uid-${namespace}-${name}` },
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

function cluster(namespace: string, name: string): Cluster {
  return { metadata: { name, namespace }, spec: {} };
}

async function seedEtcdCA(store: MemorySecretStore, namespace: string, clusterName: string): Promise<string> {
  const ca = await createCA("etcd-ca", validFor(365 * 24 * oneHour, start));
  store.seed(namespace, `${clusterName}-etcd`, { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
  return ca.certPem;
}

async function setup(options: { lifetimeMs?: number } = {}) {
  const store = new MemorySecretStore();
  await seedEtcdCA(store, "team-a", "prod");
  await seedEtcdCA(store, "team-b", "prod");
  const fakes = new FakeEtcdClients();
  let now = start.getTime();
  const access = new ClusterWorkloadAccess({
    secrets: store,
    etcdClientFactory: fakes.factory,
    clock: () => new Date(now),
    log: silentLogger,
    ...(options.lifetimeMs ? { etcdCredentials: { lifetimeMs: options.lifetimeMs } } : {}),
  });
  return { store, fakes, access, advance: (ms: number) => (now += ms) };
}

/** One reconcile's etcd use, as src/controller/reconcile.ts does it: etcd(), calls, close() in finally. */
async function reconcile(
  access: ClusterWorkloadAccess,
  namespace: string,
  name: string,
  reachable = endpoints,
): Promise<string> {
  const etcd = await access.etcd(controlPlane(namespace, name), cluster(namespace, name), reachable);
  try {
    return (await etcd.listMembers())[0].name;
  } finally {
    await etcd.close();
  }
}

describe("workload access: etcd clients across reconciles", () => {
  it("serves every reconcile of a cluster from one etcd client that stays open between them", async () => {
    const { fakes, access } = await setup();
    for (let i = 0; i < 3; i++) assert.equal(await reconcile(access, "team-a", "prod"), "client-1");
    assert.equal(await reconcile(access, "team-b", "prod"), "client-2");
    assert.deepEqual(
      fakes.opened.map((client) => [client.options.context, client.closes]),
      [
        ["etcd of cluster team-a/prod", 0],
        ["etcd of cluster team-b/prod", 0],
      ],
    );
    await access.closeAll();
  });

  it("reconnects with the new trust when the user rotates the cluster's etcd CA, closing the old client", async () => {
    const { store, fakes, access } = await setup();
    await reconcile(access, "team-a", "prod");
    const rotatedCA = await seedEtcdCA(store, "team-a", "prod");
    assert.equal(await reconcile(access, "team-a", "prod"), "client-2");
    assert.equal(fakes.opened[1].options.credentials?.caPem, rotatedCA);
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 0],
    );
    await access.closeAll();
  });

  it("reconnects with the renewed client certificate once the old one reaches 2/3 of its lifetime", async () => {
    const { fakes, access, advance } = await setup({ lifetimeMs: 3 * oneHour });
    await reconcile(access, "team-a", "prod");
    advance(1.9 * oneHour);
    await reconcile(access, "team-a", "prod");
    assert.equal(fakes.opened.length, 1);
    advance(0.2 * oneHour);
    assert.equal(await reconcile(access, "team-a", "prod"), "client-2");
    assert.notEqual(fakes.opened[1].options.credentials?.certPem, fakes.opened[0].options.credentials?.certPem);
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 0],
    );
    await access.closeAll();
  });

  it("reconnects when the control-plane Machines' addresses change", async () => {
    const { fakes, access } = await setup();
    await reconcile(access, "team-a", "prod");
    assert.equal(await reconcile(access, "team-a", "prod", [...endpoints, "https://10.0.0.4:2379"]), "client-2");
    assert.deepEqual(fakes.opened[1].options.endpoints, [...endpoints, "https://10.0.0.4:2379"]);
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 0],
    );
    await access.closeAll();
  });

  it("gives a reconcile with no etcd endpoint a client of its own, keeping the cluster's client for the next reconcile", async () => {
    const { fakes, access } = await setup();
    await reconcile(access, "team-a", "prod");
    assert.equal(await reconcile(access, "team-a", "prod", []), "client-2");
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [0, 1],
    );
    assert.equal(await reconcile(access, "team-a", "prod"), "client-1");
    await access.closeAll();
  });

  it("closes a cluster's etcd client when the cluster is forgotten, leaving the other clusters' open", async () => {
    const { fakes, access } = await setup();
    await reconcile(access, "team-a", "prod");
    await reconcile(access, "team-b", "prod");
    await access.forget("team-a", "prod");
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 0],
    );
    await access.closeAll();
  });

  it("closes every cluster's etcd client on closeAll", async () => {
    const { fakes, access } = await setup();
    await reconcile(access, "team-a", "prod");
    await reconcile(access, "team-b", "prod");
    await access.closeAll();
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 1],
    );
  });
});

describe("workload access: private keys live as long as their cluster", () => {
  /** A cluster whose etcd and workload API Quorum reached once: both client keys issued, the cluster CA parsed. */
  async function touch(store: MemorySecretStore, access: ClusterWorkloadAccess, namespace: string) {
    const ca = await createCA("kubernetes", validFor(365 * 24 * oneHour, start));
    store.seed(namespace, "prod-ca", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    const withEndpoint: Cluster = {
      metadata: { name: "prod", namespace },
      // Nothing listens on port 1: the call fails, after Quorum issued its workload API client certificate.
      spec: { controlPlaneEndpoint: { host: "127.0.0.1", port: 1 } },
    };
    await reconcile(access, namespace, "prod");
    await assert.rejects(access.nodes(controlPlane(namespace, "prod"), withEndpoint), WorkloadApiError);
    await readCASecret({ namespace, name: "prod-ca" }, await store.get({ namespace, name: "prod-ca" }), start, "test");
  }

  it("drops a forgotten cluster's etcd and workload client keys and its parsed CAs, keeping the other clusters'", async () => {
    const { store, access } = await setup();
    await touch(store, access, "team-a");
    await touch(store, access, "team-b");
    assert.deepEqual(access.heldPrivateKeys(), ["team-a/prod", "team-b/prod"]);
    assert.ok(checkedCASecrets().includes("team-a/prod-ca"));
    assert.ok(checkedCASecrets().includes("team-a/prod-etcd"));

    await access.forget("team-a", "prod");
    assert.deepEqual(access.heldPrivateKeys(), ["team-b/prod"]);
    assert.ok(!checkedCASecrets().includes("team-a/prod-ca"), "team-a's parsed cluster CA (and key) is still kept");
    assert.ok(!checkedCASecrets().includes("team-a/prod-etcd"), "team-a's parsed etcd CA (and key) is still kept");
    assert.ok(checkedCASecrets().includes("team-b/prod-ca"));
    await access.closeAll();
  });

  it("drops every key on closeAll (a controller that stopped leading holds none)", async () => {
    const { store, access } = await setup();
    await touch(store, access, "team-a");
    await access.closeAll();
    assert.deepEqual(access.heldPrivateKeys(), []);
    assert.deepEqual(checkedCASecrets(), []);
  });
});

describe("workload access: certificate checks across reconciles", () => {
  const ns = "team-c";
  const name = "prod";
  const withEndpoint = (): Cluster => ({
    metadata: { name, namespace: ns },
    spec: { controlPlaneEndpoint: { host: "10.0.0.9", port: 6443 } },
  });

  it("reports a CA Secret that turned to garbage at the very next reconcile, even right after a passed check", async () => {
    const { store, access } = await setup();
    await access.ensureCertificates(controlPlane(ns, name), withEndpoint());
    await access.ensureCertificates(controlPlane(ns, name), withEndpoint());
    store.seed(ns, `${name}-ca`, { "tls.crt": "not a certificate", "tls.key": "nor a key" });
    await assert.rejects(
      access.ensureCertificates(controlPlane(ns, name), withEndpoint()),
      (error: unknown) => error instanceof SecretGarbageError && error.message.includes(`${ns}/${name}-ca`),
    );
    await access.closeAll();
  });

  it("creates a new cluster's keys as its bootstrap template's encryptionAlgorithm asks, and names the template when kubeadm would refuse the value", async () => {
    const { store, access } = await setup();
    const template = (encryptionAlgorithm: string) => async () => ({
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfigTemplate",
      metadata: { name: "cp-kubeadm", namespace: ns },
      spec: { template: { spec: { clusterConfiguration: { encryptionAlgorithm } } } },
    });
    const qcp = controlPlane(ns, name);
    const ref = qcp.spec.machineTemplate.spec.bootstrapConfigTemplateRef;
    await assert.rejects(
      access.ensureCertificates(qcp, withEndpoint(), template("ECDSA-P521")),
      new RegExp(
        `^Error: ${ref.kind} ${ns}/${ref.name} spec\\.template\\.spec\\.clusterConfiguration\\.encryptionAlgorithm is "ECDSA-P521": set one of`,
      ),
    );
    assert.equal(store.secrets.get(`${ns}/${name}-ca`), undefined, "no Secret made with a key type nobody asked for");
    await access.ensureCertificates(qcp, withEndpoint(), template("RSA-3072"));
    const key = createPrivateKey(dataText(store.secrets.get(`${ns}/${name}-sa`)!, "tls.key") ?? "");
    assert.equal(key.asymmetricKeyDetails?.modulusLength, 3072);
    await access.closeAll();
  });

  it("reports a CA that expired since the last passed check within a minute, with nothing else changed", async () => {
    const { store, access, advance } = await setup();
    const ca = await createCA("short-lived", validFor(10 * 60_000, start));
    store.seed(ns, `${name}-ca`, { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    advance(9.5 * 60_000);
    await access.ensureCertificates(controlPlane(ns, name), withEndpoint());
    // Expired 30 s ago; the last passed check was a minute ago.
    advance(60_000);
    await assert.rejects(access.ensureCertificates(controlPlane(ns, name), withEndpoint()), CertificateExpiredError);
    await access.closeAll();
  });

  it("refuses to regenerate the etcd CA a user deleted on a running cluster, naming the Secret and the fix", async () => {
    const { store, access, advance } = await setup();
    await access.ensureCertificates(controlPlane(ns, name), withEndpoint());
    const running: QuorumControlPlane = {
      ...controlPlane(ns, name),
      status: { replicas: 3, initialization: { controlPlaneInitialized: true } },
    };
    const initialized: Cluster = { ...withEndpoint(), status: { initialization: { controlPlaneInitialized: true } } };
    store.secrets.delete(`${ns}/${name}-etcd`);
    const writes = store.writes.length;
    advance(1_000);
    for (let attempt = 0; attempt < 2; attempt++) {
      await assert.rejects(
        access.ensureCertificates(running, initialized),
        (error: unknown) =>
          error instanceof RunningClusterSecretMissingError &&
          error.message.startsWith(
            `Secret ${ns}/${name}-etcd not found, but the cluster is running (Cluster ${ns}/${name} reports its control plane initialized): restore ${ns}/${name}-etcd from backup`,
          ),
      );
    }
    assert.equal(store.secrets.has(`${ns}/${name}-etcd`), false, "no new etcd CA");
    assert.equal(store.writes.length, writes);
    await access.closeAll();
  });
});
