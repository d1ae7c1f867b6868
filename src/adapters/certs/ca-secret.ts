// Reads a CA (certificate + private key) out of a CAPI-style Secret (data keys tls.crt, tls.key) and turns
// every way it can be wrong into a typed error that names the Secret and the fix. Users bring their own CAs,
// so "wrong" is expected input, not a bug: nothing here may throw an untyped error for bad content.
import { createHash, createPrivateKey, type KeyObject } from "node:crypto";
import type { X509Certificate } from "@peculiar/x509";
import {
  CAKeyMismatchError,
  CertificateExpiredError,
  SecretGarbageError,
  SecretMissingError,
  type SecretRef,
} from "../errors.ts";
import { decodeCertificatePem, loadParsedCA, parsedCertificateMatchesKey, type CertificateAuthority } from "./pki.ts";
import { dataText, refOf, type SecretObject } from "./secret-store.ts";
import { errorMessage } from "../kube/log.ts";

export const TLS_CRT = "tls.crt";
export const TLS_KEY = "tls.key";

const caFix =
  "put a PEM CA certificate in tls.crt and its private key in tls.key (as CAPI and kubeadm write them); on a " +
  "running cluster restore the Secret from backup, on a new one (no Machine yet) deleting it lets Quorum generate a CA";

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
      "Quorum creates it with the cluster's certificates only for a new cluster (no Machine yet); on a running " +
        "cluster restore it from backup; if you bring your own CA, create it with tls.crt and tls.key",
    );
  }
  const ca = await checkedCA(secret);
  if (now < ca.notBefore || now > ca.notAfter) {
    throw new CertificateExpiredError(refOf(secret), ca.subject || "(empty subject)", ca.notBefore, ca.notAfter, now);
  }
  return ca;
}

/**
 * Parsing a CA, matching its key and importing it for signing cost milliseconds, and every reconcile of every
 * cluster reads its CAs: the outcome is kept per Secret content (tls.crt + tls.key), so only a changed Secret is
 * parsed again. Expiry depends on the time and is checked by the caller on every read.
 */
type CheckedCA = CertificateAuthority & { subject: string; notBefore: Date };
const checkedCAs = new Map<string, { fingerprint: string; outcome: Promise<CheckedCA> }>();
const CHECKED_CAS_MAX = 10_000;
/** How many times a CA Secret's content was parsed and checked (for tests that it is not parsed again). */
let caChecks = 0;

function checkedCA(secret: SecretObject): Promise<CheckedCA> {
  const key = `${secret.metadata.namespace}/${secret.metadata.name}`;
  const fingerprint = caFingerprint(secret);
  const known = checkedCAs.get(key);
  if (known?.fingerprint === fingerprint) return known.outcome;
  caChecks++;
  const outcome = checkCA(secret);
  keepCheckedCA(key, fingerprint, outcome);
  // A failure is kept too (the same garbage fails the same way), but must not be an unhandled rejection here.
  outcome.catch(() => undefined);
  return outcome;
}

function caFingerprint(secret: SecretObject): string {
  return createHash("sha256")
    .update(secret.data?.[TLS_CRT] ?? "")
    .update("\0")
    .update(secret.data?.[TLS_KEY] ?? "")
    .digest("hex");
}

function keepCheckedCA(key: string, fingerprint: string, outcome: Promise<CheckedCA>): void {
  checkedCAs.delete(key);
  if (checkedCAs.size >= CHECKED_CAS_MAX) checkedCAs.delete(checkedCAs.keys().next().value as string);
  checkedCAs.set(key, { fingerprint, outcome });
}

/**
 * Records `ca` as the checked CA of `secret`, a Secret Quorum just wrote from that very CA (a new cluster's): its
 * content is what createCA made, so parsing it back when it is first read would only find what is already known.
 * Kept under the content written, so a Secret someone else wrote instead is still parsed and checked.
 */
export function rememberCreatedCA(secret: SecretObject, ca: CertificateAuthority): void {
  const checked: CheckedCA = { ...ca, subject: ca.certificate.subject, notBefore: ca.certificate.notBefore };
  keepCheckedCA(
    `${secret.metadata.namespace}/${secret.metadata.name}`,
    caFingerprint(secret),
    Promise.resolve(checked),
  );
}

/** How many CA Secret contents have been parsed and checked in this process (for tests of the cache). */
export function caSecretChecks(): number {
  return caChecks;
}

/**
 * Drops the parsed CA (its private key included) kept for the Secret `ref`, e.g. when its cluster is gone; without a
 * ref, every one (a controller that stopped leading needs none).
 */
export function forgetCheckedCA(ref?: SecretRef): void {
  if (ref) checkedCAs.delete(`${ref.namespace}/${ref.name}`);
  else checkedCAs.clear();
}

/** namespace/name of every CA Secret whose parsed CA (and key) is kept (for tests of forgetCheckedCA). */
export function checkedCASecrets(): string[] {
  return [...checkedCAs.keys()];
}

async function checkCA(secret: SecretObject): Promise<CheckedCA> {
  const { keyPem, certificate, key } = caMaterial(secret);
  const subject = certificate.subject || "(empty subject)";
  if (!parsedCertificateMatchesKey(certificate, key)) throw new CAKeyMismatchError(refOf(secret), subject);
  try {
    return Object.assign(await loadParsedCA(certificate, key, keyPem), { subject, notBefore: certificate.notBefore });
  } catch (error) {
    // loadParsedCA rejects a leaf certificate and key types Quorum cannot sign with.
    throw new SecretGarbageError(
      refOf(secret),
      TLS_CRT,
      `cannot be used as a signing CA (${errorMessage(error)})`,
      caFix,
      {
        cause: error,
      },
    );
  }
}

/**
 * tls.crt and tls.key as PEM text and parsed, each parsed once (with OpenSSL 3 reading a PEM key costs about a
 * millisecond); SecretGarbageError naming the bad key otherwise.
 */
export function caMaterial(secret: SecretObject): {
  certPem: string;
  keyPem: string;
  certificate: X509Certificate;
  key: KeyObject;
} {
  const ref = refOf(secret);
  const certPem = dataText(secret, TLS_CRT);
  if (certPem === undefined) throw new SecretGarbageError(ref, TLS_CRT, "is missing or empty", caFix);
  let certificate: X509Certificate;
  try {
    certificate = decodeCertificatePem(certPem);
  } catch (error) {
    throw new SecretGarbageError(ref, TLS_CRT, `does not hold a PEM certificate (${errorMessage(error)})`, caFix, {
      cause: error,
    });
  }
  const keyPem = dataText(secret, TLS_KEY);
  if (keyPem === undefined) throw new SecretGarbageError(ref, TLS_KEY, "is missing or empty", caFix);
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch (error) {
    throw new SecretGarbageError(ref, TLS_KEY, `does not hold a PEM private key (${errorMessage(error)})`, caFix, {
      cause: error,
    });
  }
  return { certPem, keyPem, certificate, key };
}
