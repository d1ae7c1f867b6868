import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { WatchTarget } from "../../../src/adapters/kube/informer.ts";
import {
  DRAIN_BACKGROUND_MS,
  Manager,
  type Controller,
  type ManagerOptions,
} from "../../../src/adapters/kube/manager.ts";
import type { ResourceRef } from "../../../src/adapters/kube/rest.ts";
import { FakeApi, type ConfigMap } from "./fake-api.ts";
import { LeaseStore } from "./fake-lease.ts";
import { ManualClock, settle } from "./manual-clock.ts";

const configmaps: ResourceRef = { group: "", version: "v1", plural: "configmaps", namespaced: true };
const primary: WatchTarget = { resource: configmaps, namespace: "ns", labelSelector: "role=primary" };
const secondary: WatchTarget = { resource: configmaps, namespace: "ns", labelSelector: "role=secondary" };

function world() {
  const apis = new Map<WatchTarget, FakeApi>([
    [primary, new FakeApi("primary configmaps")],
    [secondary, new FakeApi("secondary configmaps")],
  ]);
  const steps: string[] = [];
  const listerWatcherFor = (target: WatchTarget) => {
    const api = [...apis].find(([t]) => t.labelSelector === target.labelSelector)?.[1];
    assert.ok(api, `unexpected target ${target.labelSelector}`);
    return {
      description: api.description,
      list: async () => {
        steps.push(`list ${api.description}`);
        return api.list();
      },
      watch: api.watch.bind(api),
    };
  };
  return { apis, primaryApi: apis.get(primary)!, secondaryApi: apis.get(secondary)!, steps, listerWatcherFor };
}

