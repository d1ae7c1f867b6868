// A TCP proxy on loopback in front of a server (the management kube-apiserver), for tests that break the network
// between one client and that server while everything else still reaches it: cut every connection, refuse new
// ones, stall the open ones (kept open, nothing forwarded, like a half-dead load balancer), or black-hole the link
// (every byte, on open and new connections, read and dropped both ways, like a partition that loses packets).
import { connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  /** `<scheme>://127.0.0.1:<port>`, the target URL's scheme with the proxy's address. */
  url: string;
  /** Resets every open connection. */
  cutAll(): void;
  /** While on, new connections are reset at once. */
  refuse(on: boolean): void;
  /** Open connections stay open and forward nothing (their bytes wait in the sockets); new ones are unaffected. */
  stallOpenConnections(): void;
  /**
   * From now on nothing gets through: open and new connections are accepted (or kept) and every byte from either
   * side is read and dropped, so a request in flight is lost, not delayed.
   */
  blackHole(): void;
  /** Ends the black hole: its connections are reset (the client sees an error) and new ones are forwarded again. */
  heal(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const targetPort = Number(target.port || (target.protocol === "https:" ? 443 : 80));
  const forwarding = new Set<Pair>();
  // Paused sockets are not active handles: if close() waited for them, the event loop would run dry.
  const stalled = new Set<Pair>();
  const blackHoled = new Set<Pair>();
  let refusing = false;
  let blackHoling = false;
  const destroy = (pair: Pair) => {
    pair.client.destroy();
    pair.upstream?.destroy();
  };
  const swallow = (pair: Pair) => {
    forwarding.delete(pair);
    blackHoled.add(pair);
    if (pair.upstream) pair.client.unpipe(pair.upstream);
    pair.upstream?.unpipe(pair.client);
    for (const socket of [pair.client, pair.upstream]) {
      socket?.removeAllListeners("data");
      socket?.on("data", () => undefined).resume();
    }
  };
  const server: Server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const pair: Pair = { client, upstream: undefined };
    const close = () => {
      forwarding.delete(pair);
      blackHoled.delete(pair);
      destroy(pair);
    };
    client.on("error", close).on("close", close);
    if (blackHoling) {
      blackHoled.add(pair);
      client.on("data", () => undefined);
      return;
    }
    const upstream = connect(targetPort, target.hostname);
    pair.upstream = upstream;
    forwarding.add(pair);
    upstream.on("error", close).on("close", close);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `${target.protocol}//127.0.0.1:${port}`,
    cutAll: () => {
      for (const pair of [...forwarding]) destroy(pair);
    },
    refuse: (on) => {
      refusing = on;
    },
    stallOpenConnections: () => {
      for (const pair of [...forwarding]) {
        if (pair.upstream) {
          pair.upstream.unpipe(pair.client);
          pair.client.unpipe(pair.upstream);
          pair.upstream.pause();
        }
        pair.client.pause();
        forwarding.delete(pair);
        stalled.add(pair);
      }
    },
    blackHole: () => {
      blackHoling = true;
      for (const pair of [...forwarding]) swallow(pair);
    },
    heal: () => {
      blackHoling = false;
      for (const pair of [...blackHoled]) destroy(pair);
      blackHoled.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const pair of [...forwarding, ...stalled, ...blackHoled]) destroy(pair);
        server.close(() => resolve());
      }),
  };
}
