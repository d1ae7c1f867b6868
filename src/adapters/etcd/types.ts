// The etcd adapter's own types (credentials, client options, the client factory). The port it implements, and the
// data types it answers with, are declared in src/ports/etcd.ts.
import type { EtcdClusterClient } from "../../ports/etcd.ts";

export type {
  AddMemberOptions,
  EtcdAlarm,
  EtcdClusterClient,
  EtcdMember,
  EtcdMemberStatus,
  PromoteResult,
} from "../../ports/etcd.ts";

/** mTLS material for etcd, PEM. */
export interface EtcdClientCredentials {
  caPem: string;
  certPem: string;
  keyPem: string;
}

export interface EtcdClientOptions {
  /** https:// (or http://) URLs of etcd client ports. */
  endpoints: string[];
  /** Absent for plain-text etcd (tests only). */
  credentials?: EtcdClientCredentials;
  /** Hard deadline of each call to one member, in ms. */
  callDeadlineMs: number;
  /** Who is asking, for error messages, e.g. "etcd of cluster default/c1". */
  context?: string;
}

export type EtcdClusterClientFactory = (options: EtcdClientOptions) => EtcdClusterClient;
