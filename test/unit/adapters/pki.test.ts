import { test } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import * as tls from "node:tls";
import type { AddressInfo } from "node:net";
import {
  certificateExpiry,
  certificateMatchesKey,
  createCA,
  decodeCertificatePem,
  decodePrivateKeyPem,
  encodeCertificatePem,
  encodePrivateKeyPem,
  issueCertificate,
  loadCA,
  oneDay,
  oneHour,
  validFor,
} from "../../../src/adapters/certs/pki.ts";

test("a CA is self-signed, marked as a CA and verifiable by Node's X509Certificate", async () => {
  const ca = await createCA("etcd-ca", validFor(oneDay));
  const cert = new X509Certificate(ca.certPem);
  assert.equal(cert.ca, true);
  assert.equal(cert.subject, "CN=etcd-ca");
  assert.equal(cert.issuer, "CN=etcd-ca");
  assert.equal(cert.verify(cert.publicKey), true);
  assert.match(ca.keyPem, /^-----BEGIN PRIVATE KEY-----/);
});

test("a server certificate carries its DNS and IP names and is signed by the CA", async () => {
  const ca = await createCA("etcd-ca", validFor(oneDay));
  const server = await issueCertificate(ca, {
    commonName: "member-1",
    dnsNames: ["localhost", "member-1"],
    ipAddresses: ["127.0.1.1"],
    usages: "server",
    validity: validFor(oneHour),
  });
  const cert = new X509Certificate(server.certPem);
  assert.equal(cert.ca, false);
  assert.equal(cert.verify(new X509Certificate(ca.certPem).publicKey), true);
  assert.equal(cert.checkIssued(new X509Certificate(ca.certPem)), true);
  assert.equal(cert.checkHost("member-1"), "member-1");
  assert.equal(cert.checkIP("127.0.1.1"), "127.0.1.1");
  assert.equal(cert.checkIP("127.0.1.2"), undefined);
  assert.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.1"]);
});

