// Loopback sockets that imitate broken peers: a port nobody listens on, and a server that accepts
// connections but never says anything (what a SIGSTOPped process or a black-holed endpoint looks like).
import { createServer, type Server, type Socket } from "node:net";

export interface LoopbackPeers {
  /** Accepts connections, never answers. */
  silentPort: number;
  /** Nothing listens here (it was free a moment ago). */
  deadPort: number;
  close(): Promise<void>;
}

export async function startLoopbackPeers(): Promise<LoopbackPeers> {
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const silentPort = await listen(silent);
  const closed = createServer();
  const deadPort = await listen(closed);
  await new Promise((resolve) => closed.close(resolve));
  return {
    silentPort,
    deadPort,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    },
  };
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("loopback server has no port");
  return address.port;
}
