import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EVENTS_PER_TIMED_KEY, WorkQueue, type ReconcileResult } from "../../../src/adapters/kube/queue.ts";
import { ManualClock, settle } from "./manual-clock.ts";

interface Call {
  key: string;
  signal: AbortSignal;
  finish(result?: ReconcileResult): void;
  fail(err: Error): void;
}

/** A worker whose every reconcile stays in flight until the test finishes or fails it. */
function controlledWorker() {
  const calls: Call[] = [];
  let running = 0;
  let maxRunningPerKey = 0;
  const runningPerKey = new Map<string, number>();
  const worker = (key: string, signal: AbortSignal) =>
    new Promise<ReconcileResult | void>((resolve, reject) => {
      running++;
      const n = (runningPerKey.get(key) ?? 0) + 1;
      runningPerKey.set(key, n);
      maxRunningPerKey = Math.max(maxRunningPerKey, n);
      const done = () => {
        running--;
        runningPerKey.set(key, (runningPerKey.get(key) ?? 1) - 1);
      };
      calls.push({
        key,
        signal,
        finish: (result) => {
          done();
          resolve(result);
        },
        fail: (err) => {
          done();
          reject(err);
        },
      });
    });
  return {
    worker,
    calls,
    keys: () => calls.map((c) => c.key),
    get running() {
      return running;
    },
    get maxRunningPerKey() {
      return maxRunningPerKey;
    },
  };
}

function newQueue(clock: ManualClock, concurrency = 1) {
  return new WorkQueue({ name: "test", concurrency, backoffBaseMs: 1_000, backoffMaxMs: 8_000, clock });
}

/** A started queue on a manual clock, whose reconciles the test finishes or fails one by one. */
function startedQueue(concurrency = 1) {
  const clock = new ManualClock();
  const queue = newQueue(clock, concurrency);
  const w = controlledWorker();
  queue.start(w.worker);
  return { clock, queue, w };
}

