// Quorum's own etcd client certificate per workload cluster, signed by the cluster's `<cluster>-etcd` CA.
// Issued in memory (never stored), short-lived, cached per cluster and renewed at 2/3 of its lifetime so a
// certificate in use never expires mid-reconcile; re-issued at once when the CA Secret's content changes
// (a user rotated their etcd CA).
import { createHash } from "node:crypto";
import { secretName } from "../../api/constants.ts";
import { readCASecret, TLS_CRT } from "../certs/ca-secret.ts";
import { issueCertificate, validFor } from "../certs/pki.ts";
import { dataText, type SecretStore } from "../certs/secret-store.ts";
import type { EtcdClientCredentials } from "./types.ts";

export const ETCD_CLIENT_COMMON_NAME = "quorum-etcd-client";
export const ETCD_CLIENT_CERT_LIFETIME_MS = 24 * 60 * 60 * 1000;

export interface EtcdCredentialsOptions {
  lifetimeMs?: number;
  /** Fraction of the lifetime after which a new certificate is issued. */
  renewAtFraction?: number;
}

interface CacheEntry {
  caFingerprint: string;
  renewAt: number;
  credentials: EtcdClientCredentials;
}

export class EtcdClientCertificates {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly lifetimeMs: number;
  private readonly renewAtFraction: number;

  constructor(
    private readonly store: SecretStore,
    options: EtcdCredentialsOptions = {},
  ) {
    this.lifetimeMs = options.lifetimeMs ?? ETCD_CLIENT_CERT_LIFETIME_MS;
    this.renewAtFraction = options.renewAtFraction ?? 2 / 3;
  }

  /**
   * Client credentials for the etcd of `cluster` in `namespace`. Throws SecretMissingError, SecretGarbageError,
   * CAKeyMismatchError or CertificateExpiredError (each naming `<cluster>-etcd`) when the CA is unusable.
   */
  async get(namespace: string, cluster: string, now: Date): Promise<EtcdClientCredentials> {
    const ref = { namespace, name: secretName.etcd(cluster) };
    const secret = await this.store.get(ref);
    const fingerprint = secret ? fingerprintOf(secret.data ?? {}) : "";
    const key = `${namespace}/${cluster}`;
    const cached = this.cache.get(key);
    if (cached && cached.caFingerprint === fingerprint && now.getTime() < cached.renewAt) return cached.credentials;

    const ca = await readCASecret(ref, secret, now, "to issue Quorum's etcd client certificate for this cluster");
    // Never outlive the CA: etcd would reject the chain the moment the CA expires anyway.
    const lifetimeMs = Math.min(this.lifetimeMs, ca.notAfter.getTime() - now.getTime());
    const issued = await issueCertificate(ca, {
      commonName: ETCD_CLIENT_COMMON_NAME,
      usages: "client",
      validity: validFor(lifetimeMs, now),
    });
    // Trust the Secret's whole tls.crt: a user's bundle may carry more than the one signing certificate.
    const trusted = (secret && dataText(secret, TLS_CRT)) ?? ca.certPem;
    const credentials: EtcdClientCredentials = { caPem: trusted, certPem: issued.certPem, keyPem: issued.keyPem };
    this.cache.set(key, {
      caFingerprint: fingerprint,
      renewAt: now.getTime() + lifetimeMs * this.renewAtFraction,
      credentials,
    });
    return credentials;
  }

  /** Drops the cached certificate of a cluster that is gone. */
  forget(namespace: string, cluster: string): void {
    this.cache.delete(`${namespace}/${cluster}`);
  }
}

function fingerprintOf(data: Record<string, string>): string {
  const hash = createHash("sha256");
  for (const key of Object.keys(data).sort()) hash.update(`${key}\0${data[key]}\0`);
  return hash.digest("hex");
}
