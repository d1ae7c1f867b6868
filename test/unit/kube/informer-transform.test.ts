import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Informer, kubeListerWatcher, stripManagedFields } from "../../../src/adapters/kube/informer.ts";
import type { KubeList, KubeRest } from "../../../src/adapters/kube/rest.ts";
import { FakeApi, type ConfigMap } from "./fake-api.ts";
import { ManualClock, settle } from "./manual-clock.ts";

/** Keeps ConfigMaps whose name starts with "keep-", with their value upper-cased. */
const keepAndShout = (obj: ConfigMap): ConfigMap | undefined =>
  obj.metadata.name.startsWith("keep-")
    ? { metadata: obj.metadata, data: { value: (obj.data?.value ?? "").toUpperCase() } }
    : undefined;

async function startedInformer(api: FakeApi) {
  const events: string[] = [];
  const informer = new Informer(api, { clock: new ManualClock(), minWatchMs: 0, transform: keepAndShout });
  informer.addHandlers({
    add: (obj) => void events.push(`add ${obj.metadata.name}=${obj.data?.value}`),
    update: (obj, old) => void events.push(`update ${obj.metadata.name}=${old.data?.value}->${obj.data?.value}`),
    delete: (obj) => void events.push(`delete ${obj.metadata.name}=${obj.data?.value}`),
  });
  informer.start();
  await informer.waitForSync();
  return { informer, events };
}

describe("Informer with a transform", () => {
  it("caches and hands to handlers only the transformed objects it keeps, from the list and from the watch", async () => {
    const api = new FakeApi();
    api.put("keep-a", "x");
    api.put("drop-b", "y");
    const { informer, events } = await startedInformer(api);
    api.put("keep-c", "z");
    api.put("drop-d", "w");
    api.put("keep-a", "x2");
    await settle();
    assert.deepEqual(events, ["add keep-a=X", "add keep-c=Z", "update keep-a=X->X2"]);
    assert.deepEqual(
      informer
        .list()
        .map((obj) => `${obj.metadata.name}=${obj.data?.value}`)
        .sort(),
      ["keep-a=X2", "keep-c=Z"],
    );
    assert.equal(informer.get("ns/drop-b"), undefined);
    await informer.stop();
  });

  it("reports no delete for an object it never kept, and the transformed object for one it kept", async () => {
    const api = new FakeApi();
    api.put("keep-a", "x");
    api.put("drop-b", "y");
    const { informer, events } = await startedInformer(api);
    api.remove("drop-b");
    api.remove("keep-a");
    await settle();
    assert.deepEqual(events, ["add keep-a=X", "delete keep-a=X"]);
    assert.deepEqual(informer.list(), []);
    await informer.stop();
  });

  it("removes a cached object, with a delete event, once a change makes the transform leave it out", async () => {
    const api = new FakeApi();
    api.put("keep-a", "x");
    let keepAll = true;
    const informer = new Informer(api, {
      clock: new ManualClock(),
      minWatchMs: 0,
      transform: (obj: ConfigMap) => (keepAll || obj.data?.value !== "secret" ? obj : undefined),
    });
    const events: string[] = [];
    informer.addHandlers({ delete: (obj) => void events.push(`delete ${obj.metadata.name}=${obj.data?.value}`) });
    informer.start();
    await informer.waitForSync();
    keepAll = false;
    api.put("keep-a", "secret");
    await settle();
    assert.equal(informer.get("ns/keep-a"), undefined);
    assert.deepEqual(events, ["delete keep-a=x"], "handlers see the last object they were given");
    await informer.stop();
  });
});

describe("listing from the API server with a transform", () => {
  it("shapes each page as it arrives, holding no page as served, and shapes each object once", async () => {
    const configMap = (name: string): ConfigMap => ({
      metadata: { name, namespace: "ns", resourceVersion: "5" },
      data: { value: name.slice(-1) },
    });
    const pages: KubeList<ConfigMap>[] = [
      { items: [configMap("keep-a"), configMap("drop-b")], metadata: { continue: "next", resourceVersion: "5" } },
      { items: [configMap("keep-c")], metadata: { resourceVersion: "5" } },
    ];
    const served: (ConfigMap[] | undefined)[] = [];
    const rest = {
      get: async () => {
        const page = pages.shift();
        served.push(page?.items);
        return page;
      },
      watch: (_path: string, _query: unknown, _onEvent: unknown, signal: AbortSignal) =>
        new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })),
    } as unknown as KubeRest;
    const lister = kubeListerWatcher<ConfigMap>(rest, {
      resource: { group: "", version: "v1", plural: "configmaps", namespaced: true },
    });
    const shaped: string[] = [];
    const listed = await lister.list(new AbortController().signal, (obj) => {
      shaped.push(obj.metadata.name);
      return keepAndShout(obj);
    });
    assert.deepEqual(shaped, ["keep-a", "drop-b", "keep-c"]);
    assert.equal(listed.transformed, true);
    assert.deepEqual(
      listed.items.map((obj) => `${obj.metadata.name}=${obj.data?.value}`),
      ["keep-a=A", "keep-c=C"],
    );
    assert.ok(
      listed.items.every((obj) => !served.flat().includes(obj)),
      "a listed object is the served one, not its shape",
    );

    // The Informer hands its transform to the lister and does not apply it a second time.
    pages.push({ items: [configMap("keep-d"), configMap("drop-e")], metadata: { resourceVersion: "6" } });
    let calls = 0;
    const clock = new ManualClock();
    const informer = new Informer(lister, {
      clock,
      minWatchMs: 0,
      resyncMs: 60_000,
      transform: (obj: ConfigMap) => {
        calls++;
        return keepAndShout(obj);
      },
    });
    informer.start();
    await informer.waitForSync();
    assert.deepEqual(
      informer.list().map((obj) => `${obj.metadata.name}=${obj.data?.value}`),
      ["keep-d=D"],
    );
    assert.equal(calls, 2);

    // The scheduled re-list: an object at the version cached is the cached one, not a second copy, nor shaped again.
    const cachedD = informer.get("ns/keep-d");
    const changedF = { ...configMap("keep-f"), metadata: { name: "keep-f", namespace: "ns", resourceVersion: "7" } };
    pages.push({ items: [configMap("keep-d"), changedF], metadata: { resourceVersion: "7" } });
    await clock.advance(60_000);
    await settle();
    assert.equal(informer.stats.resyncs, 1);
    assert.equal(informer.get("ns/keep-d"), cachedD);
    assert.equal(informer.get("ns/keep-f")?.data?.value, "F");
    assert.equal(calls, 3, "only the new object was shaped");
    await informer.stop();
  });
});

describe("stripManagedFields (the Manager's default transform)", () => {
  it("drops metadata.managedFields and keeps everything else, without changing the object it was given", () => {
    const received = {
      metadata: {
        name: "m",
        namespace: "ns",
        resourceVersion: "7",
        labels: { a: "b" },
        managedFields: [{ manager: "capi", operation: "Update" }],
      },
      data: { value: "x" },
    } as ConfigMap & { metadata: { managedFields: unknown[] } };
    const cached = stripManagedFields(received);
    assert.deepEqual(cached, {
      metadata: { name: "m", namespace: "ns", resourceVersion: "7", labels: { a: "b" } },
      data: { value: "x" },
    });
    assert.equal(received.metadata.managedFields.length, 1);
  });
});
