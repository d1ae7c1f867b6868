// The etcd adapter's own types (credentials, client options, the client factory). The port it implements, and the
// data types it answers with, are declared in src/ports/etcd.ts.
import type { EtcdClusterClient } from "../../ports/etcd.ts";

export type {
  AddMemberOptions,
  EtcdAlarm,
  EtcdClusterClient,
  EtcdMember,
  EtcdMemberStatus,
  ListMembersOptions,
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
  /**
   * Absent: each endpoint is dialled at its URL (spec.etcd.access Direct). Present: the client opens a tunnel and dials
   * every endpoint, advertised client URLs included, through it (APIServerProxy, apiserver-tunnel.ts); the client owns
   * the tunnel and closes it with itself.
   */
  tunnel?: EtcdTunnelFactory;
  /**
   * Called when the kept connection to a member that answered closes or fails (the member died, restarted, or a
   * network path broke with a reset), so the cluster can be looked at now instead of at its next poll. At most once
   * per connection that answered; never for connections the client closes itself.
   */
  onConnectionLost?: (endpoint: string) => void;
}

/** Where the client dials instead of an endpoint's URL, and the host the member's serving certificate must name. */
export interface EtcdDialTarget {
  /** e.g. https://127.0.0.1:41234 */
  url: string;
  /** The endpoint's own host (IP or DNS name), checked against the certificate's subject alternative names. */
  servername: string;
}

export interface EtcdTunnel {
  dial(endpoint: string): Promise<EtcdDialTarget>;
  /**
   * A call to `endpoint` that started at `sinceMs` (Date.now()) and failed in transport with `cause`, told as the user
   * needs it: the member, the path taken and what the far side answered.
   */
  explain(endpoint: string, sinceMs: number, cause: string): string;
  /** What to check when no endpoint answered at all. */
  readonly fix: string;
  /** Closes the listeners and every connection through them. */
  close(): Promise<void>;
}

export interface EtcdTunnelFactory {
  /**
   * Two factories with the same identity open equivalent tunnels: the pool keeps a client while it is unchanged and
   * replaces the client when it changes (Direct <-> APIServerProxy, another API server).
   */
  readonly identity: string;
  open(): EtcdTunnel;
}

export type EtcdClusterClientFactory = (options: EtcdClientOptions) => EtcdClusterClient;