test("usages choose the extended key usages: client only, or both for etcd peers", async () => {
  const ca = await createCA("ca", validFor(oneDay));
  const client = await issueCertificate(ca, { commonName: "c", usages: "client", validity: validFor(oneHour) });
  const peer = await issueCertificate(ca, { commonName: "p", usages: "both", validity: validFor(oneHour) });
  assert.deepEqual(new X509Certificate(client.certPem).keyUsage, ["1.3.6.1.5.5.7.3.2"]);
  assert.deepEqual(new X509Certificate(peer.certPem).keyUsage?.sort(), ["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]);
});

test("an organization becomes the subject's O, which Kubernetes reads as the user's group", async () => {
  const ca = await createCA("kube-ca", validFor(oneDay));
  const admin = await issueCertificate(ca, {
    commonName: "admin",
    organization: "system:masters",
    usages: "client",
    validity: validFor(oneHour),
  });
  assert.equal(new X509Certificate(admin.certPem).subject, "CN=admin\nO=system:masters");
});

test("a certificate matches its own key and not another certificate's key", async () => {
  const ca = await createCA("ca", validFor(oneDay));
  const a = await issueCertificate(ca, { commonName: "a", usages: "client", validity: validFor(oneHour) });
  const b = await issueCertificate(ca, { commonName: "b", usages: "client", validity: validFor(oneHour) });
  assert.equal(certificateMatchesKey(a.certPem, a.keyPem), true);
  assert.equal(certificateMatchesKey(a.certPem, b.keyPem), false);
  assert.equal(certificateMatchesKey(ca.certPem, ca.keyPem), true);
});

test("the expiry read from a certificate is the requested notAfter (to the second)", async () => {
  const notAfter = new Date(Date.UTC(2031, 4, 6, 7, 8, 9));
  const ca = await createCA("ca", { notBefore: new Date(Date.UTC(2020, 0, 1)), notAfter });
  assert.equal(certificateExpiry(ca.certPem).toISOString(), notAfter.toISOString());
  assert.equal(ca.notAfter.toISOString(), notAfter.toISOString());
});

test("certificates and keys survive a PEM round trip, and a reloaded CA still signs verifiable certificates", async () => {
  const ca = await createCA("ca", validFor(oneDay));
  assert.equal(encodeCertificatePem(decodeCertificatePem(ca.certPem)), ca.certPem);
  assert.equal(await encodePrivateKeyPem(await decodePrivateKeyPem(ca.keyPem)), ca.keyPem);

  const reloaded = await loadCA(ca.certPem, ca.keyPem);
  assert.equal(reloaded.commonName, "ca");
  const leaf = await issueCertificate(reloaded, { commonName: "leaf", usages: "client", validity: validFor(oneHour) });
  assert.equal(new X509Certificate(leaf.certPem).verify(new X509Certificate(ca.certPem).publicKey), true);
});

test("loading a leaf as a CA, or a CA with the wrong key, fails and says what to pass instead", async () => {
  const ca = await createCA("ca", validFor(oneDay));
  const leaf = await issueCertificate(ca, { commonName: "leaf", usages: "client", validity: validFor(oneHour) });
  await assert.rejects(loadCA(leaf.certPem, leaf.keyPem), /CN=leaf is not a CA.*pass the CA certificate/);
  await assert.rejects(loadCA(ca.certPem, leaf.keyPem), /does not belong to the certificate/);
});

test("a certificate outliving its CA, or with an empty validity, is refused", async () => {
  const ca = await createCA("short-ca", validFor(oneHour));
  await assert.rejects(
    issueCertificate(ca, { commonName: "leaf", usages: "client", validity: validFor(oneDay) }),
    /leaf: notAfter .* is after its CA short-ca expires/,
  );
  const now = new Date();
  await assert.rejects(createCA("ca", { notBefore: now, notAfter: now }), /is not after notBefore/);
});

test("a leaf may expire in the same second as its CA, since X.509 times have whole seconds", async () => {
  const validity = { notBefore: new Date("2025-01-01T00:00:00.000Z"), notAfter: new Date("2035-01-01T00:00:00.750Z") };
  const ca = await createCA("ca", validity);
  const leaf = await issueCertificate(ca, { commonName: "leaf", usages: "client", validity });
  assert.equal(leaf.notAfter.toISOString(), "2035-01-01T00:00:00.000Z");
});

test("text without a PEM certificate is rejected with a message naming the expected block", () => {
  assert.throws(() => decodeCertificatePem("not a certificate"), /BEGIN CERTIFICATE/);
});

test("the server and client certificates complete a mutual-TLS handshake that a foreign CA's client cannot", async () => {
  const ca = await createCA("ca", validFor(oneDay));
  const server = await issueCertificate(ca, {
    commonName: "server",
    ipAddresses: ["127.0.0.1"],
    usages: "server",
    validity: validFor(oneHour),
  });
  const client = await issueCertificate(ca, { commonName: "client", usages: "client", validity: validFor(oneHour) });
  const foreignCA = await createCA("foreign", validFor(oneDay));
  const foreignClient = await issueCertificate(foreignCA, {
    commonName: "intruder",
    usages: "client",
    validity: validFor(oneHour),
  });

  const listener = tls.createServer(
    { cert: server.certPem, key: server.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
    (socket) => socket.end(`hello ${(socket.getPeerCertificate().subject as { CN: string }).CN}`),
  );
  listener.listen(0, "127.0.0.1");
  await once(listener, "listening");
  const { port } = listener.address() as AddressInfo;
  // With TLS 1.3 the client learns that its certificate was refused only after its side of the handshake, as
  // an error or a bare close, so compare what each client was told rather than expecting a rejection.
  const connect = (credentials: { certPem: string; keyPem: string }) =>
    new Promise<string>((resolve) => {
      const socket = tls.connect({
        host: "127.0.0.1",
        port,
        ca: ca.certPem,
        cert: credentials.certPem,
        key: credentials.keyPem,
      });
      let received = "";
      socket.on("data", (chunk) => (received += chunk));
      socket.on("close", () => resolve(received));
      socket.on("error", (error) => resolve(`error: ${error.message}`));
    });
  try {
    assert.equal(await connect(client), "hello client");
    assert.doesNotMatch(await connect(foreignClient), /hello/);
  } finally {
    listener.close();
  }
});
