// Low-level certificate helpers shared by the controller (short-lived etcd client certificates signed by a
// workload cluster's `<cluster>-etcd` CA) and the test harness (etcd and kube-apiserver PKI).
// ECDSA P-256 keys via WebCrypto (a CA's key as kubeadm's encryptionAlgorithm asks, key-algorithm.ts), certificates via @peculiar/x509; everything crosses module boundaries as PEM.
import "reflect-metadata"; // @peculiar/x509 uses tsyringe, which needs the Reflect metadata polyfill first
import * as x509 from "@peculiar/x509";
import {
  createPrivateKey,
  randomBytes,
  webcrypto,
  X509Certificate as NodeX509Certificate,
  type KeyObject,
} from "node:crypto";

import { ecdsaCurve, rsaBits, type KeyAlgorithm } from "./key-algorithm.ts";

// Node has WebCrypto but no `self`, so @peculiar/x509 finds no default provider on its own.
x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const signingAlgorithm: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };

/** When a certificate is valid. */
export interface Validity {
  notBefore: Date;
  notAfter: Date;
}

/** What a leaf certificate may be used for: TLS server, TLS client, or both (etcd peers need both). */
export type CertificateUsage = "server" | "client" | "both";

/** A certificate with its PKCS#8 private key, both PEM. */
export interface CertificateAndKey {
  certPem: string;
  keyPem: string;
}

/** A CA that can sign leaf certificates. */
export interface CertificateAuthority extends CertificateAndKey {
  commonName: string;
  notAfter: Date;
  certificate: x509.X509Certificate;
  signingKey: CryptoKey;
}

export interface CertificateRequest {
  commonName: string;
  /** Subject O= values; Kubernetes reads them as groups (e.g. `system:masters`). */
  organization?: string | string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usages: CertificateUsage;
  validity: Validity;
}

/** An issued leaf certificate and its key. */
export interface IssuedCertificate extends CertificateAndKey {
  notAfter: Date;
}

// Backdating covers clock skew between the machine that signs and the one that verifies.
const clockSkewAllowanceMs = 5 * 60 * 1000;

/** A validity window starting (slightly backdated) now and lasting `durationMs`, in whole seconds. */
export function validFor(durationMs: number, from: Date = new Date()): Validity {
  return {
    notBefore: new Date(wholeSeconds(new Date(from.getTime() - clockSkewAllowanceMs))),
    notAfter: new Date(wholeSeconds(new Date(from.getTime() + durationMs))),
  };
}

function wholeSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000) * 1000;
}

export const oneHour = 60 * 60 * 1000;
export const oneDay = 24 * oneHour;

/** Creates a self-signed CA with a fresh key: P-256 unless `algorithm` (kubeadm's encryptionAlgorithm) says otherwise. */
export async function createCA(
  commonName: string,
  validity: Validity,
  algorithm: KeyAlgorithm = "ECDSA-P256",
): Promise<CertificateAuthority> {
  checkValidity(`CA ${commonName}`, validity);
  const keys = await generateKeyPair(algorithm);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerialNumber(),
    name: [{ CN: [commonName] }],
    notBefore: validity.notBefore,
    notAfter: validity.notAfter,
    signingAlgorithm: signingAlgorithmFor(keys.privateKey),
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    commonName,
    notAfter: certificate.notAfter,
    certificate,
    signingKey: keys.privateKey,
    certPem: certificate.toString("pem"),
    keyPem: await encodePrivateKeyPem(keys.privateKey),
  };
}

/** Rebuilds a CA from PEM (e.g. read back from a `<cluster>-etcd` Secret) so it can sign again. */
export async function loadCA(certPem: string, keyPem: string): Promise<CertificateAuthority> {
  return loadParsedCA(decodeCertificatePem(certPem), parsePrivateKeyPem(keyPem), keyPem);
}

/**
 * loadCA on a certificate and key already parsed (the CA Secret check parses each once: with OpenSSL 3 reading a PEM
 * key costs about a millisecond, and @peculiar/x509's ASN.1 parse more). `keyPem` is what `key` was parsed from.
 */
