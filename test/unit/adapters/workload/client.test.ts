// Failure paths of workload API access, against loopback sockets that are not an API server.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startLoopbackPeers, type LoopbackPeers } from "../loopback.ts";
import { buildKubeconfig } from "../../../../src/adapters/certs/kubeconfig.ts";
import { createCA, issueCertificate, oneDay, validFor } from "../../../../src/adapters/certs/pki.ts";
import { SecretGarbageError, SecretMissingError, WorkloadApiError } from "../../../../src/adapters/errors.ts";
import { WorkloadClients } from "../../../../src/adapters/workload/client.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

async function kubeconfigFor(server: string): Promise<string> {
  const now = new Date();
  const ca = await createCA("kubernetes", validFor(oneDay, now));
  const client = await issueCertificate(ca, {
    commonName: "kubernetes-admin",
    organization: "system:masters",
    usages: "client",
    validity: validFor(oneDay, now),
  });
  return buildKubeconfig({
    cluster: "prod",
    server,
    caPem: ca.certPem,
    certPem: client.certPem,
    keyPem: client.keyPem,
  });
}

describe("workload API access", () => {
  let peers: LoopbackPeers;
  let silentPort = 0;
  let deadPort = 0;

  before(async () => {
    peers = await startLoopbackPeers();
    ({ silentPort, deadPort } = peers);
  });
  after(() => peers.close());

  it("names the missing kubeconfig Secret and what creates it", async () => {
    const clients = new WorkloadClients(new MemorySecretStore());
    await assert.rejects(clients.listNodes("team-a", "prod"), (error: unknown) => {
      assert.ok(error instanceof SecretMissingError);
      assert.match(
        error.message,
        /^Secret team-a\/prod-kubeconfig not found: Quorum needs it to reach the workload cluster's API/,
      );
      return true;
    });
  });

  it("reports a kubeconfig Secret with garbage in it as SecretGarbageError naming the Secret", async () => {
    const store = new MemorySecretStore();
    store.seed("team-a", "prod-kubeconfig", { value: "\u0000\u0001 binary junk" });
    await assert.rejects(new WorkloadClients(store).listNodes("team-a", "prod"), (error: unknown) => {
      assert.ok(error instanceof SecretGarbageError);
      assert.match(error.message, /^Secret team-a\/prod-kubeconfig: data key "value" /);
      return true;
    });
  });

  it("reports an API server nobody listens on as WorkloadApiError naming the server and the Secret", async () => {
    const store = new MemorySecretStore();
    store.seed("team-a", "prod-kubeconfig", { value: await kubeconfigFor(`https://127.0.0.1:${deadPort}`) });
    await assert.rejects(
      new WorkloadClients(store, { timeoutMs: 2000 }).listNodes("team-a", "prod"),
      (error: unknown) => {
        assert.ok(error instanceof WorkloadApiError);
        assert.match(
          error.message,
          new RegExp(
            `^workload API server https://127\\.0\\.0\\.1:${deadPort} \\(from Secret team-a/prod-kubeconfig\\) could not be reached \\(.*ECONNREFUSED`,
          ),
        );
        return true;
      },
    );
  });

  it("gives up on an API server that accepts connections but never answers, after its deadline", async () => {
    const store = new MemorySecretStore();
    store.seed("team-a", "prod-kubeconfig", { value: await kubeconfigFor(`https://127.0.0.1:${silentPort}`) });
    await assert.rejects(
      new WorkloadClients(store, { timeoutMs: 300 }).listNodes("team-a", "prod"),
      (error: unknown) => {
        assert.ok(error instanceof WorkloadApiError);
        assert.match(error.message, /did not answer within 300 ms/);
        return true;
      },
    );
  });
});
