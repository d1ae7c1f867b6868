// The metrics endpoint's serving certificate: self-signed at start, or a mounted TLS Secret's pair.
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  certificateMatchesKey,
  createCA,
  issueCertificate,
  oneDay,
  validFor,
} from "../../../../src/adapters/certs/pki.ts";
import { selfSignedServingCertificate, servingCertificateFromDir } from "../../../../src/adapters/certs/serving.ts";

describe("the metrics serving certificate", () => {
  it("is made at start for localhost when no directory is given, signed by a CA sent along in the chain", async () => {
    const pair = await selfSignedServingCertificate();
    const [leafPem, caPem] = pair.certPem.split(/(?<=-----END CERTIFICATE-----)\n/);
    const leaf = new X509Certificate(leafPem);
    assert.ok(leaf.checkHost("localhost"));
    assert.ok(leaf.checkIP("127.0.0.1"));
    assert.ok(leaf.verify(new X509Certificate(caPem).publicKey));
    assert.ok(certificateMatchesKey(leafPem, pair.keyPem));
  });

  it("is read from tls.crt and tls.key of --metrics-cert-dir, and a missing or mismatched file is named", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quorum-serving-"));
    try {
      assert.throws(
        () => servingCertificateFromDir(dir),
        /--metrics-cert-dir: cannot read .*tls\.crt .*: mount a TLS Secret there/,
      );
      // The CA outlives the leaves it signs, as a real one does (with equal lifetimes a leaf issued a second later
      // would outlive it, which issueCertificate rightly refuses).
      const ca = await createCA("test", validFor(7 * oneDay));
      const one = await issueCertificate(ca, { commonName: "metrics", usages: "server", validity: validFor(oneDay) });
      const other = await issueCertificate(ca, { commonName: "metrics", usages: "server", validity: validFor(oneDay) });
      writeFileSync(join(dir, "tls.crt"), one.certPem);
      writeFileSync(join(dir, "tls.key"), other.keyPem);
      assert.throws(() => servingCertificateFromDir(dir), /tls\.key is not the private key of .*tls\.crt/);
      writeFileSync(join(dir, "tls.key"), one.keyPem);
      assert.deepEqual(servingCertificateFromDir(dir), { certPem: one.certPem, keyPem: one.keyPem });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
