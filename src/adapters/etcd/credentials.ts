// Quorum's own etcd client certificate per workload cluster, signed by the cluster's `<cluster>-etcd` CA: issued in
// memory (never stored), short-lived, renewed at 2/3 of its lifetime, re-issued when the CA Secret changes
// (src/adapters/certs/client-certificates.ts).
import { secretName } from "../../api/constants.ts";
import { ClientCertificates } from "../certs/client-certificates.ts";
import type { SecretStore } from "../certs/secret-store.ts";

export const ETCD_CLIENT_COMMON_NAME = "quorum-etcd-client";
export const ETCD_CLIENT_CERT_LIFETIME_MS = 24 * 60 * 60 * 1000;

export interface EtcdCredentialsOptions {
  lifetimeMs?: number;
  /** Fraction of the lifetime after which a new certificate is issued. */
  renewAtFraction?: number;
}

export class EtcdClientCertificates extends ClientCertificates {
  constructor(store: SecretStore, options: EtcdCredentialsOptions = {}) {
    super(store, {
      caSecret: secretName.etcd,
      commonName: ETCD_CLIENT_COMMON_NAME,
      purpose: "to issue Quorum's etcd client certificate for this cluster",
      lifetimeMs: options.lifetimeMs ?? ETCD_CLIENT_CERT_LIFETIME_MS,
      ...(options.renewAtFraction !== undefined ? { renewAtFraction: options.renewAtFraction } : {}),
    });
  }
}