describe("WorkQueue", () => {
  it("reconciles a key added many times while it waits only once", async () => {
    const clock = new ManualClock();
    const queue = newQueue(clock);
    for (let i = 0; i < 5; i++) queue.add("ns/a");
    queue.add("ns/b");
    queue.add("ns/a");
    assert.equal(queue.depth, 2);
    const w = controlledWorker();
    queue.start(w.worker);
    await settle();
    w.calls[0].finish();
    await settle();
    w.calls[1].finish();
    await settle();
    assert.deepEqual(w.keys(), ["ns/a", "ns/b"]);
    assert.equal(queue.depth, 0);
    await queue.shutdown();
  });

  it("waits for start before reconciling keys added during informer sync", async () => {
    const clock = new ManualClock();
    const queue = newQueue(clock);
    const w = controlledWorker();
    queue.add("ns/a");
    await settle();
    assert.equal(w.calls.length, 0);
    queue.start(w.worker);
    await settle();
    assert.deepEqual(w.keys(), ["ns/a"]);
    w.calls[0].finish();
    await queue.shutdown();
  });

  it("runs a key added during its own reconcile once more afterwards, never two at a time", async () => {
    const { queue, w } = startedQueue(4);
    queue.add("ns/a");
    await settle();
    queue.add("ns/a");
    queue.add("ns/a");
    await settle();
    assert.equal(w.calls.length, 1, "the second add must wait for the first run");
    assert.equal(queue.depth, 0, "a key in flight is not counted as waiting");
    w.calls[0].finish();
    await settle();
    assert.equal(w.calls.length, 2);
    w.calls[1].finish();
    await settle();
    assert.equal(w.calls.length, 2, "the adds during the first run collapse into one re-run");
    assert.equal(w.maxRunningPerKey, 1);
    await queue.shutdown();
  });

  it("reconciles a key added by an event before keys whose timed re-run came due earlier", async () => {
    const { clock, queue, w } = startedQueue(1);
    queue.add("ns/busy");
    await settle();
    queue.addAfter("ns/poll-1", 100);
    queue.addAfter("ns/poll-2", 100);
    await clock.advance(100);
    queue.add("ns/event");
    queue.add("ns/poll-2");
    assert.equal(queue.depth, 3, "a timed key moved ahead by an event is counted once");
    for (let i = 0; i < 4; i++) {
      w.calls[i].finish();
      await settle();
    }
    assert.deepEqual(w.keys(), ["ns/busy", "ns/event", "ns/poll-2", "ns/poll-1"]);
    assert.equal(queue.depth, 0);
    await queue.shutdown();
  });

  it("takes a due timed re-run after at most EVENTS_PER_TIMED_KEY events in a row, however long events keep coming", async () => {
    // A burst of new clusters: every reconcile's status write is another event. Before, a cluster whose next step
    // only a poll can see (its etcd member joined) waited until the burst was over.
    const { clock, queue, w } = startedQueue(1);
    queue.add("ns/event-0");
    await settle();
    queue.addAfter("ns/poll", 100);
    await clock.advance(100);
    for (let i = 1; i <= 20; i++) {
      queue.add(`ns/event-${i}`);
      w.calls[i - 1].finish();
      await settle();
    }
    const keys = w.keys();
    const poll = keys.indexOf("ns/poll");
    assert.ok(poll > 0, `the timed re-run ran while events kept coming (${keys.join(", ")})`);
    assert.deepEqual(
      keys.slice(1, poll),
      Array.from({ length: EVENTS_PER_TIMED_KEY }, (_, i) => `ns/event-${i + 1}`),
      "events first, EVENTS_PER_TIMED_KEY of them, in order",
    );
    for (const call of w.calls.slice(20)) call.finish();
    await queue.shutdown();
  });

  it("reconciles different keys in parallel up to the concurrency limit", async () => {
    const { queue, w } = startedQueue(2);
    for (const key of ["ns/a", "ns/b", "ns/c", "ns/d"]) queue.add(key);
    await settle();
    assert.equal(w.running, 2);
    assert.equal(queue.depth, 2);
    w.calls[0].finish();
    await settle();
    assert.equal(w.running, 2);
    assert.deepEqual(w.keys(), ["ns/a", "ns/b", "ns/c"]);
    for (const c of w.calls.slice(1)) c.finish();
    await settle();
    w.calls[3].finish();
    await settle();
    assert.deepEqual(w.keys(), ["ns/a", "ns/b", "ns/c", "ns/d"]);
    await queue.shutdown();
  });

  it("retries a failing key after 1 s, 2 s, 4 s, then at the 8 s cap, and starts over at 1 s after a success", async () => {
    const { clock, queue, w } = startedQueue();
    queue.add("ns/a");
    await settle();

    const observedDelays: number[] = [];
    const failAndMeasure = async () => {
      w.calls.at(-1)!.fail(new Error("etcd unreachable"));
      await settle();
      const before = w.calls.length;
      let waited = 0;
      while (w.calls.length === before) {
        await clock.advance(250);
        waited += 250;
        assert.ok(waited <= 60_000, "the retry never came");
      }
      observedDelays.push(waited);
    };
    for (let i = 0; i < 5; i++) await failAndMeasure();
    assert.deepEqual(observedDelays, [1_000, 2_000, 4_000, 8_000, 8_000]);
    assert.equal(queue.failuresOf("ns/a"), 5);

    w.calls.at(-1)!.finish();
    await settle();
    assert.equal(queue.failuresOf("ns/a"), 0);
    assert.equal(queue.delayedCount, 0, "a success with no requeue schedules nothing");

    queue.add("ns/a");
    await settle();
    observedDelays.length = 0;
    await failAndMeasure();
    assert.deepEqual(observedDelays, [1_000]);
    w.calls.at(-1)!.finish();
    await queue.shutdown();
  });

  it("runs a key given to addAfter once its delay has passed, and keeps the earlier of two delays", async () => {
    const { clock, queue, w } = startedQueue();
    queue.addAfter("ns/a", 10_000);
    queue.addAfter("ns/a", 3_000);
    queue.addAfter("ns/a", 20_000);
    assert.equal(queue.delayedCount, 1);
    await clock.advance(2_999);
    assert.equal(w.calls.length, 0);
    await clock.advance(1);
    assert.deepEqual(w.keys(), ["ns/a"]);
    w.calls[0].finish();
    await clock.advance(60_000);
    assert.equal(w.calls.length, 1, "the later delays were superseded by the earlier one");
    await queue.shutdown();
  });

  it("re-runs a key when its reconcile asks to be requeued after a wait", async () => {
    const { clock, queue, w } = startedQueue();
    queue.add("ns/a");
    await settle();
    w.calls[0].finish({ requeueAfterMs: 15_000 });
    await clock.advance(14_000);
    assert.equal(w.calls.length, 1);
    await clock.advance(1_000);
    assert.equal(w.calls.length, 2);
    w.calls[1].finish();
    await queue.shutdown();
  });

  it("drops a pending delayed re-run when an event reconciles the key earlier", async () => {
    const { clock, queue, w } = startedQueue();
    queue.addAfter("ns/a", 30_000);
    queue.add("ns/a");
    await settle();
    assert.equal(queue.delayedCount, 0);
    w.calls[0].finish();
    await clock.advance(60_000);
    assert.equal(w.calls.length, 1);
    await queue.shutdown();
  });

  it("waits for reconciles in flight on shutdown and runs nothing after it", async () => {
    const { clock, queue, w } = startedQueue();
    queue.add("ns/a");
    queue.add("ns/b");
    queue.addAfter("ns/c", 1_000);
    await settle();
    let shutDown = false;
    const done = queue.shutdown().then(() => {
      shutDown = true;
    });
    await settle();
    assert.equal(shutDown, false, "shutdown must wait for ns/a");
    assert.equal(w.calls[0].signal.aborted, false, "a graceful shutdown lets the reconcile finish");
    queue.add("ns/d");
    w.calls[0].finish({ requeueAfterMs: 1 });
    await done;
    assert.equal(shutDown, true);
    await clock.advance(10_000);
    assert.deepEqual(w.keys(), ["ns/a"]);
    assert.equal(clock.pendingTimers, 0);
  });

  it("aborts the signal of reconciles in flight when shut down at once", async () => {
    const clock = new ManualClock();
    const queue = newQueue(clock);
    queue.add("ns/a");
    let sawAbort = false;
    queue.start(
      (_key, signal) =>
        new Promise<void>((resolve) => {
          signal.addEventListener("abort", () => {
            sawAbort = true;
            resolve();
          });
        }),
    );
    await settle();
    await queue.shutdown({ abortInFlight: true });
    assert.equal(sawAbort, true);
  });

  it("keeps working after a reconcile throws synchronously", async () => {
    const clock = new ManualClock();
    const queue = newQueue(clock);
    const seen: string[] = [];
    queue.start((key) => {
      seen.push(key);
      if (key === "ns/bad") throw new Error("boom");
      return Promise.resolve();
    });
    queue.add("ns/bad");
    queue.add("ns/good");
    await settle();
    assert.deepEqual(seen, ["ns/bad", "ns/good"]);
    assert.equal(queue.failuresOf("ns/bad"), 1);
    await queue.shutdown();
  });
});

