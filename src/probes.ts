// The process's HTTP endpoints: /metrics (Prometheus), /healthz (the process is alive), /readyz (informers synced, or
// a standby waiting for the lease — a standby is ready, it just does not act). /metrics is served over HTTPS with a
// bearer token checked by the API server (src/adapters/kube/metrics-auth.ts) unless --metrics-secure=false; the probes
// stay plain HTTP, since a kubelet sends no token.
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Registry } from "prom-client";
import type { MetricsAuthorizer } from "./adapters/kube/metrics-auth.ts";

export interface ProbeState {
  healthy: () => boolean;
  ready: () => boolean;
}

export interface ServerSecurity {
  /** PEM serving certificate (chain) and key: the server speaks HTTPS only. */
  tls?: { certPem: string; keyPem: string };
  /** Asked before /metrics is served; without it /metrics is open to whoever reaches the port. */
  authorize?: MetricsAuthorizer;
}

export function startHttpServer(
  host: string,
  port: number,
  routes: { registry?: Registry; probes?: ProbeState },
  security: ServerSecurity = {},
): Promise<Server> {
  const handler: RequestListener = (request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path === "/metrics" && routes.registry) {
      serveMetrics(routes.registry, security.authorize, request, response);
      return;
    }
    if ((path === "/healthz" || path === "/readyz") && routes.probes) {
      const ok = path === "/healthz" ? routes.probes.healthy() : routes.probes.ready();
      response.writeHead(ok ? 200 : 503, { "Content-Type": "text/plain" }).end(ok ? "ok" : "not ready");
      return;
    }
    response.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  };
  const server: Server = security.tls
    ? createHttpsServer({ cert: security.tls.certPem, key: security.tls.keyPem, minVersion: "TLSv1.2" }, handler)
    : createServer(handler);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

function serveMetrics(
  registry: Registry,
  authorize: MetricsAuthorizer | undefined,
  request: IncomingMessage,
  response: ServerResponse,
): void {
  const access = authorize ? authorize(request.headers.authorization) : Promise.resolve({ allowed: true as const });
  access
    .then(async (verdict) => {
      if (!verdict.allowed) {
        response
          .writeHead(verdict.status, {
            "Content-Type": "text/plain",
            ...(verdict.status === 401 ? { "WWW-Authenticate": 'Bearer realm="quorum-metrics"' } : {}),
          })
          .end(`${verdict.message}\n`);
        return;
      }
      const text = await registry.metrics();
      response.writeHead(200, { "Content-Type": registry.contentType }).end(text);
    })
    .catch((error: unknown) => {
      response.writeHead(500, { "Content-Type": "text/plain" }).end(String(error));
    });
}
