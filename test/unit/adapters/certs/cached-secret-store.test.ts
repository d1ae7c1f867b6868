import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { LABEL_CLUSTER_NAME } from "../../../../src/api/constants.ts";
import { CachedSecretStore, CREATED_KEPT_MS } from "../../../../src/adapters/certs/cached-secret-store.ts";
import { readCASecret } from "../../../../src/adapters/certs/ca-secret.ts";
import {
  dataText,
  secretBeforeCreate,
  secretMetadataBeforeCreate,
} from "../../../../src/adapters/certs/secret-store.ts";
import { ensureKubeconfig } from "../../../../src/adapters/certs/kubeconfig.ts";
import { RunningClusterSecretMissingError, SecretGarbageError } from "../../../../src/adapters/errors.ts";
import { ensureClusterCertificates } from "../../../../src/adapters/certs/cluster-secrets.ts";
import { ManualClock, settle } from "../../kube/manual-clock.ts";
import { FakeSecretApi } from "../fake-secret-api.ts";

const namespace = "team-a";
const labels = { [LABEL_CLUSTER_NAME]: "prod" };
const ref = (name: string) => ({ namespace, name });

const running: CachedSecretStore[] = [];
afterEach(async () => {
  for (const store of running.splice(0)) await store.stop();
});

/** A cache over `api`, started; synced unless the test holds the list. */
async function cacheOver(
  api: FakeSecretApi,
  options: { waitForSync?: boolean; clock?: ManualClock; namespace?: string } = {},
): Promise<CachedSecretStore> {
  const clock = options.clock ?? new ManualClock();
  const store = new CachedSecretStore({
    inner: api.store,
    listerWatcher: api,
    informer: { clock, minWatchMs: 0 },
    now: () => clock.now(),
    ...(options.namespace ? { namespace: options.namespace } : {}),
  });
  running.push(store);
  store.start();
  if (options.waitForSync ?? true) await store.waitForSync();
  return store;
}

const kubeconfig = ref("prod-kubeconfig");

/** The text in the kubeconfig Secret's "value" key, as `store` reads it. */
async function kubeconfigValue(store: CachedSecretStore): Promise<string | undefined> {
  const secret = await store.get(kubeconfig);
  return secret && dataText(secret, "value");
}

/** Reads the kubeconfig Secret and replaces its value, as a rotation does. */
async function rotateKubeconfig(store: CachedSecretStore, value: string) {
  const existing = (await store.get(kubeconfig))!;
  return store.replace({ ...existing, data: { value: Buffer.from(value).toString("base64") } });
}