describe("Manager", () => {
  it("registers handlers, starts informers, waits for every cache, and only then reconciles, seeing the full cache", async (t) => {
    const w = world();
    w.primaryApi.put("a", "1");
    w.secondaryApi.put("owned-by-a", "1");
    let releaseSecondaryList: () => void = () => undefined;
    w.secondaryApi.listGate = new Promise((resolve) => (releaseSecondaryList = resolve));

    const controller: Controller = {
      name: "primary",
      watches: [
        { target: primary },
        // A secondary object reconciles its owner, named by the part before "owned-by-".
        { target: secondary, keysFor: (obj) => [`ns/${obj.metadata.name.replace("owned-by-", "")}`] },
      ],
      reconcile: async (key, ctx) => {
        const own = ctx.informer<ConfigMap>(primary).get(key);
        const owned = ctx
          .informer<ConfigMap>(secondary)
          .list()
          .map((o) => o.metadata.name);
        w.steps.push(`reconcile ${key} (exists: ${own !== undefined}, secondaries: ${owned.join(",")})`);
      },
    };
    const manager = new Manager({
      controllers: [controller],
      listerWatcherFor: w.listerWatcherFor,
      clock: new ManualClock(),
      onEvent: (e) => w.steps.push(e.type),
    });
    manager.start();
    t.after(() => manager.stop());
    await settle();
    assert.equal(manager.isReady(), false, "not ready while a cache is still listing");
    assert.ok(!w.steps.some((s) => s.startsWith("reconcile")), "no reconcile before every cache synced");
    releaseSecondaryList();
    await settle();
    assert.equal(manager.isReady(), true);
    assert.deepEqual(w.steps, [
      "started-leading",
      "handlers-registered",
      "starting-informers",
      "list primary configmaps",
      "list secondary configmaps",
      "caches-synced",
      "starting-workers",
      "reconcile ns/a (exists: true, secondaries: owned-by-a)",
    ]);

    w.steps.length = 0;
    w.secondaryApi.put("owned-by-b", "1");
    await settle();
    assert.deepEqual(w.steps, ["reconcile ns/b (exists: false, secondaries: owned-by-a,owned-by-b)"]);
    await manager.stop();
  });

  it("lets a reconcile in flight finish on graceful stop, holding the lease until it has", async (t) => {
    const w = world();
    w.primaryApi.put("a", "1");
    const store = new LeaseStore();
    let finish: () => void = () => undefined;
    let reconcileSignal: AbortSignal | undefined;
    const manager = new Manager({
      controllers: [
        {
          name: "primary",
          watches: [{ target: primary }],
          reconcile: (_key, ctx) => {
            reconcileSignal = ctx.signal;
            return new Promise<void>((resolve) => (finish = resolve));
          },
        },
      ],
      listerWatcherFor: w.listerWatcherFor,
      leaderElection: { namespace: "ns", name: "test", identity: "me", client: store.clientFor() },
      clock: new ManualClock(),
    });
    manager.start();
    t.after(() => {
      finish();
      return manager.stop();
    });
    await settle();
    assert.ok(reconcileSignal, "the reconcile started");
    const stopped = manager.stop();
    await settle();
    assert.equal(store.lease?.spec?.holderIdentity, "me", "the lease is held while the reconcile finishes");
    assert.equal(reconcileSignal?.aborted, false);
    finish();
    await stopped;
    assert.equal(store.lease?.spec?.holderIdentity, undefined, "released after the drain");
  });

  it("sends what the controllers queued in the background before releasing the lease, waiting 5 s at most", async (t) => {
    const w = world();
    const store = new LeaseStore();
    const clock = new ManualClock();
    let sent: () => void = () => undefined;
    const manager = new Manager({
      controllers: [
        {
          name: "primary",
          watches: [{ target: primary }],
          reconcile: async () => undefined,
          // Events still on their way to the API server.
          drain: () => new Promise<void>((resolve) => (sent = resolve)),
        },
      ],
      listerWatcherFor: w.listerWatcherFor,
      leaderElection: { namespace: "ns", name: "test", identity: "me", client: store.clientFor() },
      clock,
    });
    manager.start();
    t.after(() => manager.stop());
    await settle();
    const stopping = manager.stop();
    await settle();
    assert.equal(store.lease?.spec?.holderIdentity, "me", "held while the Events are sent");
    sent();
    await stopping;
    assert.equal(store.lease?.spec?.holderIdentity, undefined);

    // A drain that never ends holds the stop for DRAIN_BACKGROUND_MS, no longer.
    const hung = new Manager({
      controllers: [
        {
          name: "primary",
          watches: [{ target: primary }],
          reconcile: async () => undefined,
          drain: () => new Promise(() => {}),
        },
      ],
      listerWatcherFor: w.listerWatcherFor,
      leaderElection: { namespace: "ns", name: "test", identity: "me", client: store.clientFor() },
      clock,
    });
    hung.start();
    await settle();
    let stopped = false;
    const hungStopping = hung.stop().then(() => (stopped = true));
    await clock.advance(DRAIN_BACKGROUND_MS - 1);
    assert.equal(stopped, false);
    await clock.advance(1);
    await hungStopping;
    assert.equal(store.lease?.spec?.holderIdentity, undefined);
  });

  it("aborts reconciles in flight and starts no workers when leadership is lost", async (t) => {
    const clock = new ManualClock();
    const w = world();
    w.primaryApi.put("a", "1");
    const store = new LeaseStore();
    let reconcileSignal: AbortSignal | undefined;
    const events: string[] = [];
    const options: ManagerOptions = {
      controllers: [
        {
          name: "primary",
          watches: [{ target: primary }],
          reconcile: (_key, ctx) => {
            reconcileSignal = ctx.signal;
            return new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
          },
        },
      ],
      listerWatcherFor: w.listerWatcherFor,
      clock,
      leaderElection: { namespace: "ns", name: "test", identity: "me", client: store.clientFor() },
      onEvent: (e) => events.push(`${e.term} ${e.type}`),
    };
    const manager = new Manager(options);
    manager.start();
    t.after(() => manager.stop());
    await settle();
    assert.equal(reconcileSignal?.aborted, false);

    store.setHolder("someone-else");
    await clock.advance(2_000);
    assert.equal(reconcileSignal?.aborted, true, "the reconcile's signal aborts when the lease shows another holder");
    assert.equal(manager.isLeader(), false);
    assert.deepEqual(events.slice(-3), ["1 stopped-leading", "1 workers-stopped", "1 informers-stopped"]);

    // Lose the next term while its caches are still listing: its workers must never start.
    let releaseList: () => void = () => undefined;
    w.primaryApi.listGate = new Promise((resolve) => (releaseList = resolve));
    store.setHolder("me");
    await clock.advance(2_000);
    assert.ok(events.includes("2 starting-informers"));
    store.setHolder("someone-else");
    await clock.advance(2_000);
    releaseList();
    await settle();
    assert.ok(!events.includes("2 starting-workers"), events.join("\n"));
    assert.ok(events.includes("2 informers-stopped"));
    await manager.stop();
  });

  it("reports a lost Lease through onLostLeadership at once, before the reconcile in flight runs again, and not on a graceful stop", async (t) => {
    const clock = new ManualClock();
    const w = world();
    w.primaryApi.put("a", "1");
    const store = new LeaseStore();
    const seen: string[] = [];
    const options: ManagerOptions = {
      controllers: [
        {
          name: "primary",
          watches: [{ target: primary }],
          // The first term's reconcile is in flight until aborted; later ones finish at once.
          reconcile: async (_key, ctx) => {
            if (seen.length > 0) return;
            await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
            seen.push("reconcile saw the abort");
          },
        },
      ],
      listerWatcherFor: w.listerWatcherFor,
      clock,
      leaderElection: { namespace: "ns", name: "test", identity: "me", client: store.clientFor() },
      onLostLeadership: (reason) => void seen.push(`lost: ${reason}`),
    };
    const manager = new Manager(options);
    manager.start();
    t.after(() => manager.stop());
    await settle();
    store.setHolder("someone-else");
    await clock.advance(2_000);
    assert.deepEqual(seen, ["lost: Lease ns/test is now held by someone-else", "reconcile saw the abort"]);

    store.setHolder("me");
    await clock.advance(2_000);
    assert.equal(manager.isLeader(), true);
    await manager.stop();
    assert.equal(seen.length, 2, `a graceful stop is no loss: ${seen.join("; ")}`);
  });

  for (const leaderElect of [true, false]) {
    it(`gives up a term whose caches have not synced within the bound${leaderElect ? "" : ", without leader election too"}, naming the cache, and starts no worker`, async (t) => {
      const clock = new ManualClock();
      const w = world();
      w.primaryApi.put("a", "1");
      let releaseList: () => void = () => undefined;
      w.secondaryApi.listGate = new Promise((resolve) => (releaseList = resolve));
      const lost: string[] = [];
      const events: string[] = [];
      const store = new LeaseStore();
      const manager = new Manager({
        controllers: [
          {
            name: "primary",
            watches: [{ target: primary }, { target: secondary }],
            reconcile: async () => void events.push("reconciled"),
          },
        ],
        listerWatcherFor: w.listerWatcherFor,
        clock,
        cacheSyncTimeoutMs: 120_000,
        ...(leaderElect
          ? { leaderElection: { namespace: "ns", name: "test", identity: "me", client: store.clientFor() } }
          : {}),
        onLostLeadership: (reason) => void lost.push(reason),
        onEvent: (e) => events.push(`${e.term} ${e.type}`),
      });
      manager.start();
      t.after(async () => {
        releaseList();
        await manager.stop();
      });
      await clock.advance(119_000);
      assert.deepEqual(lost, []);
      await clock.advance(1_000);
      assert.equal(lost.length, 1, lost.join("\n"));
      assert.match(lost[0] ?? "", /^caches not synced within 120000 ms \(secondary configmaps\): giving up leadership/);
      assert.ok(events.includes("1 stopped-leading"), events.join("\n"));
      assert.ok(!events.includes("1 starting-workers") && !events.includes("reconciled"), events.join("\n"));
    });
  }

  it("caches each watched target as its watch's transform shapes it, and refuses two transforms for one cache", async (t) => {
    const w = world();
    w.primaryApi.put("a", "long value nobody reads");
    const seen: string[] = [];
    const shout = (obj: ConfigMap) => ({ metadata: obj.metadata, data: { value: "kept" } });
    const controller: Controller = {
      name: "primary",
      watches: [{ target: primary, transform: (obj) => shout(obj as ConfigMap) }],
      reconcile: async (key, ctx) => void seen.push(`${key}=${ctx.informer<ConfigMap>(primary).get(key)?.data?.value}`),
    };
    const manager = new Manager({
      controllers: [controller],
      listerWatcherFor: w.listerWatcherFor,
      clock: new ManualClock(),
    });
    manager.start();
    t.after(() => manager.stop());
    await settle();
    assert.deepEqual(seen, ["ns/a=kept"]);
    await manager.stop();

    const other: Controller = { ...controller, name: "other", watches: [{ target: primary }] };
    assert.throws(
      () => new Manager({ controllers: [controller, other], listerWatcherFor: w.listerWatcherFor }),
      /two watches of configmaps in namespace ns \(labels role=primary\) pass different transforms/,
    );
  });
  it("reconciles a key it is told about from outside the caches, only while leading with synced caches", async (t) => {
    const w = world();
    w.primaryApi.put("a", "1");
    let releaseList: () => void = () => undefined;
    w.primaryApi.listGate = new Promise((resolve) => (releaseList = resolve));
    const reconciled: string[] = [];
    const controller: Controller = {
      name: "primary",
      watches: [{ target: primary }],
      reconcile: async (key) => void reconciled.push(key),
    };
    const manager = new Manager({
      controllers: [controller],
      listerWatcherFor: w.listerWatcherFor,
      clock: new ManualClock(),
    });
    assert.equal(manager.enqueue("primary", "ns/a"), false, "not started");
    manager.start();
    t.after(() => manager.stop());
    await settle();
    assert.equal(manager.enqueue("primary", "ns/a"), false, "caches not synced yet");
    releaseList();
    await settle();
    assert.deepEqual(reconciled, ["ns/a"]);
    assert.equal(manager.enqueue("primary", "ns/a"), true);
    assert.equal(manager.enqueue("no-such-controller", "ns/a"), false);
    await settle();
    assert.deepEqual(reconciled, ["ns/a", "ns/a"], "the key told about is reconciled again, though no object changed");
    await manager.stop();
    assert.equal(manager.enqueue("primary", "ns/a"), false, "stopped");
  });
});
