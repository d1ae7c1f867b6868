// client-node's API clients against a loopback server that accepts requests and never answers: without
// withRequestDeadline the call hangs for ever (client-node 1.4.0 sets no timeout of its own).
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { withRequestDeadline } from "../../../src/adapters/kube/request-deadline.ts";
import { closeLoopback, listenOnLoopback, loopbackKubeConfig } from "./loopback-server.ts";

describe("withRequestDeadline", () => {
  let server: Server;
  let port = 0;

  before(async () => {
    server = createServer((request, response) => {
      if (request.url?.includes("/namespaces/answered"))
        response
          .writeHead(200, { "Content-Type": "application/json" })
          .end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "answered" } }));
      // Anything else is accepted and never answered, like an API server behind a black-holed link.
    });
    port = await listenOnLoopback(server);
  });

  after(() => closeLoopback(server));

  const kubeConfig = () => loopbackKubeConfig(`http://127.0.0.1:${port}`);

  it("fails a request the API server never answers once the deadline has passed", async () => {
    const api = withRequestDeadline(kubeConfig(), 300).makeApiClient(CoreV1Api);
    const startedAt = performance.now();
    await assert.rejects(api.readNamespace({ name: "hung" }), /abort/i);
    const tookMs = performance.now() - startedAt;
    assert.ok(tookMs >= 250 && tookMs < 5_000, `failed after ${tookMs} ms`);
  });

  it("leaves answered requests alone", async () => {
    const api = withRequestDeadline(kubeConfig(), 300).makeApiClient(CoreV1Api);
    assert.equal((await api.readNamespace({ name: "answered" })).metadata?.name, "answered");
  });

  it("refuses a deadline that is not a positive number of milliseconds", () => {
    assert.throws(() => withRequestDeadline(kubeConfig(), 0), /positive/);
  });
});
