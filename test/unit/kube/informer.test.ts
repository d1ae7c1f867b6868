import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Informer } from "../../../src/adapters/kube/informer.ts";
import type { Logger } from "../../../src/adapters/kube/log.ts";
import { FakeApi, type ConfigMap } from "./fake-api.ts";
import { ManualClock, settle } from "./manual-clock.ts";

function recorder() {
  const events: string[] = [];
  return {
    events,
    handlers: {
      add: (obj: ConfigMap) => void events.push(`add ${obj.metadata.name}=${obj.data?.value}`),
      update: (obj: ConfigMap, old: ConfigMap) =>
        void events.push(`update ${obj.metadata.name}=${old.data?.value}->${obj.data?.value}`),
      delete: (obj: ConfigMap) => void events.push(`delete ${obj.metadata.name}`),
    },
  };
}

function logRecorder() {
  const lines: { level: string; message: string; meta?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, meta?: Record<string, unknown>) =>
    void lines.push({ level, message, meta });
  const logger: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { lines, logger };
}

const options = (clock: ManualClock, logger?: Logger) => ({
  clock,
  logger,
  resyncMs: 60_000,
  backoffBaseMs: 500,
  backoffMaxMs: 4_000,
  minWatchMs: 0,
});

/** A started, synced informer over an empty fake API server, on a manual clock. */
async function syncedInformer() {
  const clock = new ManualClock();
  const api = new FakeApi();
  const informer = new Informer(api, options(clock));
  informer.start();
  await informer.waitForSync();
  return { clock, api, informer };
}