export async function loadParsedCA(
  certificate: x509.X509Certificate,
  key: KeyObject,
  keyPem: string,
): Promise<CertificateAuthority> {
  const basicConstraints = certificate.getExtension(x509.BasicConstraintsExtension);
  if (!basicConstraints?.ca) {
    throw new Error(
      `certificate ${certificate.subject} is not a CA (no basicConstraints CA:TRUE): pass the CA certificate, not a leaf`,
    );
  }
  if (!parsedCertificateMatchesKey(certificate, key)) {
    throw new Error(
      `CA ${certificate.subject}: the private key does not belong to the certificate: pass the key generated with this CA`,
    );
  }
  return {
    commonName: commonNameOf(certificate),
    notAfter: certificate.notAfter,
    certificate,
    signingKey: await signingKeyOf(key),
    certPem: certificate.toString("pem"),
    keyPem,
  };
}

/** Issues a leaf certificate with a fresh P-256 key, signed by `ca`. */
export async function issueCertificate(
  ca: CertificateAuthority,
  request: CertificateRequest,
): Promise<IssuedCertificate> {
  checkValidity(`certificate ${request.commonName}`, request.validity);
  // X.509 times have whole seconds; compare at that precision.
  if (wholeSeconds(request.validity.notAfter) > ca.notAfter.getTime()) {
    throw new Error(
      `certificate ${request.commonName}: notAfter ${request.validity.notAfter.toISOString()} is after its CA ` +
        `${ca.commonName} expires (${ca.notAfter.toISOString()}): shorten the validity or rotate the CA`,
    );
  }
  const keys = await generateKeyPair();
  const organizations =
    request.organization === undefined
      ? []
      : Array.isArray(request.organization)
        ? request.organization
        : [request.organization];
  const subject: x509.JsonName = [{ CN: [request.commonName] }];
  if (organizations.length > 0) subject.push({ O: organizations });

  const altNames: x509.JsonGeneralName[] = [
    ...(request.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(request.ipAddresses ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const extendedUsages: string[] = [];
  if (request.usages === "server" || request.usages === "both") extendedUsages.push(x509.ExtendedKeyUsage.serverAuth);
  if (request.usages === "client" || request.usages === "both") extendedUsages.push(x509.ExtendedKeyUsage.clientAuth);

  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension(extendedUsages, false),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await x509.AuthorityKeyIdentifierExtension.create(ca.certificate),
  ];
  if (altNames.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(altNames, false));

  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject,
    issuer: ca.certificate.subject,
    notBefore: request.validity.notBefore,
    notAfter: request.validity.notAfter,
    signingAlgorithm: signingAlgorithmFor(ca.signingKey),
    publicKey: keys.publicKey,
    signingKey: ca.signingKey,
    extensions,
  });
  return {
    certPem: certificate.toString("pem"),
    keyPem: await encodePrivateKeyPem(keys.privateKey),
    notAfter: certificate.notAfter,
  };
}

/** Parses one PEM certificate (the first one of a bundle). */
export function decodeCertificatePem(pem: string): x509.X509Certificate {
  const block = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pem);
  if (!block) throw new Error("no PEM certificate found (expected a -----BEGIN CERTIFICATE----- block)");
  return new x509.X509Certificate(block[0]);
}

export function encodeCertificatePem(certificate: x509.X509Certificate): string {
  return certificate.toString("pem");
}

/** Encodes a private key as PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"). */
export async function encodePrivateKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey("pkcs8", key);
  return x509.PemConverter.encode(der, "PRIVATE KEY");
}

/**
 * Imports a PKCS#8, SEC1 ("EC PRIVATE KEY") or PKCS#1 ("RSA PRIVATE KEY") private key as a signing key:
 * ECDSA P-256/P-384/P-521 or RSA, because CAs users bring (kubeadm's, CAPI's) are usually RSA.
 */
export async function decodePrivateKeyPem(pem: string): Promise<CryptoKey> {
  return signingKeyOf(parsePrivateKeyPem(pem));
}

/** A private key PEM (PKCS#8, SEC1 or PKCS#1: node:crypto reads all three), or an error saying what it takes. */
export function parsePrivateKeyPem(pem: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (error) {
    throw new Error(
      `cannot read private key PEM: ${(error as Error).message}: pass a PKCS#8, EC or RSA private key PEM`,
      { cause: error },
    );
  }
}

