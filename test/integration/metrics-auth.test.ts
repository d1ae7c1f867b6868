// /metrics over HTTPS, authenticated and authorised by the real API server (TokenReview, then SubjectAccessReview for
// `get` on /metrics), as controller-runtime serves a CAPI provider's metrics. The controller runs as its ServiceAccount
// with only config/default's RBAC, so this also proves that RBAC lets it ask both reviews.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { issueCertificate, oneDay, validFor } from "../../src/adapters/certs/pki.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import { makeTempDir } from "../env/processes.ts";
import { startStack, type ControllerProcess, type ControllerStack } from "./controller/stack.ts";

const SCRAPERS = "monitoring";

interface Scrape {
  status: number;
  contentType: string;
  text: string;
}

describe("the controller's /metrics over HTTPS", { timeout: 300_000 }, () => {
  let stack: ControllerStack;
  let controller: ControllerProcess;
  let caPem: string;

  before(async () => {
    stack = await startStack();
    await stack.installControllerRbac();
    // A serving certificate as cert-manager would mount it, from a CA the scraper trusts.
    caPem = stack.apiServer.ca.certPem;
    const serving = await issueCertificate(stack.apiServer.ca, {
      commonName: "quorum-metrics",
      dnsNames: ["localhost"],
      ipAddresses: ["127.0.0.1"],
      usages: "server",
      validity: validFor(oneDay),
    });
    const certDir = makeTempDir("metrics-certs");
    writeFileSync(join(certDir, "tls.crt"), serving.certPem);
    writeFileSync(join(certDir, "tls.key"), serving.keyPem, { mode: 0o600 });

    const kc = stack.kubeConfig;
    await kubeRequest(kc, "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: SCRAPERS } },
    });
    for (const name of ["prometheus", "nosy"]) {
      await kubeRequestOk(kc, `/api/v1/namespaces/${SCRAPERS}/serviceaccounts`, {
        body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name } },
      });
    }
    // Prometheus is bound to the ClusterRole config/default ships for scrapers; "nosy" is bound to nothing.
    await kubeRequestOk(kc, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "prometheus-reads-quorum-metrics" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "quorum-metrics-reader" },
        subjects: [{ kind: "ServiceAccount", name: "prometheus", namespace: SCRAPERS }],
      },
    });
    controller = await stack.startController({ asServiceAccount: true, secureMetrics: true, metricsCertDir: certDir });
  });

  after(async () => {
    await stack?.stop();
  });

  async function token(serviceAccount: string): Promise<string> {
    const review = await kubeRequestOk<{ status: { token: string } }>(
      stack.kubeConfig,
      `/api/v1/namespaces/${SCRAPERS}/serviceaccounts/${serviceAccount}/token`,
      {
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
      },
    );
    return review.status.token;
  }

  function scrape(bearer?: string): Promise<Scrape> {
    return new Promise((resolve, reject) => {
      const req = request(
        controller.metricsUrl,
        { ca: caPem, headers: bearer ? { Authorization: `Bearer ${bearer}` } : {}, timeout: 10_000 },
        (response) => {
          let text = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (text += chunk));
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              contentType: String(response.headers["content-type"] ?? ""),
              text,
            }),
          );
        },
      );
      req.on("timeout", () => req.destroy(new Error("no answer within 10 s")));
      req.on("error", reject);
      req.end();
    });
  }

  async function firstScrape(bearer?: string): Promise<Scrape> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        return await scrape(bearer);
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(
            `${controller.metricsUrl} never answered: ${String(error)}\n${controller.process.lastLogLines(20)}`,
            { cause: error },
          );
        await sleep(300);
      }
    }
  }

  it("answers 401 to a request without a bearer token, over TLS the scraper can verify", async () => {
    const response = await firstScrape();
    assert.equal(response.status, 401);
    assert.match(response.text, /send a bearer token/);
    assert.doesNotMatch(response.text, /quorum_/);
  });

  it("answers 401 to a token the API server does not know", async () => {
    const response = await scrape("not-a-real-token");
    assert.equal(response.status, 401);
    assert.doesNotMatch(response.text, /quorum_/);
  });

  it("answers 403 to a valid token whose user may not get /metrics, naming the user and the fix", async () => {
    const response = await scrape(await token("nosy"));
    assert.equal(response.status, 403);
    assert.match(
      response.text,
      /system:serviceaccount:monitoring:nosy may not get \/metrics: bind it to a ClusterRole with nonResourceURLs \["\/metrics"\]/,
    );
    assert.doesNotMatch(response.text, /quorum_/);
  });

  it("serves Prometheus text to a token allowed to get /metrics", async () => {
    const response = await scrape(await token("prometheus"));
    assert.equal(response.status, 200, response.text);
    assert.match(response.contentType, /^text\/plain/);
    assert.match(response.text, /^# HELP quorum_/m);
    assert.match(response.text, /^# TYPE quorum_reconcile_duration_seconds histogram$/m);
  });
});