describe("Informer", () => {
  it("fills its cache from the list, reports synced, and follows watch events", async () => {
    const clock = new ManualClock();
    const api = new FakeApi();
    api.put("a", "1");
    const informer = new Informer(api, options(clock));
    const seen = recorder();
    informer.addHandlers(seen.handlers);
    assert.equal(informer.hasSynced(), false);
    informer.start();
    await informer.waitForSync();
    assert.equal(informer.hasSynced(), true);
    assert.equal(informer.get("ns/a")?.data?.value, "1");
    api.put("b", "1");
    api.put("a", "2");
    api.remove("b");
    await settle();
    assert.deepEqual(seen.events, ["add a=1", "add b=1", "update a=1->2", "delete b"]);
    assert.deepEqual(
      informer.list("ns").map((o) => o.metadata.name),
      ["a"],
    );
    await informer.stop();
  });

  it("keeps delivering events after a handler throws or rejects, and logs the failure with the object key", async () => {
    const clock = new ManualClock();
    const api = new FakeApi();
    const log = logRecorder();
    const informer = new Informer(api, options(clock, log.logger));
    const seen = recorder();
    informer.addHandlers({
      add: (obj) => {
        if (obj.metadata.name === "sync-throw") throw new Error("handler bug");
        if (obj.metadata.name === "async-throw") return Promise.reject(new Error("async handler bug"));
      },
    });
    informer.addHandlers(seen.handlers);
    informer.start();
    await informer.waitForSync();
    api.put("sync-throw", "1");
    api.put("async-throw", "1");
    api.put("fine", "1");
    await settle();
    assert.deepEqual(seen.events, ["add sync-throw=1", "add async-throw=1", "add fine=1"]);
    const failures = log.lines.filter((l) => l.level === "error").map((l) => l.meta?.key);
    assert.deepEqual(failures.sort(), ["ns/async-throw", "ns/sync-throw"]);
    assert.equal(api.openWatches.length, 1, "the watch survives handler failures");
    await informer.stop();
  });

  it("re-lists after a broken watch, with growing backoff while the API server is down, and reports what changed meanwhile", async () => {
    const clock = new ManualClock();
    const api = new FakeApi();
    api.put("a", "1");
    api.put("b", "1");
    const informer = new Informer(api, options(clock));
    const seen = recorder();
    informer.addHandlers(seen.handlers);
    informer.start();
    await informer.waitForSync();
    seen.events.length = 0;

    api.failNextLists = 2;
    api.breakWatches(new Error("socket hang up"));
    api.remove("a", { silently: true });
    api.put("b", "2", { silently: true });
    api.put("c", "1", { silently: true });
    await settle();
    assert.equal(api.listCalls, 1, "no re-list before the first backoff delay");
    await clock.advance(500);
    assert.equal(api.listCalls, 2, "first retry after 500 ms (fails)");
    await clock.advance(999);
    assert.equal(api.listCalls, 2, "second retry waits 1 s");
    await clock.advance(1);
    assert.equal(api.listCalls, 3, "second retry (fails)");
    await clock.advance(2_000);
    assert.equal(api.listCalls, 4, "third retry after 2 s succeeds");
    assert.deepEqual(seen.events.sort(), ["add c=1", "delete a", "update b=1->2"]);
    assert.equal(informer.stats.failures, 3);
    assert.equal(api.openWatches.length, 1);

    api.put("d", "1");
    await settle();
    assert.ok(seen.events.includes("add d=1"), "the new watch delivers events");
    await informer.stop();
  });

  it("re-lists at once, without backoff, when the watch's resource version has expired", async () => {
    const { api, informer } = await syncedInformer();
    api.emit({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired", message: "too old" } });
    await settle();
    assert.equal(api.listCalls, 2);
    assert.equal(informer.stats.failures, 0);
    await informer.stop();
  });

  it("treats an error event in the watch stream as a failure and restarts", async () => {
    const { clock, api, informer } = await syncedInformer();
    api.emit({ type: "ERROR", object: { kind: "Status", code: 500, reason: "InternalError", message: "etcd down" } });
    await settle();
    assert.equal(informer.stats.failures, 1);
    await clock.advance(500);
    assert.equal(api.listCalls, 2);
    await informer.stop();
  });

  it("re-lists on the watchdog schedule and catches a delete the stalled watch never delivered", async () => {
    const clock = new ManualClock();
    const api = new FakeApi();
    api.put("a", "1");
    const informer = new Informer(api, options(clock));
    const seen = recorder();
    informer.addHandlers(seen.handlers);
    informer.start();
    await informer.waitForSync();
    api.remove("a", { silently: true });
    await clock.advance(59_000);
    assert.equal(informer.get("ns/a")?.metadata.name, "a");
    await clock.advance(1_000);
    assert.equal(informer.get("ns/a"), undefined);
    assert.deepEqual(seen.events, ["add a=1", "delete a"]);
    assert.equal(informer.stats.resyncs, 1);
    assert.equal(informer.stats.failures, 0);
    await informer.stop();
  });

  it("stops quietly: no error is logged, no handler runs afterwards, and a pending waitForSync rejects", async () => {
    const clock = new ManualClock();
    const api = new FakeApi();
    api.failNextLists = 1;
    const log = logRecorder();
    const informer = new Informer(api, options(clock, log.logger));
    const seen = recorder();
    informer.addHandlers(seen.handlers);
    informer.start();
    const waiting = informer.waitForSync();
    await settle();
    await clock.advance(500);
    await waiting;
    const warningsBefore = log.lines.filter((l) => l.level !== "debug").length;
    await informer.stop();
    api.put("late", "1");
    await settle();
    assert.deepEqual(seen.events, []);
    assert.equal(log.lines.filter((l) => l.level !== "debug").length, warningsBefore);
    assert.equal(api.openWatches.length, 0);

    const unreachable = new FakeApi();
    unreachable.failNextLists = 100;
    const never = new Informer(unreachable, options(clock));
    never.start();
    const pending = never.waitForSync();
    await settle();
    await never.stop();
    await assert.rejects(pending, /stopped before its cache synced/);
  });

  it("refuses handlers registered after start, because they would miss the objects already listed", async () => {
    const clock = new ManualClock();
    const informer = new Informer(new FakeApi(), options(clock));
    informer.start();
    assert.throws(() => informer.addHandlers({}), /must be registered before start/);
    await informer.stop();
  });
});
