// Plain HTTP endpoints: /metrics (Prometheus), /healthz (the process is alive), /readyz (informers synced, or a
// standby waiting for the lease — a standby is ready, it just does not act).
import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";

export interface ProbeState {
  healthy: () => boolean;
  ready: () => boolean;
}

export function startHttpServer(host: string, port: number, routes: { registry?: Registry; probes?: ProbeState }): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path === "/metrics" && routes.registry) {
      routes.registry.metrics().then(
        (text) => {
          response.writeHead(200, { "Content-Type": routes.registry?.contentType ?? "text/plain" });
          response.end(text);
        },
        (error: unknown) => {
          response.writeHead(500).end(String(error));
        },
      );
      return;
    }
    if ((path === "/healthz" || path === "/readyz") && routes.probes) {
      const ok = path === "/healthz" ? routes.probes.healthy() : routes.probes.ready();
      response.writeHead(ok ? 200 : 503, { "Content-Type": "text/plain" }).end(ok ? "ok" : "not ready");
      return;
    }
    response.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
