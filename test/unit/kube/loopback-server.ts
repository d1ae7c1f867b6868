// A loopback HTTP(S) server standing in for an API server, and a KubeConfig that points at it, for the tests of
// how the controller's API clients behave (deadlines, kept connections, Retry-After).
import type { Server } from "node:http";
import { KubeConfig } from "@kubernetes/client-node";

/** Listens on a free port of 127.0.0.1; resolves with the port. */
export async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

/** Closes `server` and every connection still open to it. */
export async function closeLoopback(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** A KubeConfig for `server` ("http://127.0.0.1:PORT" or https with the CA that signed its certificate), token auth. */
export function loopbackKubeConfig(server: string, caPem?: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [
      caPem
        ? { name: "c", server, caData: Buffer.from(caPem).toString("base64"), skipTLSVerify: false }
        : { name: "c", server, skipTLSVerify: true },
    ],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return config;
}
