import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { before, describe, it } from "node:test";
import { parse, stringify } from "yaml";
import { ensureClusterCertificates } from "../../../../src/adapters/certs/cluster-secrets.ts";
import {
  buildKubeconfig,
  ensureKubeconfig,
  kubeconfigDecision,
  kubeconfigFromSecret,
  parseKubeconfig,
} from "../../../../src/adapters/certs/kubeconfig.ts";
import {
  createCA,
  issueCertificate,
  oneDay,
  validFor,
  type CertificateAuthority,
} from "../../../../src/adapters/certs/pki.ts";
import { dataText } from "../../../../src/adapters/certs/secret-store.ts";
import { CAKeyMismatchError, SecretGarbageError, SecretMissingError } from "../../../../src/adapters/errors.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

const owner = { namespace: "team-a", name: "prod-cp", uid: "6d1c1c1e-0000-4000-8000-000000000001" };
const start = new Date("2030-01-01T00:00:00Z");
const server = "https://10.0.0.10:6443";
const endpoint = { host: "10.0.0.10", port: 6443 };

async function kubeconfigWith(
  ca: CertificateAuthority,
  issuedAt: Date,
  lifetimeMs: number,
  serverURL = server,
): Promise<string> {
  const client = await issueCertificate(ca, {
    commonName: "kubernetes-admin",
    organization: "system:masters",
    usages: "client",
    validity: validFor(lifetimeMs, issuedAt),
  });
  return buildKubeconfig({
    cluster: "prod",
    server: serverURL,
    caPem: ca.certPem,
    certPem: client.certPem,
    keyPem: client.keyPem,
  });
}

describe("kubeconfig rotation decision", () => {
  let ca: CertificateAuthority;
  let otherCA: CertificateAuthority;
  before(async () => {
    ca = await createCA("kubernetes", validFor(3650 * oneDay, start));
    otherCA = await createCA("kubernetes", validFor(3650 * oneDay, start));
  });

  it("keeps a kubeconfig whose certificate is in the first half of its lifetime", async () => {
    const text = await kubeconfigWith(ca, start, 100 * oneDay);
    assert.deepEqual(kubeconfigDecision(text, { server, caPem: ca.certPem }, new Date(start.getTime() + 45 * oneDay)), {
      rotate: false,
    });
  });

  it("rotates once half of the certificate's lifetime is gone", async () => {
    const text = await kubeconfigWith(ca, start, 100 * oneDay);
    const decision = kubeconfigDecision(text, { server, caPem: ca.certPem }, new Date(start.getTime() + 51 * oneDay));
    assert.equal(decision.rotate, true);
    assert.match(decision.rotate ? decision.reason : "", /past half its lifetime/);
  });

  const rotations: { name: string; text: () => Promise<string | undefined>; reason: RegExp }[] = [
    { name: "the Secret is absent", text: async () => undefined, reason: /absent/ },
    { name: "the kubeconfig is garbage", text: async () => "::: not yaml [", reason: /unreadable/ },
    {
      name: "it points at another server",
      text: () => kubeconfigWith(ca, start, 100 * oneDay, "https://10.9.9.9:6443"),
      reason: /server https:\/\/10\.9\.9\.9:6443 is not the control-plane endpoint/,
    },
    {
      name: "its client certificate comes from another CA",
      text: async () => {
        const text = await kubeconfigWith(otherCA, start, 100 * oneDay);
        const contents = parseKubeconfig(text);
        return buildKubeconfig({ ...contents, caPem: ca.certPem });
      },
      reason: /not signed by the cluster CA/,
    },
    {
      name: "someone added an exec stanza to its user",
      text: async () => {
        const text = await kubeconfigWith(ca, start, 100 * oneDay);
        return text.replace(
          "client-key-data:",
          "exec:\n        command: /bin/sh\n        args: [-c, touch MARKER]\n      client-key-data:",
        );
      },
      reason: /unreadable: field users\[0\] "prod-admin"\.user\.exec is refused/,
    },
    {
      name: "someone added a user with an exec stanza next to Quorum's",
      text: async () => {
        const text = await kubeconfigWith(ca, start, 100 * oneDay);
        return text.replace("users:\n", "users:\n  - name: extra\n    user:\n      exec:\n        command: /bin/sh\n");
      },
      reason: /holds fields Quorum does not write/,
    },
    {
      name: "its Cluster is named yes and the name is written plain, a boolean to client-go (YAML 1.1)",
      text: async () => {
        const contents = parseKubeconfig(await kubeconfigWith(ca, start, 100 * oneDay));
        return stringify(parse(buildKubeconfig({ ...contents, cluster: "yes" })));
      },
      reason: /values client-go reads as another type/,
    },
    {
      name: "its CA data is not the cluster CA",
      text: () => kubeconfigWith(otherCA, start, 100 * oneDay),
      reason: /CA is not the cluster CA/,
    },
  ];
  for (const rotation of rotations) {
    it(`rewrites the kubeconfig when ${rotation.name}`, async () => {
      const decision = kubeconfigDecision(await rotation.text(), { server, caPem: ca.certPem }, start);
      assert.equal(decision.rotate, true);
      assert.match(decision.rotate ? decision.reason : "", rotation.reason);
    });
  }
});

