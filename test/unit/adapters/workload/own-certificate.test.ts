// Where Quorum holds the cluster CA's key it reaches the workload API with its own short-lived client certificate,
// as it does etcd, and never reads the `<cluster>-kubeconfig` Secret a tenant may have written; otherwise it falls
// back to that Secret's credentials. Checked against a real HTTPS server that demands a client certificate.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { after, before, describe, it } from "node:test";
import { stringify } from "yaml";
import { buildKubeconfig } from "../../../../src/adapters/certs/kubeconfig.ts";
import {
  createCA,
  issueCertificate,
  oneDay,
  oneHour,
  validFor,
  type CertificateAuthority,
} from "../../../../src/adapters/certs/pki.ts";
import { WorkloadClients } from "../../../../src/adapters/workload/client.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

/** The client certificate subject of every request the fake API server answered. */
interface Seen {
  subject: string;
  fingerprint: string;
  validForMs: number;
}

describe("workload API access with Quorum's own client certificate", () => {
  let ca: CertificateAuthority;
  let server: Server;
  let port = 0;
  const seen: Seen[] = [];

  before(async () => {
    const now = new Date();
    ca = await createCA("kubernetes", validFor(365 * oneDay, now));
    const serving = await issueCertificate(ca, {
      commonName: "kube-apiserver",
      ipAddresses: ["127.0.0.1"],
      usages: "server",
      validity: validFor(oneDay, now),
    });
    // Like kube-apiserver with --client-ca-file: only certificates from the cluster CA get an answer.
    server = createServer(
      { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
      (request, response) => {
        const certificate = (request.socket as TLSSocket).getPeerX509Certificate();
        if (certificate)
          seen.push({
            subject: certificate.subject,
            fingerprint: certificate.fingerprint256,
            validForMs: new Date(certificate.validTo).getTime() - new Date(certificate.validFrom).getTime(),
          });
        response.setHeader("Content-Type", "application/json");
        response.end(
          JSON.stringify({ kind: "NodeList", apiVersion: "v1", metadata: {}, items: [{ metadata: { name: "cp-0" } }] }),
        );
      },
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** A tenant's kubeconfig that would run a command: reading it is refused, so using it would fail the call. */
  function tenantKubeconfig(): string {
    return stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "prod", cluster: { server: `https://127.0.0.1:${port}` } }],
      contexts: [{ name: "prod", context: { cluster: "prod", user: "prod" } }],
      "current-context": "prod",
      users: [{ name: "prod", user: { exec: { command: "/bin/sh", args: ["-c", "touch /tmp/quorum-marker"] } } }],
    });
  }

  it("lists Nodes at the control-plane endpoint with a short-lived system:masters certificate from <cluster>-ca, never reading the kubeconfig Secret", async () => {
    const store = new MemorySecretStore();
    store.seed("team-a", "prod-ca", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    store.seed("team-a", "prod-kubeconfig", { value: tenantKubeconfig() });
    seen.length = 0;
    const clients = new WorkloadClients(store, { timeoutMs: 5_000 });
    const nodes = await clients.listNodes("team-a", "prod", { host: "127.0.0.1", port });
    assert.deepEqual(
      nodes.map((node) => node.metadata.name),
      ["cp-0"],
    );
    assert.equal(seen.length, 1);
    assert.match(seen[0].subject, /CN=quorum-controller/);
    assert.match(seen[0].subject, /O=system:masters/);
    // One hour plus the signer's backdating for clock skew: never the year a stored kubeconfig certificate gets.
    assert.ok(seen[0].validForMs <= oneHour + 10 * 60 * 1000, `valid for ${seen[0].validForMs} ms`);
  });

  it("renews its certificate after 2/3 of its lifetime and reconnects with it", async () => {
    const store = new MemorySecretStore();
    store.seed("team-a", "prod-ca", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    // Minutes, not hours: the server checks validity against the real clock (the signer backdates by 5 minutes).
    const minute = 60_000;
    const clients = new WorkloadClients(store, { timeoutMs: 5_000, clientCertLifetimeMs: 3 * minute });
    const start = Date.now();
    seen.length = 0;
    for (const at of [0, 1.9 * minute, 2.1 * minute])
      await clients.listNodes("team-a", "prod", { host: "127.0.0.1", port }, new Date(start + at));
    const [first, second, third] = seen.map((entry) => entry.fingerprint);
    assert.equal(seen.length, 3);
    assert.equal(second, first, "the certificate is kept before 2/3 of its lifetime");
    assert.notEqual(third, first, "a new certificate is presented after 2/3 of its lifetime");
  });

  it("falls back to the kubeconfig Secret's credentials when <cluster>-ca holds no key (an external CA)", async () => {
    const now = new Date();
    const admin = await issueCertificate(ca, {
      commonName: "external-admin",
      organization: "system:masters",
      usages: "client",
      validity: validFor(oneDay, now),
    });
    const store = new MemorySecretStore();
    store.seed("team-a", "prod-ca", { "tls.crt": ca.certPem });
    store.seed("team-a", "prod-kubeconfig", {
      value: buildKubeconfig({
        cluster: "prod",
        server: `https://127.0.0.1:${port}`,
        caPem: ca.certPem,
        certPem: admin.certPem,
        keyPem: admin.keyPem,
      }),
    });
    seen.length = 0;
    await new WorkloadClients(store).listNodes("team-a", "prod", { host: "127.0.0.1", port });
    assert.match(seen[0]?.subject ?? "", /CN=external-admin/);
  });

  it("falls back to the kubeconfig Secret, and refuses its exec stanza, while the Cluster has no endpoint", async () => {
    const store = new MemorySecretStore();
    store.seed("team-a", "prod-ca", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    store.seed("team-a", "prod-kubeconfig", { value: tenantKubeconfig() });
    await assert.rejects(new WorkloadClients(store).listNodes("team-a", "prod", {}), {
      name: "KubeconfigRefusedError",
      reason: "WorkloadKubeconfigRejected",
    });
  });

  it("drops the cluster's client and private key when the cluster is forgotten, keeping the other clusters'", async () => {
    const store = new MemorySecretStore();
    for (const cluster of ["prod", "staging"])
      store.seed("team-a", `${cluster}-ca`, { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    const clients = new WorkloadClients(store);
    await clients.listNodes("team-a", "prod", { host: "127.0.0.1", port });
    await clients.listNodes("team-a", "staging", { host: "127.0.0.1", port });
    assert.deepEqual(clients.heldClusters().sort(), ["team-a/prod", "team-a/staging"]);
    clients.forget("team-a", "prod");
    assert.deepEqual(clients.heldClusters(), ["team-a/staging"]);
  });

  it("names the CA Secret and the endpoint when the API server does not answer", async () => {
    const store = new MemorySecretStore();
    store.seed("team-a", "prod-ca", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
    await assert.rejects(
      new WorkloadClients(store, { timeoutMs: 2_000 }).listNodes("team-a", "prod", { host: "127.0.0.1", port: 1 }),
      (error: unknown) => {
        assert.match(
          (error as Error).message,
          /^workload API server https:\/\/127\.0\.0\.1:1 \(with Quorum's own client certificate from the CA in Secret team-a\/prod-ca\) could not be reached/,
        );
        return true;
      },
    );
  });
});
