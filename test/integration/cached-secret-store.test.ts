// The Secret cache against a real kube-apiserver: Quorum's cluster Secrets are read from the watch, not with
// GETs; a change made with kubectl reaches the reads; what the cache does not hold (an unlabelled user CA,
// CAPI's bootstrap data, another namespace) is still read correctly with a GET; and every read returns what a
// GET through client-node's CoreV1Api returns.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { LABEL_CLUSTER_NAME } from "../../src/api/constants.ts";
import { CachedSecretStore } from "../../src/adapters/certs/cached-secret-store.ts";
import {
  coreV1SecretStore,
  dataText,
  encodeData,
  type SecretObject,
  type SecretStore,
} from "../../src/adapters/certs/secret-store.ts";
import type { SecretRef } from "../../src/adapters/errors.ts";
import { KubeRest } from "../../src/adapters/kube/rest.ts";
import { startApiServer, type ApiServer } from "../env/index.ts";
import { kubectlBinary } from "../unit/config/kustomize.ts";
import { freshNamespace, waitFor } from "./fixtures/kube.ts";

const run = promisify(execFile);

let apiServer: ApiServer;
let rest: KubeRest;
let api: SecretStore;
let namespace: string;
let otherNamespace: string;
let cache: CachedSecretStore;
/** GETs the cache passed on to the API server. */
let gets: string[] = [];

function secret(
  namespace: string,
  name: string,
  data: Record<string, string>,
  labels?: Record<string, string>,
): SecretObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      namespace,
      name,
      ...(labels ? { labels } : {}),
      annotations: { "example.com/owner": "test" },
      ownerReferences: [
        {
          apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
          kind: "QuorumControlPlane",
          name: "prod",
          uid: "6d1c1f4e-0000-4000-8000-000000000001",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    type: "cluster.x-k8s.io/secret",
    data: encodeData(data),
  };
}

/** True when the cache holds `ref` (it answered its metadata without a GET). */
async function servedFromCache(ref: SecretRef): Promise<boolean> {
  const before = gets.length;
  await cache.getMetadata(ref);
  return gets.length === before;
}

before(async () => {
  apiServer = await startApiServer();
  rest = new KubeRest(apiServer.kubeConfig);
  api = coreV1SecretStore(apiServer.kubeConfig.makeApiClient(CoreV1Api));
  namespace = await freshNamespace(rest, "secrets");
  otherNamespace = await freshNamespace(rest, "secrets-other");
  const counted: SecretStore = {
    get: (ref) => {
      gets.push(`${ref.namespace}/${ref.name}`);
      return api.get(ref);
    },
    create: (created) => api.create(created),
    replace: (replaced) => api.replace(replaced),
  };
  cache = new CachedSecretStore({ inner: counted, rest, namespace });
  cache.start();
  await cache.waitForSync();
});

after(async () => {
  await cache?.stop();
  rest?.close();
  await apiServer?.stop();
});

describe("CachedSecretStore on a real kube-apiserver", () => {
  const labels = { [LABEL_CLUSTER_NAME]: "prod" };
  const names = ["prod-ca", "prod-etcd", "prod-sa", "prod-proxy", "prod-kubeconfig"];

  it("reads the cluster's labelled Secrets from the watch, with no GET once they are cached", async () => {
    for (const name of names)
      assert.equal(await cache.create(secret(namespace, name, { "tls.crt": `${name} v1` }, labels)), "created");
    // Served as written at once, then as the watch delivered them (with the API server's resourceVersion).
    for (const name of names) assert.equal(await servedFromCache({ namespace, name }), true);
    for (const name of names)
      await waitFor(
        `${name} delivered by the watch`,
        async () => (await cache.getMetadata({ namespace, name }))?.metadata.resourceVersion !== undefined,
      );
    assert.deepEqual(gets, []);
    for (let round = 0; round < 5; round++) {
      for (const name of names) {
        // Of -sa and -proxy Quorum only asks whether they exist (the cache keeps no data of them).
        if (name === "prod-sa" || name === "prod-proxy")
          assert.equal((await cache.getMetadata({ namespace, name }))?.metadata.name, name);
        else assert.equal(dataText((await cache.get({ namespace, name }))!, "tls.crt"), `${name} v1`);
      }
    }
    assert.deepEqual(gets, []);
  });

  it("returns exactly what a GET through client-node returns", async () => {
    for (const name of names)
      assert.deepEqual(await cache.get({ namespace, name }), await api.get({ namespace, name }));
  });

  it("sees a change made with kubectl, still without a GET", async () => {
    gets = [];
    const patch = JSON.stringify({ stringData: { "tls.crt": "prod-ca v2" } });
    await run(kubectlBinary(), [
      "--kubeconfig",
      apiServer.kubeconfigPath,
      "-n",
      namespace,
      "patch",
      "secret",
      "prod-ca",
      "--type",
      "merge",
      "-p",
      patch,
    ]);
    await waitFor(
      "kubectl's change in the cache",
      async () => dataText((await cache.get({ namespace, name: "prod-ca" }))!, "tls.crt") === "prod-ca v2",
    );
    assert.deepEqual(gets, []);
  });

  it("returns its own replace to the very next read, and the cache catches up to it", async () => {
    const ref = { namespace, name: "prod-kubeconfig" };
    const existing = (await cache.get(ref))!;
    const written = await cache.replace({ ...existing, data: encodeData({ value: "rotated" }) });
    assert.equal(dataText((await cache.get(ref))!, "value"), "rotated");
    await waitFor(
      "the watch delivered the replace",
      async () =>
        (await api.get(ref))?.metadata.resourceVersion === written.metadata.resourceVersion &&
        (await servedFromCache(ref)),
    );
    assert.deepEqual(await cache.get(ref), await api.get(ref));
  });

  it("reads what it does not cache with a GET: an unlabelled user CA, bootstrap data, another namespace", async () => {
    await api.create(secret(namespace, "byo-ca", { "tls.crt": "user's CA" }));
    await api.create(
      secret(namespace, "prod-control-plane-x7k2p", { value: "#cloud-config\n" + "x".repeat(40_000) }, labels),
    );
    await api.create(secret(otherNamespace, "prod-ca", { "tls.crt": "elsewhere" }, labels));
    // Let the watch deliver the labelled one, so a GET below is the cache's choice, not its lag.
    await waitFor("the bootstrap Secret's event has passed", async () => {
      const marker = await cache.create(secret(namespace, "marker-ca", {}, { [LABEL_CLUSTER_NAME]: "marker" }));
      return marker === "exists" && (await servedFromCache({ namespace, name: "marker-ca" }));
    });
    gets = [];
    assert.equal(dataText((await cache.get({ namespace, name: "byo-ca" }))!, "tls.crt"), "user's CA");
    assert.equal(
      (await cache.get({ namespace, name: "prod-control-plane-x7k2p" }))?.data?.value?.length,
      Buffer.from("#cloud-config\n" + "x".repeat(40_000)).toString("base64").length,
    );
    assert.equal(dataText((await cache.get({ namespace: otherNamespace, name: "prod-ca" }))!, "tls.crt"), "elsewhere");
    assert.deepEqual(gets, [
      `${namespace}/byo-ca`,
      `${namespace}/prod-control-plane-x7k2p`,
      `${otherNamespace}/prod-ca`,
    ]);
  });
});
