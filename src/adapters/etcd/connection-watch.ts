// Tells when the connection under an Etcd3 client stops being ready, so that a member that dies between two polls
// is looked at at once (a killed etcd's socket closes, and gRPC's channel leaves READY within milliseconds) instead of
// at the next --etcd-idle-poll-interval. A member that hangs without closing its socket (SIGSTOP, a silent network
// partition) changes nothing here: the poll finds it, as before. Through the API server (spec.etcd.access
// APIServerProxy) the connection is the tunnel's loopback socket, which closes when the port-forward stream ends (the
// member or its kubelet died): the same watch covers it (test/integration/etcd-apiserver-proxy.test.ts).
//
// etcd3 1.1.2 does not expose its gRPC channels: this reads them through its internals (Etcd3.pool.hosts[0], one host
// per client here, see client.ts), checked at run time. If the shape is not there (another etcd3 version), watching
// is off and polling alone finds dead members; connectionWatchSupported() says which, and an integration test
// (test/integration/etcd-connection-watch.test.ts) fails when it is off.
import type { Etcd3 } from "etcd3";

// grpc-js's ConnectivityState values (connectivity-state.ts), stable across its releases.
const READY = 2;
const SHUTDOWN = 4;

interface GrpcChannel {
  getConnectivityState(tryToConnect: boolean): number;
  watchConnectivityState(currentState: number, deadline: number, callback: (error?: Error) => void): void;
}

interface ServiceClient {
  getChannel(): GrpcChannel;
}

interface InternalHost {
  getServiceClient(name: string): ServiceClient;
}

/** The channel status calls travel on (the Maintenance service; the Cluster service shares its connection). */
function maintenanceChannel(etcd: Etcd3): GrpcChannel | undefined {
  const hosts = (etcd as unknown as { pool?: { hosts?: unknown } }).pool?.hosts;
  if (!Array.isArray(hosts) || hosts.length !== 1) return undefined;
  const host = hosts[0] as Partial<InternalHost> | undefined;
  if (typeof host?.getServiceClient !== "function") return undefined;
  try {
    const channel = host.getServiceClient("Maintenance").getChannel();
    return typeof channel.watchConnectivityState === "function" && typeof channel.getConnectivityState === "function"
      ? channel
      : undefined;
  } catch {
    return undefined; // the host was closed
  }
}

/** Whether this etcd3 exposes its channels as connection watching needs. */
export function connectionWatchSupported(etcd: Etcd3): boolean {
  return maintenanceChannel(etcd) !== undefined;
}

/**
 * Calls `onLost` once when the client's connection, ready now, stops being ready. Returns false (and watches nothing)
 * when the connection is not ready or the channel is not reachable; the caller arms it again after its next answer.
 * A channel shut down by close() does not call `onLost`.
 */
export function watchReadyConnection(etcd: Etcd3, onLost: () => void): boolean {
  const channel = maintenanceChannel(etcd);
  if (!channel || channel.getConnectivityState(false) !== READY) return false;
  channel.watchConnectivityState(READY, Infinity, () => {
    let state: number;
    try {
      state = channel.getConnectivityState(false);
    } catch {
      return; // shut down while the callback was queued
    }
    if (state !== SHUTDOWN && state !== READY) onLost();
  });
  return true;
}
