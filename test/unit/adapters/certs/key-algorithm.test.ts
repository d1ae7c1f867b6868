// kubeadm's encryptionAlgorithm in the bootstrap config template picks the key type of a new cluster's CAs and
// service-account key, as KCP does (CAPI util/secret): RSA of the size asked, or ECDSA on the curve asked. The CAs must
// still sign what Quorum issues with them (an etcd client certificate, the kubeconfig's), and the service-account
// key must sign and verify as kube-apiserver uses it.
import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, sign, verify, X509Certificate } from "node:crypto";
import { describe, it } from "node:test";
import { readCASecret } from "../../../../src/adapters/certs/ca-secret.ts";
import { ensureClusterCertificates } from "../../../../src/adapters/certs/cluster-secrets.ts";
import {
  encryptionAlgorithmOf,
  KEY_ALGORITHMS,
  type KeyAlgorithm,
} from "../../../../src/adapters/certs/key-algorithm.ts";
import { issueCertificate, oneDay, validFor } from "../../../../src/adapters/certs/pki.ts";
import { dataText } from "../../../../src/adapters/certs/secret-store.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

const owner = { namespace: "team-a", name: "prod-cp", uid: "6d1c1c1e-0000-4000-8000-00000000a001" };
const now = new Date("2030-01-01T00:00:00Z");

function template(encryptionAlgorithm?: unknown) {
  return {
    apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
    kind: "KubeadmConfigTemplate",
    metadata: { name: "cp", namespace: "team-a" },
    spec: {
      template: { spec: { clusterConfiguration: encryptionAlgorithm === undefined ? {} : { encryptionAlgorithm } } },
    },
  };
}

/** "rsa 3072" or "ec P-384", as Node reads a PEM key. */
function keyType(pem: string): string {
  const key = createPrivateKey(pem);
  const details = key.asymmetricKeyDetails;
  return key.asymmetricKeyType === "rsa" ? `rsa ${details?.modulusLength}` : `ec ${details?.namedCurve}`;
}

const expected: Record<KeyAlgorithm, string> = {
  "ECDSA-P256": "ec prime256v1",
  "ECDSA-P384": "ec secp384r1",
  "RSA-2048": "rsa 2048",
  "RSA-3072": "rsa 3072",
  "RSA-4096": "rsa 4096",
};

describe("key type of a new cluster's Secrets from kubeadm's encryptionAlgorithm", () => {
  it("reads the template's clusterConfiguration.encryptionAlgorithm, and names the template and the choices for a value kubeadm refuses", () => {
    assert.equal(encryptionAlgorithmOf(template("ECDSA-P384"), "KubeadmConfigTemplate team-a/cp"), "ECDSA-P384");
    assert.equal(encryptionAlgorithmOf(template(), "KubeadmConfigTemplate team-a/cp"), undefined);
    assert.equal(encryptionAlgorithmOf(template(""), "KubeadmConfigTemplate team-a/cp"), undefined);
    assert.equal(
      encryptionAlgorithmOf(
        { apiVersion: "test/v1", kind: "TestBootstrapConfigTemplate", metadata: { name: "cp" }, spec: {} },
        "TestBootstrapConfigTemplate team-a/cp",
      ),
      undefined,
    );
    assert.throws(
      () => encryptionAlgorithmOf(template("rsa-2048"), "KubeadmConfigTemplate team-a/cp"),
      /^Error: KubeadmConfigTemplate team-a\/cp spec\.template\.spec\.clusterConfiguration\.encryptionAlgorithm is "rsa-2048": set one of ECDSA-P256, ECDSA-P384, RSA-2048, RSA-3072, RSA-4096, or leave it unset$/,
    );
  });

  for (const algorithm of KEY_ALGORITHMS) {
    it(`${algorithm}: every CA and the service-account key are ${expected[algorithm]}, and they work`, async () => {
      const store = new MemorySecretStore();
      let asked = 0;
      await ensureClusterCertificates(store, "prod", owner, now, undefined, async () => {
        asked++;
        return algorithm;
      });
      assert.equal(asked, 1, "the template is read once for all four Secrets");
      for (const name of ["prod-ca", "prod-etcd", "prod-proxy"]) {
        const secret = store.secrets.get(`team-a/${name}`);
        assert.ok(secret);
        assert.equal(keyType(dataText(secret, "tls.key") ?? ""), expected[algorithm], name);
        const ca = await readCASecret({ namespace: "team-a", name }, secret, now, "to test");
        const leaf = await issueCertificate(ca, {
          commonName: "client",
          usages: "client",
          validity: validFor(oneDay, now),
        });
        assert.ok(new X509Certificate(leaf.certPem).verify(new X509Certificate(ca.certPem).publicKey), `${name} signs`);
      }
      const sa = store.secrets.get("team-a/prod-sa");
      assert.ok(sa);
      const privatePem = dataText(sa, "tls.key") ?? "";
      assert.equal(keyType(privatePem), expected[algorithm]);
      // CAPI's PEM types: PKCS#1 for RSA, SEC1 for ECDSA; the public key as SPKI.
      assert.match(
        privatePem,
        algorithm.startsWith("RSA") ? /^-----BEGIN RSA PRIVATE KEY-----/ : /^-----BEGIN EC PRIVATE KEY-----/,
      );
      const publicPem = dataText(sa, "tls.crt") ?? "";
      assert.match(publicPem, /^-----BEGIN PUBLIC KEY-----/);
      const signature = sign("sha256", Buffer.from("token"), createPrivateKey(privatePem));
      assert.ok(verify("sha256", Buffer.from("token"), createPublicKey(publicPem), signature));
    });
  }

  it("does not read the template when every Secret exists, and keeps its defaults when the template sets nothing", async () => {
    const store = new MemorySecretStore();
    await ensureClusterCertificates(store, "prod", owner, now, undefined, async () => undefined);
    assert.equal(keyType(dataText(store.secrets.get("team-a/prod-ca")!, "tls.key") ?? ""), "ec prime256v1");
    assert.equal(keyType(dataText(store.secrets.get("team-a/prod-sa")!, "tls.key") ?? ""), "rsa 2048");
    await ensureClusterCertificates(store, "prod", owner, now, undefined, async () =>
      assert.fail("all four Secrets exist: nothing to generate, nothing to read"),
    );
  });
});
