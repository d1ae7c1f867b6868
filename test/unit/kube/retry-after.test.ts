// KubeRest and client-node's API clients (withRetryAfter) against a loopback server that answers as a loaded or
// just-started kube-apiserver does: 429 with Retry-After (API Priority and Fairness, "storage is (re)initializing"),
// or a 5xx with Retry-After. client-go sends such a request again after the delay it names, up to 10 times; so must
// the controller, within the request's deadline.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, beforeEach, describe, it } from "node:test";
import { ApiException, CoreV1Api, KubernetesObjectApi } from "@kubernetes/client-node";
import { KubeApiError, KubeRest } from "../../../src/adapters/kube/rest.ts";
import { MAX_RETRY_AFTER_RETRIES, retryAfterMs, withRetryAfter } from "../../../src/adapters/kube/retry-after.ts";
import { closeLoopback, listenOnLoopback, loopbackKubeConfig } from "./loopback-server.ts";

interface Seen {
  method: string;
  body: string;
}

describe("KubeRest and Retry-After", () => {
  let server: Server;
  let port = 0;
  let seen: Seen[] = [];
  /** Answers the n-th request (0-based); a request past the script gets 200 with its body echoed. */
  let script: ((response: ServerResponse) => void)[] = [];

  const tooManyRequests = (retryAfter: string) => (response: ServerResponse) =>
    response.writeHead(429, { "Content-Type": "application/json", "Retry-After": retryAfter }).end(
      JSON.stringify({
        kind: "Status",
        status: "Failure",
        reason: "TooManyRequests",
        code: 429,
        message: "storage is (re)initializing",
      }),
    );

  before(async () => {
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      request.on("end", () => {
        // Discovery, which KubernetesObjectApi reads first: answered, not counted.
        if (request.url === "/api/v1") {
          const namespaces = { name: "namespaces", namespaced: false, kind: "Namespace", verbs: ["get"] };
          response
            .writeHead(200, { "Content-Type": "application/json" })
            .end(JSON.stringify({ kind: "APIResourceList", groupVersion: "v1", resources: [namespaces] }));
          return;
        }
        const answer = script[seen.length];
        seen.push({ method: request.method ?? "", body });
        if (answer) answer(response);
        else response.writeHead(200, { "Content-Type": "application/json" }).end(body || '{"ok":true}');
      });
    });
    port = await listenOnLoopback(server);
  });

  beforeEach(() => {
    seen = [];
    script = [];
  });

  after(() => closeLoopback(server));

  const kubeConfig = () => loopbackKubeConfig(`http://127.0.0.1:${port}`);

  function rest(requestTimeoutMs = 10_000): KubeRest {
    return new KubeRest(kubeConfig(), { requestTimeoutMs });
  }

  it("sends a refused write again after Retry-After, with the same body", async () => {
    script = [tooManyRequests("0"), tooManyRequests("0")];
    const client = rest();
    const answer = await client.request<{ spec: { replicas: number } }>("PATCH", "/apis/x/v1/things/a", {
      body: { spec: { replicas: 3 } },
      contentType: "application/merge-patch+json",
    });
    client.close();
    assert.deepEqual(answer, { spec: { replicas: 3 } });
    assert.deepEqual(
      seen.map((request) => request.method),
      ["PATCH", "PATCH", "PATCH"],
    );
    assert.ok(seen.every((request) => request.body === '{"spec":{"replicas":3}}'));
  });

  it("waits as long as Retry-After says", async () => {
    script = [tooManyRequests("1")];
    const client = rest();
    const startedAt = performance.now();
    await client.get("/api/v1/namespaces/a");
    client.close();
    const tookMs = performance.now() - startedAt;
    assert.ok(tookMs >= 950, `sent again after ${tookMs.toFixed(0)} ms`);
  });

  it("gives up after client-go's 10 retries and says what the API server said", async () => {
    script = Array.from({ length: MAX_RETRY_AFTER_RETRIES + 1 }, () => tooManyRequests("0"));
    const client = rest();
    await assert.rejects(client.get("/api/v1/namespaces/a"), (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.code, 429);
      assert.match(err.message, /storage is \(re\)initializing/);
      return true;
    });
    client.close();
    assert.equal(seen.length, MAX_RETRY_AFTER_RETRIES + 1);
  });

  it("does not wait past the request's deadline: a Retry-After longer than what is left fails at once", async () => {
    script = [tooManyRequests("5")];
    const client = rest(2_000);
    const startedAt = performance.now();
    await assert.rejects(client.get("/api/v1/namespaces/a"), /HTTP 429/);
    client.close();
    assert.ok(performance.now() - startedAt < 1_500);
    assert.equal(seen.length, 1);
  });

  it("stops waiting when the caller aborts", async () => {
    script = [tooManyRequests("5")];
    const client = rest();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("reconcile cancelled")), 100);
    await assert.rejects(client.get("/api/v1/namespaces/a", { signal: controller.signal }), /reconcile cancelled/);
    client.close();
    assert.equal(seen.length, 1);
  });

  it("sends a GET again after a 5xx with Retry-After, but not a write, and nothing after a plain 500 or a 409", async () => {
    const unavailable = (response: ServerResponse) =>
      response.writeHead(503, { "Retry-After": "0" }).end("the server is shutting down");
    script = [unavailable];
    const client = rest();
    await client.get("/api/v1/namespaces/a");
    assert.equal(seen.length, 2);

    seen = [];
    script = [unavailable];
    await assert.rejects(client.request("POST", "/api/v1/namespaces", { body: {} }), /HTTP 503/);
    assert.equal(seen.length, 1);

    seen = [];
    script = [(response) => response.writeHead(500).end("boom")];
    await assert.rejects(client.get("/api/v1/namespaces/a"), /HTTP 500/);
    assert.equal(seen.length, 1);

    seen = [];
    script = [(response) => response.writeHead(409, { "Retry-After": "0" }).end("conflict")];
    await assert.rejects(client.request("PUT", "/api/v1/namespaces/a", { body: {} }), /HTTP 409/);
    assert.equal(seen.length, 1);
    client.close();
  });

  it("makes client-node's API clients send a refused request again, a create included", async () => {
    script = [tooManyRequests("0"), tooManyRequests("0")];
    const core = withRetryAfter(kubeConfig(), 10_000).makeApiClient(CoreV1Api);
    const event = await core.createNamespacedEvent({
      namespace: "a",
      body: { metadata: { name: "e1", namespace: "a" }, involvedObject: {}, reason: "Test" },
    });
    assert.equal(event.metadata?.name, "e1");
    assert.deepEqual(
      seen.map((request) => request.method),
      ["POST", "POST", "POST"],
    );
    assert.equal(new Set(seen.map((request) => request.body)).size, 1, "the same body each time");
  });

  it("makes KubernetesObjectApi send a refused read again, and gives up past the deadline with the API server's 429", async () => {
    script = [tooManyRequests("0")];
    const objects = KubernetesObjectApi.makeApiClient(withRetryAfter(kubeConfig(), 10_000));
    await objects.read({ apiVersion: "v1", kind: "Namespace", metadata: { name: "a" } });
    assert.equal(seen.length, 2);

    seen = [];
    script = [tooManyRequests("5")];
    const core = withRetryAfter(kubeConfig(), 2_000).makeApiClient(CoreV1Api);
    await assert.rejects(core.readNamespace({ name: "a" }), (err: unknown) => {
      assert.ok(err instanceof ApiException);
      assert.equal(err.code, 429);
      return true;
    });
    assert.equal(seen.length, 1);
  });

  it("reads Retry-After as whole seconds, anything else as one second", () => {
    assert.equal(retryAfterMs(undefined), undefined);
    assert.equal(retryAfterMs("2"), 2000);
    assert.equal(retryAfterMs("Wed, 21 Oct 2026 07:28:00 GMT"), 1000);
    assert.equal(retryAfterMs("-3"), 1000);
  });
});
