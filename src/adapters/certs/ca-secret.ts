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

/** What a checked CA Secret holds, without its key: enough to tell whether it is usable, and to compare a kubeconfig's CA. */
export interface CASummary {
  commonName: string;
  subject: string;
  /** The signing certificate, PEM (the first of tls.crt's bundle). */
  certPem: string;
  notBefore: Date;
  notAfter: Date;
}

/**
 * The CA of `secret`, checked (PEM present and parseable, a CA, key matches, valid at `now`) and loaded to sign: parsed
 * certificate and imported key. Only what signs needs this; checkCASecret answers "is it usable" from less memory.
 */
export async function readCASecret(
  ref: SecretRef,
  secret: SecretObject | undefined,
  now: Date,
  purpose: string,
): Promise<CertificateAuthority> {
  const ca = await loadedCA(present(ref, secret, purpose));
  checkValidAt(secret as SecretObject, ca, now);
  return ca;
}

/**
 * readCASecret's checks without keeping the CA loaded: the summary of every CA Secret Quorum checks is kept per
 * content, the parsed certificate and imported key (about 4 KB of heap per CA) only for the few CAs that signed
 * last. Every reconcile of every cluster checks its CAs; signing is once a day per cluster, or a new cluster's.
 */
export async function checkCASecret(
  ref: SecretRef,
  secret: SecretObject | undefined,
  now: Date,
  purpose: string,
): Promise<CASummary> {
  const summary = await checkedCA(present(ref, secret, purpose));
  checkValidAt(secret as SecretObject, summary, now);
  return summary;
}

function present(ref: SecretRef, secret: SecretObject | undefined, purpose: string): SecretObject {
  if (!secret) {
    throw new SecretMissingError(
      ref,
      purpose,
      "Quorum creates it with the cluster's certificates only for a new cluster (no Machine yet); on a running " +
        "cluster restore it from backup; if you bring your own CA, create it with tls.crt and tls.key",
    );
  }
  return secret;
}

function checkValidAt(secret: SecretObject, ca: CASummary, now: Date): void {
  if (now < ca.notBefore || now > ca.notAfter) {
    throw new CertificateExpiredError(refOf(secret), ca.subject || "(empty subject)", ca.notBefore, ca.notAfter, now);
  }
}

/**
 * Parsing a CA, matching its key and importing it for signing cost milliseconds, and every reconcile of every
 * cluster reads its CAs: the outcome is kept per Secret content (tls.crt + tls.key), so only a changed Secret is
 * parsed again. Expiry depends on the time and is checked by the caller on every read. What is kept per Secret is
 * the summary (issue 19: the parsed certificate and key of two CAs per cluster were 8.5 KB of heap per cluster); the
 * loaded CAs, for signing, only for the last LOADED_CAS_MAX Secrets that signed (a new cluster signs its etcd client
 * certificate and kubeconfig right after creating its CAs).
 */
type CheckedCA = CertificateAuthority & CASummary;
interface Kept<T> {
  fingerprint: string;
  outcome: Promise<T>;
}
const checkedCAs = new Map<string, Kept<CASummary>>();
const CHECKED_CAS_MAX = 10_000;
const loadedCAs = new Map<string, Kept<CheckedCA>>();
const LOADED_CAS_MAX = 64;
/** How many times a CA Secret's content was parsed and checked (for tests that it is not parsed again). */
let caChecks = 0;

function checkedCA(secret: SecretObject): Promise<CASummary> {
  const key = secretKeyOf(secret);
  const fingerprint = caFingerprint(secret);
  const known = checkedCAs.get(key);
  if (known?.fingerprint === fingerprint) return known.outcome;
  const outcome = loadedCA(secret);
  // Loaded for a signature earlier, its summary since dropped: kept again without the key.
  if (checkedCAs.get(key)?.fingerprint !== fingerprint) keepSummary(key, fingerprint, outcome);
  return outcome;
}

function loadedCA(secret: SecretObject): Promise<CheckedCA> {
  const key = secretKeyOf(secret);
  const fingerprint = caFingerprint(secret);
  const known = loadedCAs.get(key);
  if (known?.fingerprint === fingerprint) {
    // Most recently used last: the oldest is the one dropped.
    keep(loadedCAs, LOADED_CAS_MAX, key, known);
    return known.outcome;
  }
  caChecks++;
  const outcome = checkCA(secret);
  // A failure is kept too (the same garbage fails the same way), but must not be an unhandled rejection here.
  outcome.catch(() => undefined);
  remember(key, fingerprint, outcome);
  return outcome;
}

function remember(key: string, fingerprint: string, outcome: Promise<CheckedCA>): void {
  keep(loadedCAs, LOADED_CAS_MAX, key, { fingerprint, outcome });
  keepSummary(key, fingerprint, outcome);
}

/** Keeps the summary of a loaded CA (a failure too, handled here so it is never an unhandled rejection). */
function keepSummary(key: string, fingerprint: string, outcome: Promise<CheckedCA>): void {
  const summary = outcome.then(summaryOf);
  summary.catch(() => undefined);
  keep(checkedCAs, CHECKED_CAS_MAX, key, { fingerprint, outcome: summary });
}

/** Only what CASummary names, copied: nothing of the parsed certificate or the key stays reachable from it. */
function summaryOf(ca: CheckedCA): CASummary {
  return {
    commonName: ca.commonName,
    subject: ca.subject,
    certPem: ca.certPem,
    notBefore: ca.notBefore,
    notAfter: ca.notAfter,
  };
}

function keep<T>(map: Map<string, T>, max: number, key: string, value: T): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

function secretKeyOf(secret: SecretObject): string {
  return `${secret.metadata.namespace}/${secret.metadata.name}`;
}

function caFingerprint(secret: SecretObject): string {
  return createHash("sha256")
    .update(secret.data?.[TLS_CRT] ?? "")
    .update("\0")
    .update(secret.data?.[TLS_KEY] ?? "")
    .digest("hex");
}

/**
 * Records `ca` as the checked CA of `secret`, a Secret Quorum just wrote from that very CA (a new cluster's): its
 * content is what createCA made, so parsing it back when it is first read would only find what is already known.
 * Kept under the content written, so a Secret someone else wrote instead is still parsed and checked.
 */
export function rememberCreatedCA(secret: SecretObject, ca: CertificateAuthority): void {
  const checked: CheckedCA = { ...ca, subject: ca.certificate.subject, notBefore: ca.certificate.notBefore };
  remember(secretKeyOf(secret), caFingerprint(secret), Promise.resolve(checked));
}

/** How many CA Secret contents have been parsed and checked in this process (for tests of the cache). */
export function caSecretChecks(): number {
  return caChecks;
}

/**
 * Drops what is kept of the CA Secret `ref` (its summary, and the loaded CA with its private key), e.g. when its
 * cluster is gone; without a ref, every one (a controller that stopped leading needs none).
 */
export function forgetCheckedCA(ref?: SecretRef): void {
  if (ref) {
    checkedCAs.delete(`${ref.namespace}/${ref.name}`);
    loadedCAs.delete(`${ref.namespace}/${ref.name}`);
  } else {
    checkedCAs.clear();
    loadedCAs.clear();
  }
}

/** namespace/name of every CA Secret whose checked CA is kept (for tests of forgetCheckedCA). */
export function checkedCASecrets(): string[] {
  return [...new Set([...checkedCAs.keys(), ...loadedCAs.keys()])];
}

/** namespace/name of every CA Secret whose loaded CA, private key included, is kept (for tests of the bound). */
export function loadedCASecrets(): string[] {
  return [...loadedCAs.keys()];
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
