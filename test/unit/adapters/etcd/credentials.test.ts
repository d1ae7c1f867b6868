import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { describe, it } from "node:test";
import { createCA, oneDay, oneHour, validFor } from "../../../../src/adapters/certs/pki.ts";
import { EtcdClientCertificates } from "../../../../src/adapters/etcd/credentials.ts";
import { SecretGarbageError, SecretMissingError } from "../../../../src/adapters/errors.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

const start = new Date("2030-01-01T00:00:00Z");
const at = (ms: number) => new Date(start.getTime() + ms);

async function storeWithEtcdCA(lifetimeMs = 365 * oneDay) {
  const store = new MemorySecretStore();
  const ca = await createCA("etcd-ca", validFor(lifetimeMs, start));
  store.seed("team-a", "prod-etcd", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
  return { store, ca };
}

describe("etcd client certificates", () => {
  it("issues a client certificate signed by the <cluster>-etcd CA", async () => {
    const { store, ca } = await storeWithEtcdCA();
    const credentials = await new EtcdClientCertificates(store).get("team-a", "prod", start);
    const client = new X509Certificate(credentials.certPem);
    assert.ok(client.verify(new X509Certificate(ca.certPem).publicKey));
    assert.equal(credentials.caPem.trim(), ca.certPem.trim());
    assert.ok(client.checkPrivateKey((await import("node:crypto")).createPrivateKey(credentials.keyPem)));
  });

  it("reuses the cached certificate until 2/3 of its lifetime, then issues a new one", async () => {
    const { store } = await storeWithEtcdCA();
    const certificates = new EtcdClientCertificates(store, { lifetimeMs: 3 * oneHour });
    const first = await certificates.get("team-a", "prod", start);
    assert.equal((await certificates.get("team-a", "prod", at(119 * 60 * 1000))).certPem, first.certPem);
    assert.notEqual((await certificates.get("team-a", "prod", at(121 * 60 * 1000))).certPem, first.certPem);
  });

  it("keeps one certificate per cluster", async () => {
    const { store } = await storeWithEtcdCA();
    const other = await createCA("etcd-ca", validFor(oneDay, start));
    store.seed("team-a", "staging-etcd", { "tls.crt": other.certPem, "tls.key": other.keyPem });
    const certificates = new EtcdClientCertificates(store);
    const prod = await certificates.get("team-a", "prod", start);
    const staging = await certificates.get("team-a", "staging", start);
    assert.notEqual(prod.certPem, staging.certPem);
    assert.equal((await certificates.get("team-a", "prod", start)).certPem, prod.certPem);
  });

  it("issues a new certificate at once when the etcd CA Secret is replaced", async () => {
    const { store } = await storeWithEtcdCA();
    const certificates = new EtcdClientCertificates(store);
    const first = await certificates.get("team-a", "prod", start);
    const rotated = await createCA("etcd-ca-2", validFor(oneDay, start));
    store.seed("team-a", "prod-etcd", { "tls.crt": rotated.certPem, "tls.key": rotated.keyPem });
    const second = await certificates.get("team-a", "prod", start);
    assert.ok(new X509Certificate(second.certPem).verify(new X509Certificate(rotated.certPem).publicKey));
    assert.notEqual(second.certPem, first.certPem);
  });

  it("never issues a certificate that outlives its CA", async () => {
    const { store, ca } = await storeWithEtcdCA(2 * oneHour);
    const credentials = await new EtcdClientCertificates(store, { lifetimeMs: oneDay }).get("team-a", "prod", start);
    assert.ok(new Date(new X509Certificate(credentials.certPem).validTo) <= ca.notAfter);
  });

  it("names the <cluster>-etcd Secret when it is missing or unusable", async () => {
    const store = new MemorySecretStore();
    const certificates = new EtcdClientCertificates(store);
    await assert.rejects(certificates.get("team-a", "prod", start), (error: unknown) => {
      assert.ok(error instanceof SecretMissingError);
      assert.match(
        error.message,
        /Secret team-a\/prod-etcd not found: Quorum needs it to issue Quorum's etcd client certificate/,
      );
      return true;
    });
    store.seed("team-a", "prod-etcd", { "tls.crt": "garbage", "tls.key": "garbage" });
    await assert.rejects(certificates.get("team-a", "prod", start), (error: unknown) => {
      assert.ok(error instanceof SecretGarbageError);
      assert.match(error.message, /Secret team-a\/prod-etcd: data key "tls\.crt" does not hold a PEM certificate/);
      return true;
    });
  });
});
