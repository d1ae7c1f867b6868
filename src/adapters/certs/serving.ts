// The metrics endpoint's TLS serving certificate: the pair a user mounts (cert-manager, a Secret volume) in
// --metrics-cert-dir, or, without one, a self-signed pair made at start and kept only in memory. A scraper then
// verifies the mounted certificate, or pins nothing and relies on the bearer token for who may read; either way the
// token never crosses the network in clear text.
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { errorMessage } from "../kube/log.ts";
import { certificateMatchesKey, createCA, issueCertificate, oneDay, validFor, type CertificateAndKey } from "./pki.ts";

/** Reads tls.crt and tls.key from `certDir`; throws an error naming the file and the fix. */
export function servingCertificateFromDir(certDir: string): CertificateAndKey {
  const read = (name: string) => {
    const path = join(certDir, name);
    try {
      return readFileSync(path, "utf8");
    } catch (error) {
      throw new Error(
        `--metrics-cert-dir: cannot read ${path} (${errorMessage(error)}): mount a TLS Secret there (tls.crt, tls.key) or omit the flag for a self-signed certificate`,
        { cause: error },
      );
    }
  };
  const pair = { certPem: read("tls.crt"), keyPem: read("tls.key") };
  try {
    new X509Certificate(pair.certPem);
  } catch (error) {
    throw new Error(
      `--metrics-cert-dir: ${join(certDir, "tls.crt")} is not a PEM certificate (${errorMessage(error)})`,
      { cause: error },
    );
  }
  let matches: boolean;
  try {
    matches = certificateMatchesKey(pair.certPem, pair.keyPem);
  } catch (error) {
    throw new Error(
      `--metrics-cert-dir: ${join(certDir, "tls.key")} is not a PEM private key (${errorMessage(error)})`,
      { cause: error },
    );
  }
  if (!matches)
    throw new Error(
      `--metrics-cert-dir: ${join(certDir, "tls.key")} is not the private key of ${join(certDir, "tls.crt")}`,
    );
  return pair;
}

/** A serving certificate for this host from a throwaway CA whose key is dropped at once; valid for a year. */
export async function selfSignedServingCertificate(now: Date = new Date()): Promise<CertificateAndKey> {
  const validity = validFor(365 * oneDay, now);
  const ca = await createCA("quorum-metrics-ca", validity);
  const leaf = await issueCertificate(ca, {
    commonName: "quorum-metrics",
    dnsNames: [hostname(), "localhost"],
    ipAddresses: ["127.0.0.1", "::1"],
    usages: "server",
    validity,
  });
  return { certPem: `${leaf.certPem.trim()}\n${ca.certPem.trim()}\n`, keyPem: leaf.keyPem };
}
