import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Informer, stripManagedFields } from "../../../src/adapters/kube/informer.ts";
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