describe("WorkQueue with a rank (older clusters first)", () => {
  /**
   * A burst: `clusters` keys arrive at once and each needs `steps` reconciles, every one of which triggers the
   * next by an event (the key is added again when it finishes, as a status write or a new Machine does). Returns,
   * for each key, how many reconciles had run when its last step ran.
   */
  async function burst(rank: ((key: string) => number) | undefined, clusters = 20, steps = 3) {
    const queue = new WorkQueue({ name: "burst", concurrency: 1, ...(rank ? { rank } : {}) });
    const done = new Map<string, number>();
    const runs = new Map<string, number>();
    let total = 0;
    queue.start(async (key) => {
      // A reconcile waits on I/O, and the event its write causes comes back while the next key runs.
      await new Promise((resolve) => setImmediate(resolve));
      total++;
      const n = (runs.get(key) ?? 0) + 1;
      runs.set(key, n);
      if (n === steps) done.set(key, total);
      else setImmediate(() => queue.add(key));
    });
    for (let i = 0; i < clusters; i++) queue.add(`ns/c${String(i).padStart(2, "0")}`);
    while (done.size < clusters) await new Promise((resolve) => setImmediate(resolve));
    await queue.shutdown();
    return [...done.values()].sort((a, b) => a - b);
  }

  it("lets the first clusters of a burst finish all their steps early instead of all finishing at the end", async () => {
    const byCreation = (key: string) => Number(key.slice(-2));
    const fifo = await burst(undefined);
    const ranked = await burst(byCreation);
    // FIFO: every cluster takes step k before any takes step k + 1, so the first one finishes after 2 × 20 + 1 runs.
    assert.equal(fifo[0], 41);
    // Oldest first: the first cluster's steps alternate with the second's (its event comes back while the next key
    // runs), and every fifth take goes to the next rank up (the second cluster): done within 2 × 3 + 1 runs.
    assert.ok(ranked[0] <= 7, `first cluster done after ${ranked[0]} runs`);
    const median = (values: number[]) => values[Math.floor(values.length / 2)];
    assert.ok(median(ranked) < median(fifo), `median ${median(ranked)} runs (FIFO ${median(fifo)})`);
  });
});
