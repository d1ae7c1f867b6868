// Dialling a Machine's own API server (GET /readyz) against real HTTPS and TCP servers on 127.0.0.1 that answer as a
// kube-apiserver does when ready, when a readiness check fails, when anonymous access is off, or not at all.
import assert from "node:assert/strict";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { oneDay } from "../../../../src/adapters/certs/pki.ts";
import { apiServersReadiness, probeReadyz } from "../../../../src/adapters/workload/api-server-readiness.ts";
import { apiServerCertificate, close, listen } from "./local-api-server.ts";

// kube-apiserver's /readyz body when a check fails (verbose form is only sent on failure).
const FAILING_BODY =
  "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]informer-sync ok\nreadyz check failed\n";

describe("dialling a Machine's API server /readyz", () => {
  let answer: { status: number; body: string } = { status: 200, body: "ok" };
  let https: HttpsServer;
  let port: number;
  let silent: NetServer;
  let silentPort: number;
  const held: Socket[] = [];
  const paths: string[] = [];

  before(async () => {
    const issued = await apiServerCertificate(oneDay);
    // An untrusted CA on purpose: nothing is verified, only the status is read.
    https = createHttpsServer({ cert: issued.certPem, key: issued.keyPem }, (request, response) => {
      paths.push(`${request.method} ${request.url}`);
      response.writeHead(answer.status, { "content-type": "text/plain" });
      response.end(answer.body);
    });
    port = await listen(https);
    // Accepts the connection and never answers: a host whose API server hangs.
    silent = createNetServer((socket) => held.push(socket));
    silentPort = await listen(silent);
  });

  after(async () => {
    https.closeAllConnections();
    await close(https);
    for (const socket of held) socket.destroy();
    await close(silent);
  });

  it("is ready when /readyz answers 200, asked with GET /readyz", async () => {
    answer = { status: 200, body: "ok" };
    const result = await probeReadyz("127.0.0.1", port);
    assert.deepEqual(result, { ready: true, detail: `https://127.0.0.1:${port}/readyz ok` });
    assert.equal(paths.at(-1), "GET /readyz");
  });

  it("is not ready when a readiness check fails, naming the failed checks", async () => {
    answer = { status: 500, body: FAILING_BODY };
    const result = await probeReadyz("127.0.0.1", port);
    assert.equal(result.ready, false);
    assert.equal(result.detail, `https://127.0.0.1:${port}/readyz answered 500 (failed: etcd failed: reason withheld)`);
  });

  it("counts a 401 as serving: anonymous access is off, but the server is up", async () => {
    answer = { status: 401, body: "Unauthorized" };
    const result = await probeReadyz("127.0.0.1", port);
    assert.equal(result.ready, true);
    assert.match(result.detail, /answered 401/);
  });

  it("is not ready when nothing listens, with the connection error", async () => {
    const closed = createNetServer();
    const closedPort = await listen(closed);
    await close(closed);
    const result = await probeReadyz("127.0.0.1", closedPort);
    assert.equal(result.ready, false);
    assert.match(result.detail, new RegExp(`https://127\\.0\\.0\\.1:${closedPort}/readyz: connect ECONNREFUSED`));
  });

  it("gives up on a server that never answers at its deadline", async () => {
    const result = await probeReadyz("127.0.0.1", silentPort, 200);
    assert.deepEqual(result, {
      ready: false,
      detail: `https://127.0.0.1:${silentPort}/readyz: no answer within 200 ms`,
    });
  });

  it("dials every Machine, by name", async () => {
    answer = { status: 200, body: "ok" };
    const result = await apiServersReadiness(
      [
        { name: "cp-a", uid: "1", address: "127.0.0.1" },
        { name: "cp-b", uid: "2", address: "127.0.0.1" },
      ],
      port,
    );
    assert.deepEqual(Object.keys(result).sort(), ["cp-a", "cp-b"]);
    assert.ok(result["cp-a"].ready && result["cp-b"].ready);
  });
});
