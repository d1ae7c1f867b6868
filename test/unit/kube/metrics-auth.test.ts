// The /metrics gate without an API server: which requests reach TokenReview and SubjectAccessReview, and what is
// kept between scrapes. test/integration/metrics-auth.test.ts runs it against the real API server.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { kubeMetricsAuthorizer } from "../../../src/adapters/kube/metrics-auth.ts";
import type { KubeRest } from "../../../src/adapters/kube/rest.ts";

/** Answers TokenReviews for `users` (token → username) and SubjectAccessReviews for `readers`. */
function fakeApiServer(users: Record<string, string>, readers: string[], options: { down?: () => boolean } = {}) {
  const calls: string[] = [];
  const rest = {
    async request(
      method: string,
      path: string,
      request: {
        body: { spec: { token?: string; user?: string; nonResourceAttributes?: { path: string; verb: string } } };
      },
    ) {
      calls.push(path.split("/")[4]);
      if (options.down?.()) throw new Error("connect ECONNREFUSED 10.96.0.1:443");
      const spec = request.body.spec;
      if (path.endsWith("/tokenreviews")) {
        const username = users[spec.token ?? ""];
        return {
          status: username
            ? { authenticated: true, user: { username, groups: ["system:authenticated"] } }
            : { authenticated: false, error: "invalid bearer token" },
        };
      }
      return {
        status: {
          allowed:
            readers.includes(spec.user ?? "") &&
            spec.nonResourceAttributes?.path === "/metrics" &&
            spec.nonResourceAttributes.verb === "get",
        },
      };
    },
  };
  return { rest: rest as unknown as KubeRest, calls };
}

describe("the /metrics authorizer", () => {
  it("refuses a request without a bearer token with 401 and asks the API server nothing", async () => {
    const api = fakeApiServer({}, []);
    const authorize = kubeMetricsAuthorizer(api.rest);
    for (const header of [undefined, "", "Basic dXNlcjpwYXNz", "Bearer"]) {
      const access = await authorize(header);
      assert.equal(access.allowed ? 200 : access.status, 401, String(header));
    }
    assert.deepEqual(api.calls, []);
  });

  it("gives 401 to an unknown token, 403 to a user without get /metrics, and 200 to a reader", async () => {
    const api = fakeApiServer(
      { "t-prom": "system:serviceaccount:monitoring:prometheus", "t-nosy": "system:serviceaccount:monitoring:nosy" },
      ["system:serviceaccount:monitoring:prometheus"],
    );
    const authorize = kubeMetricsAuthorizer(api.rest);
    const unknown = await authorize("Bearer t-forged");
    assert.deepEqual(unknown, {
      allowed: false,
      status: 401,
      message: "the bearer token is not valid (invalid bearer token)",
    });
    const nosy = await authorize("Bearer t-nosy");
    assert.equal(nosy.allowed ? 200 : nosy.status, 403);
    assert.match(nosy.allowed ? "" : nosy.message, /^system:serviceaccount:monitoring:nosy may not get \/metrics/);
    assert.deepEqual(await authorize("bearer t-prom"), { allowed: true });
  });

  it("reuses an answer for the same token for its lifetime, then asks again", async () => {
    let now = 0;
    const api = fakeApiServer({ "t-prom": "prometheus" }, ["prometheus"]);
    const authorize = kubeMetricsAuthorizer(api.rest, { cacheTtlMs: 30_000, clock: () => now });
    await authorize("Bearer t-prom");
    now = 29_000;
    await authorize("Bearer t-prom");
    assert.deepEqual(api.calls, ["tokenreviews", "subjectaccessreviews"]);
    now = 30_000;
    await authorize("Bearer t-prom");
    assert.deepEqual(api.calls, ["tokenreviews", "subjectaccessreviews", "tokenreviews", "subjectaccessreviews"]);
  });

  it("answers 500 while the API server cannot be asked, and does not keep that answer", async () => {
    let down = true;
    const api = fakeApiServer({ "t-prom": "prometheus" }, ["prometheus"], { down: () => down });
    const authorize = kubeMetricsAuthorizer(api.rest);
    const failed = await authorize("Bearer t-prom");
    assert.equal(failed.allowed ? 200 : failed.status, 500);
    assert.match(
      failed.allowed ? "" : failed.message,
      /could not check the token with the API server: connect ECONNREFUSED/,
    );
    down = false;
    assert.deepEqual(await authorize("Bearer t-prom"), { allowed: true });
  });
});
