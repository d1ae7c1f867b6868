import assert from "node:assert/strict";
import { createPublicKey, createPrivateKey, sign, verify, X509Certificate } from "node:crypto";
import { describe, it } from "node:test";
import { caSecretChecks, readCASecret } from "../../../../src/adapters/certs/ca-secret.ts";
import type { Cluster } from "../../../../src/api/capi.ts";
import type { QuorumControlPlane, QuorumControlPlaneStatus } from "../../../../src/api/types.ts";
import {
  ensureClusterCertificates,
  generateSecretData,
  runningControlPlaneEvidence,
} from "../../../../src/adapters/certs/cluster-secrets.ts";
import { RunningClusterSecretMissingError } from "../../../../src/adapters/errors.ts";
import { dataText } from "../../../../src/adapters/certs/secret-store.ts";
import { createCA, issueCertificate, oneDay, validFor } from "../../../../src/adapters/certs/pki.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

const owner = { namespace: "team-a", name: "prod-cp", uid: "6d1c1c1e-0000-4000-8000-000000000001" };
const now = new Date("2030-01-01T00:00:00Z");

describe("cluster certificate Secrets", () => {
  it("creates the ca, etcd, proxy and sa Secrets in CAPI's layout, owned by the QuorumControlPlane", async () => {
    const store = new MemorySecretStore();
    const result = await ensureClusterCertificates(store, "prod", owner, now);
    assert.deepEqual(result.created.sort(), ["prod-ca", "prod-etcd", "prod-proxy", "prod-sa"]);
    for (const name of result.created) {
      const secret = store.secrets.get(`team-a/${name}`);
      assert.ok(secret);
      assert.equal(secret.type, "cluster.x-k8s.io/secret");
      assert.equal(secret.metadata.labels?.["cluster.x-k8s.io/cluster-name"], "prod");
      assert.deepEqual(secret.metadata.ownerReferences, [
        {
          apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
          kind: "QuorumControlPlane",
          name: "prod-cp",
          uid: owner.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    for (const [name, commonName] of [
      ["prod-ca", "kubernetes"],
      ["prod-etcd", "etcd-ca"],
      ["prod-proxy", "front-proxy-ca"],
    ]) {
      const ca = await readCASecret({ namespace: "team-a", name }, store.secrets.get(`team-a/${name}`), now, "to test");
      assert.equal(ca.commonName, commonName);
      assert.ok(new X509Certificate(ca.certPem).ca);
    }
  });

  it("writes the service-account Secret as a public key in tls.crt and its private key in tls.key", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, now);
    const secret = store.secrets.get("team-a/prod-sa");
    assert.ok(secret);
    const publicPem = dataText(secret, "tls.crt") ?? "";
    const privatePem = dataText(secret, "tls.key") ?? "";
    assert.match(publicPem, /^-----BEGIN PUBLIC KEY-----/);
    assert.match(privatePem, /^-----BEGIN RSA PRIVATE KEY-----/);
    const signature = sign("sha256", Buffer.from("token"), createPrivateKey(privatePem));
    assert.ok(verify("sha256", Buffer.from("token"), createPublicKey(publicPem), signature));
  });

  it("lets other work run while it generates the service-account RSA key", async () => {
    // A key generated on the event loop would finish before any other callback got a turn.
    let turns = 0;
    let generating = true;
    const tick = () => {
      turns++;
      if (generating) setImmediate(tick);
    };
    setImmediate(tick);
    const data = await generateSecretData("sa", now);
    generating = false;
    assert.match(data["tls.key"] ?? "", /^-----BEGIN RSA PRIVATE KEY-----/);
    assert.ok(turns > 0, "no other callback ran while the key was generated");
  });

  it("leaves Secrets that already exist byte-for-byte unchanged and creates only the missing ones", async () => {
    const store = new MemorySecretStore();
    const userCA = store.seed(
      "team-a",
      "prod-ca",
      { "tls.crt": "user cert", "tls.key": "user key" },
      { type: "Opaque" },
    );
    const userEtcd = store.seed("team-a", "prod-etcd", { "tls.crt": "their etcd cert", "tls.key": "their etcd key" });
    const result = await ensureClusterCertificates(store, "prod", owner, now);
    assert.deepEqual(result.existing.sort(), ["prod-ca", "prod-etcd"]);
    assert.deepEqual(result.created.sort(), ["prod-proxy", "prod-sa"]);
    assert.deepEqual(store.secrets.get("team-a/prod-ca"), userCA);
    assert.deepEqual(store.secrets.get("team-a/prod-etcd"), userEtcd);
  });

  it("does not parse back the cluster and etcd CAs it has just created when they are first read", async () => {
    const store = new MemorySecretStore();
    const cluster = { ...owner, uid: "6d1c1c1e-0000-4000-8000-000000000002" };
    await ensureClusterCertificates(store, "fresh", cluster, now);
    const before = caSecretChecks();
    for (const [name, commonName] of [
      ["fresh-ca", "kubernetes"],
      ["fresh-etcd", "etcd-ca"],
    ]) {
      const ref = { namespace: "team-a", name };
      // As read back from the API server: a copy, with its own resourceVersion.
      const ca = await readCASecret(ref, await store.get(ref), now, "to test");
      assert.equal(ca.commonName, commonName);
      const stored = new X509Certificate(dataText((await store.get(ref))!, "tls.crt")!);
      assert.equal(ca.certPem.trim(), stored.toString().trim());
      assert.equal(ca.notAfter.getTime(), new Date(stored.validTo).getTime());
      // It signs with the key stored next to the certificate.
      const leaf = await issueCertificate(ca, { commonName: "c", usages: "client", validity: validFor(oneDay, now) });
      assert.ok(new X509Certificate(leaf.certPem).verify(stored.publicKey));
    }
    assert.equal(caSecretChecks(), before, "a CA Quorum created was parsed back");
  });

  it("parses a CA that someone else created in the race, not the one Quorum generated", async () => {
    const store = new MemorySecretStore();
    const racing = Object.create(store) as MemorySecretStore;
    const theirs = await createCA("their-etcd-ca", validFor(oneDay, now));
    racing.create = async (secret) => {
      // Another writer's CA lands first.
      if (secret.metadata.name === "raced-etcd") {
        store.seed("team-a", "raced-etcd", { "tls.crt": theirs.certPem, "tls.key": theirs.keyPem });
        return "exists";
      }
      return store.create(secret);
    };
    await ensureClusterCertificates(racing, "raced", owner, now);
    const before = caSecretChecks();
    const ref = { namespace: "team-a", name: "raced-etcd" };
    const ca = await readCASecret(ref, await store.get(ref), now, "to test");
    assert.equal(caSecretChecks() - before, 1);
    assert.equal(ca.commonName, "their-etcd-ca");
  });

  it("does nothing on a second run", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, now);
    const before = structuredClone([...store.secrets]);
    const writes = store.writes.length;
    const again = await ensureClusterCertificates(store, "prod", owner, now);
    assert.deepEqual(again.created, []);
    assert.equal(store.writes.length, writes);
    assert.deepEqual([...store.secrets], before);
  });

  it("counts a Secret someone else created between the read and the create as existing, without overwriting it", async () => {
    const store = new MemorySecretStore();
    const racing = Object.create(store) as MemorySecretStore;
    racing.get = async (ref) => {
      const found = await store.get(ref);
      // Another writer creates prod-etcd right after Quorum saw it absent.
      if (ref.name === "prod-etcd" && !found)
        store.seed("team-a", "prod-etcd", { "tls.crt": "theirs", "tls.key": "theirs" });
      return found;
    };
    const result = await ensureClusterCertificates(racing, "prod", owner, now);
    assert.ok(result.existing.includes("prod-etcd"));
    assert.equal(dataText(store.secrets.get("team-a/prod-etcd")!, "tls.crt"), "theirs");
  });

  it("creates nothing on a running cluster and names every missing Secret with the restore fix", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, now);
    // Someone deletes the etcd CA and the service-account key of the running cluster.
    store.secrets.delete("team-a/prod-etcd");
    store.secrets.delete("team-a/prod-sa");
    const writes = store.writes.length;
    await assert.rejects(
      ensureClusterCertificates(store, "prod", owner, now, "Cluster team-a/prod reports its control plane initialized"),
      (error: unknown) =>
        error instanceof RunningClusterSecretMissingError &&
        error.needsUser &&
        error.message.startsWith(
          "Secrets team-a/prod-etcd, team-a/prod-sa not found, but the cluster is running (Cluster team-a/prod reports its control plane initialized): ",
        ) &&
        error.message.includes("restore team-a/prod-etcd, team-a/prod-sa from backup; Quorum does not regenerate"),
    );
    assert.equal(store.writes.length, writes, "no Secret may be created on a running cluster");
    assert.equal(store.secrets.has("team-a/prod-etcd"), false);
  });

  it("passes on a running cluster whose Secrets are all there, without writing", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, now);
    const writes = store.writes.length;
    const result = await ensureClusterCertificates(
      store,
      "prod",
      owner,
      now,
      "QuorumControlPlane team-a/prod-cp counts 3 Machines",
    );
    assert.deepEqual(result.existing.sort(), ["prod-ca", "prod-etcd", "prod-proxy", "prod-sa"]);
    assert.equal(store.writes.length, writes);
  });
});