describe("the <cluster>-kubeconfig Secret", () => {
  it("is created with an admin client certificate from the cluster CA, for the control-plane endpoint", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, start);
    const result = await ensureKubeconfig(store, { cluster: "prod", owner, endpoint, now: start });
    assert.deepEqual(result, { action: "created", reason: "absent" });
    const secret = store.secrets.get("team-a/prod-kubeconfig");
    assert.ok(secret);
    assert.equal(secret.type, "cluster.x-k8s.io/secret");
    assert.equal(secret.metadata.labels?.["cluster.x-k8s.io/cluster-name"], "prod");
    assert.equal(secret.metadata.ownerReferences?.[0]?.uid, owner.uid);
    const contents = parseKubeconfig(dataText(secret, "value") ?? "");
    assert.equal(contents.server, server);
    const client = new X509Certificate(contents.certPem);
    const caCert = new X509Certificate(contents.caPem);
    assert.ok(client.verify(caCert.publicKey));
    assert.match(client.subject, /CN=kubernetes-admin/);
    assert.match(client.subject, /O=system:masters/);
    assert.equal(dataText(store.secrets.get("team-a/prod-ca")!, "tls.crt")?.trim(), contents.caPem.trim());
  });

  it("is left alone while its certificate is fresh, and rotated in place (same Secret, new certificate) after half its lifetime", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, start);
    await ensureKubeconfig(store, { cluster: "prod", owner, endpoint, now: start, lifetimeMs: 10 * oneDay });
    const first = store.secrets.get("team-a/prod-kubeconfig")!;
    assert.deepEqual(
      await ensureKubeconfig(store, {
        cluster: "prod",
        owner,
        endpoint,
        now: new Date(start.getTime() + 4 * oneDay),
        lifetimeMs: 10 * oneDay,
      }),
      { action: "unchanged" },
    );
    assert.deepEqual(store.secrets.get("team-a/prod-kubeconfig"), first);

    const later = new Date(start.getTime() + 6 * oneDay);
    const result = await ensureKubeconfig(store, {
      cluster: "prod",
      owner,
      endpoint,
      now: later,
      lifetimeMs: 10 * oneDay,
    });
    assert.equal(result.action, "rotated");
    const second = store.secrets.get("team-a/prod-kubeconfig")!;
    assert.notEqual(dataText(second, "value"), dataText(first, "value"));
    const notAfter = new Date(new X509Certificate(parseKubeconfig(dataText(second, "value")!).certPem).validTo);
    assert.ok(notAfter.getTime() > later.getTime() + 9 * oneDay);
  });

  it("is rewritten when the control-plane endpoint changes", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, start);
    await ensureKubeconfig(store, { cluster: "prod", owner, endpoint, now: start });
    const result = await ensureKubeconfig(store, {
      cluster: "prod",
      owner,
      endpoint: { host: "lb.example.com", port: 443 },
      now: start,
    });
    assert.equal(result.action, "rotated");
    assert.equal(
      parseKubeconfig(dataText(store.secrets.get("team-a/prod-kubeconfig")!, "value")!).server,
      "https://lb.example.com:443",
    );
  });

  it("is never touched when no QuorumControlPlane owns it (a user manages it)", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, start);
    const theirs = store.seed("team-a", "prod-kubeconfig", { value: "their kubeconfig" });
    assert.deepEqual(await ensureKubeconfig(store, { cluster: "prod", owner, endpoint, now: start }), {
      action: "not-owned",
    });
    assert.deepEqual(store.secrets.get("team-a/prod-kubeconfig"), theirs);
  });

  it("cannot be written without the cluster CA, and says which Secret is missing", async () => {
    const store = new MemorySecretStore();
    await assert.rejects(
      ensureKubeconfig(store, { cluster: "prod", owner, endpoint, now: start }),
      (error: unknown) => {
        assert.ok(error instanceof SecretMissingError);
        assert.match(
          error.message,
          /Secret team-a\/prod-ca not found: Quorum needs it to sign the client certificate of the cluster's kubeconfig/,
        );
        return true;
      },
    );
  });

  it("cannot be written with a cluster CA whose key does not match, and names that Secret", async () => {
    const store = new MemorySecretStore();
    const ca = await createCA("kubernetes", validFor(oneDay, start));
    const other = await createCA("kubernetes", validFor(oneDay, start));
    store.seed("team-a", "prod-ca", { "tls.crt": ca.certPem, "tls.key": other.keyPem });
    await assert.rejects(
      ensureKubeconfig(store, { cluster: "prod", owner, endpoint, now: start }),
      (error: unknown) => {
        assert.ok(error instanceof CAKeyMismatchError);
        assert.match(error.message, /Secret team-a\/prod-ca: tls\.key is not the private key/);
        return true;
      },
    );
  });

  it("reports a kubeconfig Secret with garbage in it as SecretGarbageError naming the Secret", () => {
    const store = new MemorySecretStore();
    const secret = store.seed("team-a", "prod-kubeconfig", { value: "clusters: 3" });
    assert.throws(
      () => kubeconfigFromSecret({ namespace: "team-a", name: "prod-kubeconfig" }, secret),
      (error: unknown) => {
        assert.ok(error instanceof SecretGarbageError);
        assert.match(
          error.message,
          /Secret team-a\/prod-kubeconfig: data key "value" has no context named by current-context null: delete the Secret/,
        );
        return true;
      },
    );
  });
});