async function signingKeyOf(key: KeyObject): Promise<CryptoKey> {
  let der: Buffer;
  let importAlgorithm: EcKeyImportParams | RsaHashedImportParams;
  try {
    // WebCrypto only takes PKCS#8.
    der = key.export({ format: "der", type: "pkcs8" });
    importAlgorithm = importAlgorithmFor(key);
  } catch (error) {
    throw new Error(
      `cannot read private key PEM: ${(error as Error).message}: pass a PKCS#8, EC or RSA private key PEM`,
      { cause: error },
    );
  }
  return webcrypto.subtle.importKey("pkcs8", der, importAlgorithm, true, ["sign"]) as Promise<CryptoKey>;
}

/** Whether `keyPem` is the private key of the certificate in `certPem`. */
export function certificateMatchesKey(certPem: string, keyPem: string): boolean {
  return parsedCertificateMatchesKey(decodeCertificatePem(certPem), createPrivateKey(keyPem));
}

/** certificateMatchesKey on a certificate and key already parsed. */
export function parsedCertificateMatchesKey(certificate: x509.X509Certificate, key: KeyObject): boolean {
  return new NodeX509Certificate(Buffer.from(certificate.rawData)).checkPrivateKey(key);
}

/** When the certificate in `certPem` expires. */
export function certificateExpiry(certPem: string): Date {
  return decodeCertificatePem(certPem).notAfter;
}

function commonNameOf(certificate: x509.X509Certificate): string {
  return new x509.Name(certificate.subject).getField("CN")[0] ?? certificate.subject;
}

function checkValidity(what: string, validity: Validity): void {
  if (!(validity.notAfter.getTime() > validity.notBefore.getTime())) {
    throw new Error(
      `${what}: notAfter ${validity.notAfter.toISOString()} is not after notBefore ${validity.notBefore.toISOString()}: ` +
        "pass a positive validity, e.g. validFor(oneDay)",
    );
  }
}

/** A fresh key pair: ECDSA on the algorithm's curve, or RSA (PKCS#1 v1.5 signatures with SHA-256) of its size. */
async function generateKeyPair(algorithm: KeyAlgorithm = "ECDSA-P256"): Promise<CryptoKeyPair> {
  const bits = rsaBits(algorithm);
  const params: EcKeyGenParams | RsaHashedKeyGenParams =
    bits === undefined
      ? { name: "ECDSA", namedCurve: ecdsaCurve(algorithm) ?? "P-256" }
      : { name: "RSASSA-PKCS1-v1_5", modulusLength: bits, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" };
  return (await webcrypto.subtle.generateKey(params, true, ["sign", "verify"])) as CryptoKeyPair;
}

// RFC 5280: positive and at most 20 octets. Top bit cleared keeps it positive; a non-zero first byte keeps
// the DER encoding minimal (some verifiers reject a leading zero octet).
function randomSerialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x01;
  return bytes.toString("hex");
}

const webCryptoCurves: Record<string, string> = { prime256v1: "P-256", secp384r1: "P-384", secp521r1: "P-521" };

function importAlgorithmFor(key: KeyObject): EcKeyImportParams | RsaHashedImportParams {
  if (key.asymmetricKeyType === "rsa") return { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  const curve = webCryptoCurves[key.asymmetricKeyDetails?.namedCurve ?? ""];
  if (key.asymmetricKeyType === "ec" && curve) return { name: "ECDSA", namedCurve: curve };
  throw new Error(
    `unsupported key type ${key.asymmetricKeyType ?? "unknown"}${key.asymmetricKeyDetails?.namedCurve ? ` (${key.asymmetricKeyDetails.namedCurve})` : ""}`,
  );
}

/** How a CA key signs: SHA-256 with RSA and P-256, the curve's own hash size above that. */
function signingAlgorithmFor(key: CryptoKey): EcdsaParams | Algorithm {
  if (key.algorithm.name === "RSASSA-PKCS1-v1_5") return { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as Algorithm;
  const curve = (key.algorithm as EcKeyAlgorithm).namedCurve;
  if (curve === "P-384") return { name: "ECDSA", hash: "SHA-384" };
  if (curve === "P-521") return { name: "ECDSA", hash: "SHA-512" };
  return signingAlgorithm;
}
