// The test harness's raw API requests retry a 429 as client-go does: a kube-apiserver that has just started refuses
// requests with 429 "storage is (re)initializing" and Retry-After while its watch cache fills (this failed a
// `make bench` steps run on 2026-12-03), and such a request was not processed, so sending it again is safe.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:https";
import { after, before, describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { createCA, issueCertificate, oneDay, validFor } from "../../../src/adapters/certs/pki.ts";
import { kubeRequest, kubeRequestOk } from "../../env/kube.ts";

let server: Server;
let kubeConfig: KubeConfig;
/** Per path: how many more requests get a 429 before one succeeds. */
const refusals = new Map<string, number>();
const seen: string[] = [];

before(async () => {
  // The CA outlives its leaf, as the harness's CAs do (test/env/apiserver.ts): with equal lifetimes, a leaf issued in
  // the next second would outlive the CA, which issueCertificate refuses (this failed a CI run on 2026-12-04).
  const ca = await createCA("test-ca", validFor(7 * oneDay));
  const serving = await issueCertificate(ca, {
    commonName: "apiserver",
    ipAddresses: ["127.0.0.1"],
    usages: "server",
    validity: validFor(oneDay),
  });
  server = createServer({ cert: serving.certPem, key: serving.keyPem }, (request, response) => {
    const path = request.url ?? "";
    seen.push(`${request.method} ${path}`);
    const left = refusals.get(path) ?? 0;
    if (left > 0) {
      refusals.set(path, left - 1);
      response.writeHead(429, { "Content-Type": "application/json", "Retry-After": "0.1" });
      response.end(JSON.stringify({ kind: "Status", message: "storage is (re)initializing", code: 429 }));
      return;
    }
    response.writeHead(200, { "Content-Type": "application/json" });
    response.end(JSON.stringify({ ok: path }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  assert.ok(address && typeof address === "object");
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      { name: "c", server: `https://127.0.0.1:${address.port}`, caData: Buffer.from(ca.certPem).toString("base64") },
    ],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("the test harness's API requests", () => {
  it("send a request refused with 429 again after its Retry-After, and return the answer that followed", async () => {
    refusals.set("/api/v1/namespaces/a/pods", 3);
    seen.length = 0;
    assert.deepEqual(await kubeRequestOk(kubeConfig, "/api/v1/namespaces/a/pods", { method: "POST", body: {} }), {
      ok: "/api/v1/namespaces/a/pods",
    });
    assert.deepEqual(seen, Array(4).fill("POST /api/v1/namespaces/a/pods"));
  });

  it("give up after 10 retries and return the last 429", async () => {
    refusals.set("/api/v1/nodes", 100);
    seen.length = 0;
    const response = await kubeRequest(kubeConfig, "/api/v1/nodes");
    assert.equal(response.status, 429);
    assert.equal(seen.length, 11);
  });
});