describe("whether a cluster's control plane already runs (its CAs are in use)", () => {
  const controlPlane = (status?: QuorumControlPlaneStatus): QuorumControlPlane =>
    ({
      apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
      kind: "QuorumControlPlane",
      metadata: { name: "prod-cp", namespace: "team-a" },
      spec: {},
      ...(status ? { status } : {}),
    }) as QuorumControlPlane;
  const cluster = (status?: Cluster["status"]): Cluster => ({
    metadata: { name: "prod", namespace: "team-a" },
    ...(status ? { status } : {}),
  });
  const member = { id: "8e9e05c52164694d", name: "prod-cp-x7k2p", learner: false, healthy: true, leader: true };

  const cases: [string, QuorumControlPlane, Cluster, string | undefined][] = [
    ["a just-created QuorumControlPlane and Cluster", controlPlane(), cluster(), undefined],
    [
      "a status written before the first Machine (0 replicas, no members)",
      controlPlane({ replicas: 0, etcd: { members: [] }, initialization: { controlPlaneInitialized: false } }),
      cluster({ initialization: { infrastructureProvisioned: true } }),
      undefined,
    ],
    [
      "a Cluster whose control plane is initialized",
      controlPlane(),
      cluster({ initialization: { controlPlaneInitialized: true } }),
      "Cluster team-a/prod reports its control plane initialized",
    ],
    [
      "a Cluster with the ControlPlaneInitialized condition",
      controlPlane(),
      cluster({
        conditions: [
          {
            type: "ControlPlaneInitialized",
            status: "True",
            reason: "Initialized",
            lastTransitionTime: "2030-01-01T00:00:00Z",
          },
        ] as never,
      }),
      "Cluster team-a/prod reports its control plane initialized",
    ],
    [
      "our own initialized flag",
      controlPlane({ initialization: { controlPlaneInitialized: true } }),
      cluster(),
      "QuorumControlPlane team-a/prod-cp reports it initialized",
    ],
    [
      "a first Machine still booting",
      controlPlane({ replicas: 1 }),
      cluster(),
      "QuorumControlPlane team-a/prod-cp counts 1 Machine",
    ],
    [
      "etcd members in the status",
      controlPlane({ etcd: { members: [member] } }),
      cluster(),
      "QuorumControlPlane team-a/prod-cp lists 1 etcd member",
    ],
  ];
  for (const [name, qcp, capiCluster, expected] of cases) {
    it(`${expected === undefined ? "counts as new" : "counts as running"}: ${name}`, () => {
      assert.equal(runningControlPlaneEvidence(qcp, capiCluster), expected);
    });
  }
});
