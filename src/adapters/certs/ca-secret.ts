// Reads a CA (certificate + private key) out of a CAPI-style Secret (data keys tls.crt, tls.key) and turns
// every way it can be wrong into a typed error that names the Secret and the fix. Users bring their own CAs,
// so "wrong" is expected input, not a bug: nothing here may throw an untyped error for bad content.
import { createPrivateKey } from "node:crypto";
import { CAKeyMismatchError, CertificateExpiredError, SecretGarbageError, SecretMissingError, type SecretRef } from "../errors.ts";
import { certificateMatchesKey, decodeCertificatePem, loadCA, type CertificateAuthority } from "./pki.ts";
import { dataText, refOf, type SecretObject } from "./secret-store.ts";
import { errorMessage } from "../kube/log.ts";

export const TLS_CRT = "tls.crt";
export const TLS_KEY = "tls.key";

const caFix =
  "put a PEM CA certificate in tls.crt and its private key in tls.key (as CAPI and kubeadm write them), " +
  "or delete the Secret to let Quorum generate a new CA (only before any Machine uses it)";

/** The CA of `secret`, checked: PEM present and parseable, a CA, key matches, valid at `now`. */
export async function readCASecret(
  ref: SecretRef,
  secret: SecretObject | undefined,
  now: Date,
  purpose: string,
): Promise<CertificateAuthority> {
  if (!secret) {
    throw new SecretMissingError(
      ref,
      purpose,
      "Quorum creates it with the cluster's certificates when the QuorumControlPlane is first reconciled; " +
        "if you bring your own CA, create it with tls.crt and tls.key",
    );
  }
  const { certPem, keyPem } = caMaterial(secret);
  const certificate = decodeCertificatePem(certPem);
  const subject = certificate.subject || "(empty subject)";
  if (!certificateMatchesKey(certPem, keyPem)) throw new CAKeyMismatchError(refOf(secret), subject);
  if (now < certificate.notBefore || now > certificate.notAfter) {
    throw new CertificateExpiredError(refOf(secret), subject, certificate.notBefore, certificate.notAfter, now);
  }
  try {
    return await loadCA(certPem, keyPem);
  } catch (error) {
    // loadCA rejects a leaf certificate and key types Quorum cannot sign with.
    throw new SecretGarbageError(refOf(secret), TLS_CRT, `cannot be used as a signing CA (${errorMessage(error)})`, caFix, {
      cause: error,
    });
  }
}

/** tls.crt and tls.key as PEM text, each checked to parse; SecretGarbageError naming the bad key otherwise. */
export function caMaterial(secret: SecretObject): { certPem: string; keyPem: string } {
  const ref = refOf(secret);
  const certPem = dataText(secret, TLS_CRT);
  if (certPem === undefined) throw new SecretGarbageError(ref, TLS_CRT, "is missing or empty", caFix);
  try {
    decodeCertificatePem(certPem);
  } catch (error) {
    throw new SecretGarbageError(ref, TLS_CRT, `does not hold a PEM certificate (${errorMessage(error)})`, caFix, { cause: error });
  }
  const keyPem = dataText(secret, TLS_KEY);
  if (keyPem === undefined) throw new SecretGarbageError(ref, TLS_KEY, "is missing or empty", caFix);
  try {
    createPrivateKey(keyPem);
  } catch (error) {
    throw new SecretGarbageError(ref, TLS_KEY, `does not hold a PEM private key (${errorMessage(error)})`, caFix, { cause: error });
  }
  return { certPem, keyPem };
}
