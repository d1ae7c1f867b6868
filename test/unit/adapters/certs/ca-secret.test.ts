import "reflect-metadata"; // before @peculiar/x509 (tsyringe needs it)
import assert from "node:assert/strict";
import { createPrivateKey, webcrypto, X509Certificate } from "node:crypto";
import { before, describe, it } from "node:test";
import * as x509 from "@peculiar/x509";
import {
  caSecretChecks,
  checkCASecret,
  checkedCASecrets,
  loadedCASecrets,
  readCASecret,
} from "../../../../src/adapters/certs/ca-secret.ts";
import {
  createCA,
  issueCertificate,
  oneDay,
  validFor,
  type CertificateAuthority,
} from "../../../../src/adapters/certs/pki.ts";
import {
  AdapterError,
  CAKeyMismatchError,
  CertificateExpiredError,
  SecretGarbageError,
  SecretMissingError,
} from "../../../../src/adapters/errors.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

const ref = { namespace: "team-a", name: "prod-etcd" };
const now = new Date("2030-01-01T00:00:00Z");

describe("reading a CA Secret", () => {
  let ca: CertificateAuthority;
  let otherCA: CertificateAuthority;
  let expiredCA: CertificateAuthority;
  let leaf: { certPem: string; keyPem: string };

  before(async () => {
    ca = await createCA("etcd-ca", validFor(365 * oneDay, now));
    otherCA = await createCA("other-ca", validFor(365 * oneDay, now));
    expiredCA = await createCA("old-ca", {
      notBefore: new Date(now.getTime() - 10 * oneDay),
      notAfter: new Date(now.getTime() - oneDay),
    });
    leaf = await issueCertificate(ca, { commonName: "leaf", usages: "client", validity: validFor(oneDay, now) });
  });

  it("returns a CA that can sign when the Secret holds a valid CA and its key", async () => {
    const store = new MemorySecretStore();
    const secret = store.seed(ref.namespace, ref.name, { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    const loaded = await readCASecret(ref, secret, now, "to test");
    assert.equal(loaded.certPem.trim(), ca.certPem.trim());
    await issueCertificate(loaded, { commonName: "client", usages: "client", validity: validFor(oneDay, now) });
  });

  it("parses a CA Secret once while its content stays the same, and again when it changes", async () => {
    const store = new MemorySecretStore();
    const cacheRef = { namespace: "team-a", name: "parsed-once-etcd" };
    const first = store.seed(cacheRef.namespace, cacheRef.name, { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    const before = caSecretChecks();
    await readCASecret(cacheRef, first, now, "to test");
    // Another reconcile reads the same content (a new resourceVersion, e.g. a label added, changes nothing).
    const relabelled = { ...first, metadata: { ...first.metadata, resourceVersion: "99", labels: { a: "b" } } };
    const again = await readCASecret(cacheRef, relabelled, now, "to test");
    assert.equal(caSecretChecks() - before, 1);
    assert.equal(again.commonName, "etcd-ca");
    const rotated = store.seed(cacheRef.namespace, cacheRef.name, {
      "tls.crt": otherCA.certPem,
      "tls.key": otherCA.keyPem,
    });
    assert.equal((await readCASecret(cacheRef, rotated, now, "to test")).commonName, "other-ca");
    assert.equal(caSecretChecks() - before, 2);
  });

  it("checks many CA Secrets once each but keeps the parsed CA and its key only for the last ones loaded to sign", async () => {
    const store = new MemorySecretStore();
    const refs = Array.from({ length: 80 }, (_, index) => ({ namespace: "bounded", name: `c${index}-ca` }));
    for (const each of refs) store.seed(each.namespace, each.name, { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    const before = caSecretChecks();
    for (const each of refs) await readCASecret(each, await store.get(each), now, "to test");
    assert.equal(caSecretChecks() - before, 80);
    const loaded = loadedCASecrets().filter((key) => key.startsWith("bounded/"));
    assert.equal(loaded.length, 64, "the parsed CA and private key of every Secret ever read are kept");
    assert.ok(!loaded.includes("bounded/c0-ca") && loaded.includes("bounded/c79-ca"), "not the oldest ones dropped");
    // A check (every reconcile's) of a CA no longer loaded answers from its summary, without parsing it again.
    const summary = await checkCASecret(refs[0], await store.get(refs[0]), now, "to test");
    assert.equal(caSecretChecks() - before, 80);
    assert.equal(summary.commonName, "etcd-ca");
    assert.equal(summary.certPem.trim(), ca.certPem.trim());
    assert.deepEqual(Object.keys(summary).sort(), ["certPem", "commonName", "notAfter", "notBefore", "subject"]);
    assert.equal(checkedCASecrets().filter((key) => key.startsWith("bounded/")).length, 80);
    // Signing with it parses it again (once), and keeps it loaded.
    await readCASecret(refs[0], await store.get(refs[0]), now, "to test");
    assert.equal(caSecretChecks() - before, 81);
    assert.ok(loadedCASecrets().includes("bounded/c0-ca"));
  });

  it("refuses an expired CA on a check as on a read", async () => {
    const store = new MemorySecretStore();
    const expiredRef = { namespace: "team-a", name: "expired-check-ca" };
    const secret = store.seed(expiredRef.namespace, expiredRef.name, {
      "tls.crt": expiredCA.certPem,
      "tls.key": expiredCA.keyPem,
    });
    await assert.rejects(checkCASecret(expiredRef, secret, now, "to test"), CertificateExpiredError);
    await assert.rejects(checkCASecret(expiredRef, undefined, now, "to test"), SecretMissingError);
  });

  it("signs with a user's RSA CA whose key is PKCS#1, as kubeadm and CAPI generate them", async () => {
    const rsa = await rsaCA("kubeadm-ca");
    const store = new MemorySecretStore();
    const secret = store.seed(ref.namespace, ref.name, { "tls.crt": rsa.certPem, "tls.key": rsa.keyPem });
    assert.match(rsa.keyPem, /^-----BEGIN RSA PRIVATE KEY-----/);
    const loaded = await readCASecret(ref, secret, now, "to test");
    const leafCert = await issueCertificate(loaded, {
      commonName: "client",
      usages: "client",
      validity: validFor(oneDay, now),
    });
    assert.ok(new X509Certificate(leafCert.certPem).verify(new X509Certificate(rsa.certPem).publicKey));
  });

  const cases: {
    name: string;
    data?: () => Record<string, string>;
    type: new (...args: never[]) => AdapterError;
    message: RegExp;
    at?: Date;
  }[] = [
    {
      name: "the Secret does not exist",
      type: SecretMissingError,
      message: /Secret team-a\/prod-etcd not found: .*to test.*create it with tls\.crt and tls\.key/,
    },
    {
      name: "tls.crt is empty",
      data: () => ({ "tls.crt": "", "tls.key": ca.keyPem }),
      type: SecretGarbageError,
      message: /Secret team-a\/prod-etcd: data key "tls\.crt" is missing or empty: put a PEM CA certificate/,
    },
    {
      name: "tls.crt is garbage",
      data: () => ({ "tls.crt": "hello world", "tls.key": ca.keyPem }),
      type: SecretGarbageError,
      message: /Secret team-a\/prod-etcd: data key "tls\.crt" does not hold a PEM certificate/,
    },
    {
      name: "tls.crt has a PEM block with garbage inside",
      data: () => ({
        "tls.crt": "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n",
        "tls.key": ca.keyPem,
      }),
      type: SecretGarbageError,
      message: /team-a\/prod-etcd: data key "tls\.crt" does not hold a PEM certificate/,
    },
    {
      name: "tls.key is missing",
      data: () => ({ "tls.crt": ca.certPem }),
      type: SecretGarbageError,
      message: /team-a\/prod-etcd: data key "tls\.key" is missing or empty/,
    },
    {
      name: "tls.key is garbage",
      data: () => ({
        "tls.crt": ca.certPem,
        "tls.key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
      }),
      type: SecretGarbageError,
      message: /team-a\/prod-etcd: data key "tls\.key" does not hold a PEM private key/,
    },
    {
      name: "tls.key belongs to another CA",
      data: () => ({ "tls.crt": ca.certPem, "tls.key": otherCA.keyPem }),
      type: CAKeyMismatchError,
      message:
        /Secret team-a\/prod-etcd: tls\.key is not the private key of the certificate in tls\.crt \(CN=etcd-ca\): put the key that was generated with this CA/,
    },
    {
      name: "the CA has expired",
      data: () => ({ "tls.crt": expiredCA.certPem, "tls.key": expiredCA.keyPem }),
      type: CertificateExpiredError,
      message:
        /Secret team-a\/prod-etcd: certificate CN=old-ca expired at .* \(now 2030-01-01T00:00:00\.000Z\): rotate it/,
    },
    {
      name: "the CA is not valid yet",
      data: () => ({ "tls.crt": ca.certPem, "tls.key": ca.keyPem }),
      at: new Date(now.getTime() - oneDay),
      type: CertificateExpiredError,
      message: /Secret team-a\/prod-etcd: certificate CN=etcd-ca is not valid until .*: check the clock of this host/,
    },
    {
      name: "tls.crt is a leaf certificate, not a CA",
      data: () => ({ "tls.crt": leaf.certPem, "tls.key": leaf.keyPem }),
      type: SecretGarbageError,
      message: /team-a\/prod-etcd: data key "tls\.crt" cannot be used as a signing CA \(.*not a CA/,
    },
  ];

  for (const testCase of cases) {
    it(`fails with ${testCase.type.name} naming the Secret and the fix when ${testCase.name}`, async () => {
      const store = new MemorySecretStore();
      const secret = testCase.data ? store.seed(ref.namespace, ref.name, testCase.data()) : undefined;
      await assert.rejects(readCASecret(ref, secret, testCase.at ?? now, "to test"), (error: unknown) => {
        assert.ok(error instanceof testCase.type, `expected ${testCase.type.name}, got ${String(error)}`);
        assert.match((error as Error).message, testCase.message);
        return true;
      });
    });
  }
});

/** A self-signed RSA CA with a PKCS#1 key, built without the helpers under test. */
async function rsaCA(commonName: string): Promise<{ certPem: string; keyPem: string }> {
  const algorithm = {
    name: "RSASSA-PKCS1-v1_5",
    hash: "SHA-256",
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ["sign", "verify"])) as CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: `CN=${commonName}`,
    notBefore: new Date(now.getTime() - oneDay),
    notAfter: new Date(now.getTime() + 365 * oneDay),
    signingAlgorithm: algorithm,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" })
    .export({ format: "pem", type: "pkcs1" })
    .toString();
  return { certPem: certificate.toString("pem"), keyPem };
}
