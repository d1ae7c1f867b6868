// client-node's API clients against a loopback HTTPS server that counts TLS connections: without
// reuseConnections every call opens a new one (client-node 1.4.0 builds a new agent per request).
import assert from "node:assert/strict";
import { createServer, type Server } from "node:https";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { createCA, issueCertificate, oneDay, oneHour, validFor } from "../../../src/adapters/certs/pki.ts";
import { reuseConnections } from "../../../src/adapters/kube/keep-alive.ts";
import { closeLoopback, listenOnLoopback, loopbackKubeConfig } from "./loopback-server.ts";

describe("reuseConnections", () => {
  let server: Server;
  let caPem = "";
  let port = 0;
  let connections = 0;

  before(async () => {
    const ca = await createCA("keep-alive-test", validFor(oneDay));
    const serving = await issueCertificate(ca, {
      commonName: "127.0.0.1",
      ipAddresses: ["127.0.0.1"],
      usages: "server",
      validity: validFor(oneHour),
    });
    caPem = ca.certPem;
    server = createServer({ cert: serving.certPem, key: serving.keyPem }, (_request, response) => {
      response
        .writeHead(200, { "Content-Type": "application/json" })
        .end(JSON.stringify({ apiVersion: "v1", kind: "NamespaceList", metadata: {}, items: [] }));
    });
    server.on("secureConnection", () => connections++);
    port = await listenOnLoopback(server);
  });

  after(() => closeLoopback(server));

  const kubeConfig = () => loopbackKubeConfig(`https://127.0.0.1:${port}`, caPem);

  async function connectionsFor(config: KubeConfig, calls: number): Promise<number> {
    const before = connections;
    const api = config.makeApiClient(CoreV1Api);
    for (let i = 0; i < calls; i++) await api.listNamespace();
    server.closeAllConnections();
    return connections - before;
  }

  it("serves five API calls over one TLS connection, where plain client-node opens five", async () => {
    assert.equal(await connectionsFor(kubeConfig(), 5), 5, "client-node alone opens a connection per call");
    assert.equal(await connectionsFor(reuseConnections(kubeConfig()), 5), 1);
  });
});