describe("CachedSecretStore", () => {
  it("serves the cluster's CA and kubeconfig Secrets from the cache after the first list, without a GET", async () => {
    const api = new FakeSecretApi();
    for (const name of ["prod-ca", "prod-etcd", "prod-sa", "prod-proxy", "prod-kubeconfig"])
      api.put(namespace, name, { "tls.crt": name }, labels);
    const store = await cacheOver(api);
    for (let round = 0; round < 3; round++) {
      for (const name of ["prod-ca", "prod-etcd", "prod-kubeconfig"]) {
        assert.equal(dataText((await store.get(ref(name)))!, "tls.crt"), name);
      }
      for (const name of ["prod-sa", "prod-proxy"]) {
        const metadata = await store.getMetadata(ref(name));
        assert.equal(metadata?.metadata.name, name);
        assert.equal(metadata?.metadata.resourceVersion, (await api.store.get(ref(name)))?.metadata.resourceVersion);
      }
    }
    assert.equal(api.gets, 2 * 3, "the test's own reads only");
    assert.deepEqual(store.stats, { cacheReads: 15, apiReads: 0 });
  });

  it("keeps no data of the -sa and -proxy Secrets, which Quorum only checks for, and reads their data with a GET", async () => {
    const api = new FakeSecretApi();
    for (const name of ["prod-ca", "prod-sa", "prod-proxy"]) api.put(namespace, name, { "tls.key": name }, labels);
    const store = await cacheOver(api);
    const metadata = await store.getMetadata(ref("prod-sa"));
    assert.equal(metadata?.data, undefined);
    assert.equal(metadata?.metadata.labels?.[LABEL_CLUSTER_NAME], "prod");
    assert.equal(api.gets, 0);
    // get() still answers the whole Secret, from the API server.
    assert.equal(dataText((await store.get(ref("prod-sa")))!, "tls.key"), "prod-sa");
    assert.equal(dataText((await store.get(ref("prod-proxy")))!, "tls.key"), "prod-proxy");
    assert.equal(api.gets, 2);
    // A CA Secret keeps its data: its metadata comes without, its get() from the cache.
    assert.equal((await store.getMetadata(ref("prod-ca")))?.data, undefined);
    assert.equal(dataText((await store.get(ref("prod-ca")))!, "tls.key"), "prod-ca");
    assert.equal(api.gets, 2);
    assert.equal(await store.getMetadata(ref("prod-absent")), undefined);
  });

  it("returns the same object a GET would: a SecretObject with base64 data, without managedFields", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-ca", { "tls.crt": "cert", "tls.key": "key" }, labels);
    const store = await cacheOver(api);
    const cached = await store.get(ref("prod-ca"));
    assert.equal(api.gets, 0);
    assert.deepEqual(cached, await api.store.get(ref("prod-ca")));
    assert.equal(cached?.data?.["tls.crt"], Buffer.from("cert").toString("base64"));
  });

  it("gives a caller that changes the returned Secret no way to change what the next get returns", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-ca", { "tls.crt": "cert" }, labels);
    const store = await cacheOver(api);
    const first = (await store.get(ref("prod-ca")))!;
    first.data!["tls.crt"] = "changed";
    first.metadata.labels![LABEL_CLUSTER_NAME] = "other";
    const second = (await store.get(ref("prod-ca")))!;
    assert.equal(dataText(second, "tls.crt"), "cert");
    assert.equal(second.metadata.labels?.[LABEL_CLUSTER_NAME], "prod");
  });

  it("reads with a GET until the first list has arrived", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-ca", { "tls.crt": "cert" }, labels);
    let openList!: () => void;
    api.listGate = new Promise<void>((resolve) => (openList = resolve));
    const store = await cacheOver(api, { waitForSync: false });
    assert.equal(store.synced, false);
    assert.equal(dataText((await store.get(ref("prod-ca")))!, "tls.crt"), "cert");
    assert.equal(api.gets, 1);
    openList();
    await store.waitForSync();
    await store.get(ref("prod-ca"));
    assert.equal(api.gets, 1, "no GET once synced");
  });

  it("reads a user's CA Secret without the cluster-name label with a GET, every time", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-ca", { "tls.crt": "user's own CA" });
    const store = await cacheOver(api);
    assert.equal(dataText((await store.get(ref("prod-ca")))!, "tls.crt"), "user's own CA");
    assert.equal(dataText((await store.get(ref("prod-ca")))!, "tls.crt"), "user's own CA");
    assert.equal(api.gets, 2);
  });

  it("answers that a Secret does not exist when the API server says so", async () => {
    const api = new FakeSecretApi();
    const store = await cacheOver(api);
    assert.equal(await store.get(ref("prod-ca")), undefined);
    assert.equal(api.gets, 1);
  });

  it("finds a Secret created a moment ago, before the watch has delivered it", async () => {
    const api = new FakeSecretApi();
    const store = await cacheOver(api);
    api.holdEvents = true;
    const created = await store.create({
      metadata: { namespace, name: "prod-etcd", labels },
      data: { "tls.key": "a2V5" },
    });
    assert.equal(created, "created");
    assert.equal((await store.get(ref("prod-etcd")))?.data?.["tls.key"], "a2V5");
    assert.equal(api.gets, 0, "served as this process wrote it");
    api.releaseEvents();
    await settle();
    const watched = await store.get(ref("prod-etcd"));
    assert.equal(
      watched?.metadata.resourceVersion,
      api.objects.get(`${namespace}/prod-etcd`)?.metadata.resourceVersion,
    );
    assert.equal(api.gets, 0, "served from the cache once the watch delivered it");
  });

  it("reads a Secret it created with a GET once the watch has not delivered it for CREATED_KEPT_MS", async () => {
    const api = new FakeSecretApi();
    const clock = new ManualClock();
    const store = await cacheOver(api, { clock });
    api.holdEvents = true;
    await store.create({ metadata: { namespace, name: "prod-ca", labels }, data: { "tls.crt": "Y2E=" } });
    // Deleted by someone meanwhile; the watch is stuck and tells nothing.
    api.objects.delete(`${namespace}/prod-ca`);
    assert.equal((await store.get(ref("prod-ca")))?.data?.["tls.crt"], "Y2E=");
    await clock.advance(CREATED_KEPT_MS + 1);
    assert.equal(await store.get(ref("prod-ca")), undefined, "a GET finds it gone");
    assert.equal(api.gets, 1);
  });

  it("reads a Secret it created that its watch does not select (no label, another namespace) with a GET", async () => {
    const api = new FakeSecretApi();
    const store = await cacheOver(api, { namespace });
    // The fake's watch is not limited to the namespace: held, so that what answers is the store's own rule.
    api.holdEvents = true;
    await store.create({ metadata: { namespace, name: "prod-ca" }, data: { "tls.crt": "bm9sYWJlbA==" } });
    await store.create({ metadata: { namespace: "team-b", name: "prod-ca", labels }, data: { "tls.crt": "Yg==" } });
    assert.equal((await store.get(ref("prod-ca")))?.data?.["tls.crt"], "bm9sYWJlbA==");
    assert.equal((await store.get({ namespace: "team-b", name: "prod-ca" }))?.data?.["tls.crt"], "Yg==");
    assert.equal(api.gets, 2);
  });

  it("does not serve what it tried to create when the Secret already existed", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-ca", { "tls.crt": "user's own CA" });
    const store = await cacheOver(api);
    api.holdEvents = true;
    const outcome = await store.create({
      metadata: { namespace, name: "prod-ca", labels },
      data: { "tls.crt": "b3Vycw==" },
    });
    assert.equal(outcome, "exists");
    assert.equal(dataText((await store.get(ref("prod-ca")))!, "tls.crt"), "user's own CA");
  });

  it("creates a new cluster's four CA Secrets and reads them back with no GET", async () => {
    const api = new FakeSecretApi();
    const store = await cacheOver(api);
    api.holdEvents = true;
    const owner = { namespace, name: "prod", uid: "6d1c1f4e-0000-4000-8000-000000000001" };
    const result = await ensureClusterCertificates(store, "prod", owner, new Date());
    assert.deepEqual(result.created.sort(), ["prod-ca", "prod-etcd", "prod-proxy", "prod-sa"]);
    assert.equal((await store.getMetadata(ref("prod-sa")))?.metadata.name, "prod-sa");
    assert.ok(dataText((await store.get(ref("prod-etcd")))!, "tls.crt")?.startsWith("-----BEGIN CERTIFICATE-----"));
    assert.equal(api.gets, 0);
  });

  it("leaves a user's unlabelled CA of a new cluster as it is, though the cache cannot see it", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-ca", { "tls.crt": "user's own CA", "tls.key": "user's own key" });
    const store = await cacheOver(api);
    const owner = { namespace, name: "prod", uid: "6d1c1f4e-0000-4000-8000-000000000001" };
    const result = await ensureClusterCertificates(store, "prod", owner, new Date());
    assert.deepEqual(result.existing, ["prod-ca"]);
    assert.deepEqual(result.created.sort(), ["prod-etcd", "prod-proxy", "prod-sa"]);
    assert.equal(dataText((await store.get(ref("prod-ca")))!, "tls.crt"), "user's own CA");
  });

  it("confirms with the API server that a running cluster's CA Secret is missing before saying so", async () => {
    const api = new FakeSecretApi();
    for (const name of ["prod-etcd", "prod-sa", "prod-proxy"]) api.put(namespace, name, { "tls.crt": name }, labels);
    const store = await cacheOver(api);
    const owner = { namespace, name: "prod", uid: "6d1c1f4e-0000-4000-8000-000000000001" };
    await assert.rejects(
      ensureClusterCertificates(
        store,
        "prod",
        owner,
        new Date(),
        "QuorumControlPlane team-a/prod reports it initialized",
      ),
      RunningClusterSecretMissingError,
    );
    assert.equal(api.gets, 1, "the one Secret the cache lacks");
  });

  it("knows a Secret absent once synced, so a caller that creates it needs no GET", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-ca", { "tls.crt": "cert" }, labels);
    let openList!: () => void;
    api.listGate = new Promise<void>((resolve) => (openList = resolve));
    const store = await cacheOver(api, { waitForSync: false });
    // Before the first list it cannot know: a GET.
    assert.equal(store.knownAbsent(ref("prod-etcd")), false);
    assert.equal(await secretMetadataBeforeCreate(store, ref("prod-etcd")), undefined);
    assert.equal(api.gets, 1);
    openList();
    await store.waitForSync();
    assert.equal((await secretMetadataBeforeCreate(store, ref("prod-ca")))?.metadata.name, "prod-ca");
    assert.equal((await secretMetadataBeforeCreate(store, ref("prod-ca")))?.data, undefined);
    assert.equal(dataText((await secretBeforeCreate(store, ref("prod-ca")))!, "tls.crt"), "cert");
    assert.equal(await secretMetadataBeforeCreate(store, ref("prod-etcd")), undefined);
    assert.equal(await secretBeforeCreate(store, ref("prod-kubeconfig")), undefined);
    assert.equal(api.gets, 1, "no GET once synced");
    // getMetadata and get still confirm an absence with the API server.
    assert.equal(await store.getMetadata(ref("prod-etcd")), undefined);
    assert.equal(await store.get(ref("prod-kubeconfig")), undefined);
    assert.equal(api.gets, 3);
  });

  it("creates a new cluster's kubeconfig with no GET, and leaves one the cache has not seen yet as it is", async () => {
    const owner = { namespace, name: "prod", uid: "6d1c1f4e-0000-4000-8000-000000000001" };
    const options = { cluster: "prod", owner, endpoint: { host: "10.0.0.10", port: 6443 }, now: new Date() };
    const api = new FakeSecretApi();
    const store = await cacheOver(api);
    await ensureClusterCertificates(store, "prod", owner, new Date());
    assert.deepEqual(await ensureKubeconfig(store, options), {
      action: "created",
      reason: "absent",
    });
    assert.equal(api.gets, 0);
    // Another cluster whose kubeconfig a user wrote a moment ago: the watch has not brought it yet.
    const other = { ...options, cluster: "dev", owner: { ...owner, name: "dev" } };
    await ensureClusterCertificates(store, "dev", other.owner, new Date());
    api.holdEvents = true;
    api.put(namespace, "dev-kubeconfig", { value: "user's own kubeconfig" }, { [LABEL_CLUSTER_NAME]: "dev" });
    assert.deepEqual(await ensureKubeconfig(store, other), { action: "unchanged" });
    api.releaseEvents();
    assert.equal(dataText((await api.store.get(ref("dev-kubeconfig")))!, "value"), "user's own kubeconfig");
  });

  it("keeps CAPI's bootstrap-data Secrets out of the cache and still reads them correctly with a GET", async () => {
    const api = new FakeSecretApi();
    const bootstrap = "#cloud-config\n" + "x".repeat(40_000);
    api.put(namespace, "prod-control-plane-7xk2p", { value: bootstrap }, labels);
    // Labelled for another cluster: not a name Quorum reads for that cluster.
    api.put(namespace, "prod-ca", { "tls.crt": "cert" }, { [LABEL_CLUSTER_NAME]: "staging" });
    const store = await cacheOver(api);
    assert.equal(dataText((await store.get(ref("prod-control-plane-7xk2p")))!, "value"), bootstrap);
    assert.equal(dataText((await store.get(ref("prod-ca")))!, "tls.crt"), "cert");
    assert.deepEqual(store.stats, { cacheReads: 0, apiReads: 2 });
    assert.equal(api.gets, 2);
  });

  it("returns a replaced Secret to the next get even before the watch event arrives", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-kubeconfig", { value: "old" }, labels);
    const store = await cacheOver(api);
    api.holdEvents = true;
    const written = await rotateKubeconfig(store, "new");
    const read = (await store.get(kubeconfig))!;
    assert.equal(dataText(read, "value"), "new");
    assert.equal(read.metadata.resourceVersion, written.metadata.resourceVersion);
    api.releaseEvents();
    await settle();
    assert.equal(await kubeconfigValue(store), "new");
    assert.equal(api.gets, 0);
  });

  it("shows a later change by someone else instead of what this process replaced", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-kubeconfig", { value: "old" }, labels);
    const store = await cacheOver(api);
    api.holdEvents = true;
    await rotateKubeconfig(store, "ours");
    api.put(namespace, "prod-kubeconfig", { value: "theirs" }, labels);
    assert.equal(await kubeconfigValue(store), "ours", "their change has not reached the cache yet");
    api.releaseEvents();
    await settle();
    assert.equal(await kubeconfigValue(store), "theirs");
    assert.equal(api.gets, 0);
  });

  it("keeps showing the replaced Secret when the first list, answered before the write, arrives after it", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-kubeconfig", { value: "old" }, labels);
    let deliverList!: () => void;
    api.listGate = new Promise<void>((resolve) => (deliverList = resolve));
    const store = await cacheOver(api, { waitForSync: false });
    await rotateKubeconfig(store, "new");
    deliverList();
    await store.waitForSync();
    assert.equal(await kubeconfigValue(store), "new");
    assert.equal(api.gets, 1, "only the read before the first list used a GET");
  });

  it("reads a Secret deleted after this process replaced it with a GET, and finds it gone", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-kubeconfig", { value: "old" }, labels);
    const store = await cacheOver(api);
    api.holdEvents = true;
    await rotateKubeconfig(store, "new");
    api.remove(namespace, "prod-kubeconfig");
    api.releaseEvents();
    await settle();
    assert.equal(await store.get(kubeconfig), undefined);
    assert.equal(api.gets, 1);
  });

  it("turns a garbage CA Secret from the cache into the same typed error as one read with a GET", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-etcd", { "tls.crt": "not a certificate", "tls.key": "not a key" }, labels);
    const store = await cacheOver(api);
    const now = new Date("2030-01-01T00:00:00Z");
    const fromCache = await readCASecret(ref("prod-etcd"), await store.get(ref("prod-etcd")), now, "to test").then(
      () => assert.fail("a garbage CA must not load"),
      (error: unknown) => error,
    );
    const fromGet = await readCASecret(ref("prod-etcd"), await api.store.get(ref("prod-etcd")), now, "to test").then(
      () => assert.fail("a garbage CA must not load"),
      (error: unknown) => error,
    );
    assert.ok(fromCache instanceof SecretGarbageError);
    assert.equal(fromCache.message, (fromGet as Error).message);
    assert.equal(api.gets, 1, "only the comparison read used a GET");
  });

  it("reads with a GET again once stopped", async () => {
    const api = new FakeSecretApi();
    api.put(namespace, "prod-ca", { "tls.crt": "cert" }, labels);
    const store = await cacheOver(api);
    await store.stop();
    assert.equal(store.synced, false);
    assert.equal(dataText((await store.get(ref("prod-ca")))!, "tls.crt"), "cert");
    assert.equal(api.gets, 1);
  });
});
