// Quorum's own short-lived client certificates, one per workload cluster and purpose, signed by a CA Secret of that
// cluster (`<cluster>-etcd` for etcd, `<cluster>-ca` for the workload API). Issued in memory, never stored; renewed
// at 2/3 of their lifetime so a certificate in use never expires mid-reconcile; re-issued at once when the CA Secret's
// content changes (a user rotated the CA). forget() drops a cluster's private key with the cluster.
import { createHash } from "node:crypto";
import type { SecretRef } from "../errors.ts";
import { readCASecret, TLS_CRT } from "./ca-secret.ts";
import { issueCertificate, validFor } from "./pki.ts";
import { dataText, type SecretStore } from "./secret-store.ts";

/** mTLS material, PEM: the CA bundle to trust, Quorum's client certificate and its private key. */
export interface ClientCredentials {
  caPem: string;
  certPem: string;
  keyPem: string;
}

export interface ClientCertificatesOptions {
  /** The signing CA Secret of a cluster, e.g. `<cluster>-etcd`. */
  caSecret: (cluster: string) => string;
  commonName: string;
  organization?: string;
  /** Why the CA is needed, for the error when it is unusable ("to issue Quorum's etcd client certificate ..."). */
  purpose: string;
  lifetimeMs: number;
  /** Fraction of the lifetime after which a new certificate is issued (default 2/3). */
  renewAtFraction?: number;
}

interface CacheEntry {
  caFingerprint: string;
  renewAt: number;
  credentials: ClientCredentials;
}

export class ClientCertificates {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly store: SecretStore,
    private readonly options: ClientCertificatesOptions,
  ) {}

  /** The CA Secret that signs the certificates of `cluster`. */
  caRef(namespace: string, cluster: string): SecretRef {
    return { namespace, name: this.options.caSecret(cluster) };
  }

  /**
   * Client credentials for `cluster` in `namespace`. Throws SecretMissingError, SecretGarbageError, CAKeyMismatchError
   * or CertificateExpiredError (each naming the CA Secret) when the CA is unusable.
   */
  async get(namespace: string, cluster: string, now: Date): Promise<ClientCredentials> {
    const ref = this.caRef(namespace, cluster);
    const secret = await this.store.get(ref);
    const fingerprint = secret ? fingerprintOf(secret.data ?? {}) : "";
    const key = `${namespace}/${cluster}`;
    const cached = this.cache.get(key);
    if (cached && cached.caFingerprint === fingerprint && now.getTime() < cached.renewAt) return cached.credentials;

    const ca = await readCASecret(ref, secret, now, this.options.purpose);
    // Never outlive the CA: the server would reject the chain the moment the CA expires anyway.
    const lifetimeMs = Math.min(this.options.lifetimeMs, ca.notAfter.getTime() - now.getTime());
    const issued = await issueCertificate(ca, {
      commonName: this.options.commonName,
      ...(this.options.organization ? { organization: this.options.organization } : {}),
      usages: "client",
      validity: validFor(lifetimeMs, now),
    });
    // Trust the Secret's whole tls.crt: a user's bundle may carry more than the one signing certificate.
    const trusted = (secret && dataText(secret, TLS_CRT)) ?? ca.certPem;
    const credentials: ClientCredentials = { caPem: trusted, certPem: issued.certPem, keyPem: issued.keyPem };
    this.cache.set(key, {
      caFingerprint: fingerprint,
      renewAt: now.getTime() + lifetimeMs * (this.options.renewAtFraction ?? 2 / 3),
      credentials,
    });
    return credentials;
  }

  /** Drops the cached certificate and private key of a cluster that is gone; of every cluster without arguments. */
  forget(namespace?: string, cluster?: string): void {
    if (namespace === undefined || cluster === undefined) this.cache.clear();
    else this.cache.delete(`${namespace}/${cluster}`);
  }

  /** namespace/cluster of every cluster whose private key is held (for tests of forget). */
  heldClusters(): string[] {
    return [...this.cache.keys()];
  }
}

function fingerprintOf(data: Record<string, string>): string {
  const hash = createHash("sha256");
  for (const key of Object.keys(data).sort()) hash.update(`${key}\0${data[key]}\0`);
  return hash.digest("hex");
}
