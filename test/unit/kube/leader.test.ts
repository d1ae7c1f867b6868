import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LeaderElector } from "../../../src/adapters/kube/leader.ts";
import { LeaseStore } from "./fake-lease.ts";
import { ManualClock, settle } from "./manual-clock.ts";

const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/**
 * Two candidates on one Lease and a shared clock; "a" starts first and so wins. `log` holds lines like
 * "14000ms a stopped", timed from the start.
 */
async function twoCandidates() {
  const clock = new ManualClock();
  const start = clock.monotonic();
  const store = new LeaseStore();
  const log: string[] = [];
  const candidate = (identity: string) => {
    const client = store.clientFor();
    let leadingSignal: AbortSignal | undefined;
    const elector = new LeaderElector({
      ...timings,
      lease: client,
      identity,
      clock,
      onStartedLeading: (signal) => {
        leadingSignal = signal;
        log.push(`${clock.monotonic() - start}ms ${identity} started`);
      },
      onStoppedLeading: () => void log.push(`${clock.monotonic() - start}ms ${identity} stopped`),
    });
    return { elector, client, signal: () => leadingSignal };
  };
  const a = candidate("a");
  const b = candidate("b");
  a.elector.start();
  await settle();
  b.elector.start();
  const stopBoth = async () => {
    await a.elector.stop();
    await b.elector.stop();
  };
  return { clock, store, log, a, b, stopBoth };
}

describe("LeaderElector", () => {
  it("lets only one of two candidates lead while the holder keeps renewing", async (t) => {
    const { clock, store, log, a, b, stopBoth } = await twoCandidates();
    t.after(stopBoth);
    await clock.advance(60_000);
    assert.deepEqual(log, ["0ms a started"]);
    assert.equal(a.elector.isLeader(), true);
    assert.equal(b.elector.isLeader(), false);
    assert.equal(store.lease?.spec?.holderIdentity, "a");
    assert.match(store.lease?.spec?.renewTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it("lets exactly one of two candidates win when both race for a free lease at the same instant", async (t) => {
    const clock = new ManualClock();
    const store = new LeaseStore();
    // A released Lease: both candidates read it as free, both try to write it, one write must be refused.
    await store.clientFor().create({ leaseDurationSeconds: 15, leaseTransitions: 4 }, new AbortController().signal);
    const leaders: string[] = [];
    const electors = ["a", "b"].map(
      (identity) =>
        new LeaderElector({
          ...timings,
          lease: store.clientFor(),
          identity,
          clock,
          onStartedLeading: () => void leaders.push(identity),
          onStoppedLeading: () => undefined,
        }),
    );
    t.after(() => Promise.all(electors.map((e) => e.stop())));
    for (const elector of electors) elector.start();
    await clock.advance(30_000);
    assert.equal(leaders.length, 1, `leaders: ${leaders.join(", ")}`);
    assert.ok(store.conflicts >= 1, "the loser's write was refused by the resourceVersion precondition");
    assert.equal(store.lease?.spec?.leaseTransitions, 5);
  });

  it("lets the standby take over a killed holder's lease only after it expires", async (t) => {
    const { clock, log, a, stopBoth } = await twoCandidates();
    t.after(stopBoth);
    await clock.advance(4_000);
    // A killed process neither renews nor releases: model it by cutting it off from the API server.
    a.client.partitioned = true;
    await clock.advance(30_000);
    // a last renewed at 4 s; it gives up at 14 s (renew deadline), b saw that renewal at 4 s and may
    // take over from 19 s, on its first retry at or after that: 20 s.
    assert.deepEqual(log, ["0ms a started", "14000ms a stopped", "20000ms b started"]);
  });

  for (const [direction, stepMs] of [
    ["forward", 3_600_000],
    ["back", -3_600_000],
  ] as const) {
    it(`times lease expiry on the monotonic clock when the wall clock steps an hour ${direction}`, async (t) => {
      const { clock, log, a, stopBoth } = await twoCandidates();
      t.after(stopBoth);
      await clock.advance(4_500);
      // a renewed at 4 s and is cut off; b saw that record at 4 s. A wall step forward must not make b take over
      // before a has stopped (two leaders), a step back must not keep b from ever taking over.
      a.client.partitioned = true;
      await clock.advance(500);
      clock.stepWallClock(stepMs);
      await clock.advance(30_000);
      assert.deepEqual(log, ["0ms a started", "14000ms a stopped", "20000ms b started"]);
    });
  }

  it("stops leading, aborting the leader's signal, when the lease shows another holder", async (t) => {
    const { clock, store, log, a, b, stopBoth } = await twoCandidates();
    t.after(stopBoth);
    await clock.advance(3_000);
    store.setHolder("b");
    await clock.advance(2_000);
    assert.equal(a.signal()?.aborted, true);
    assert.equal(a.elector.isLeader(), false);
    assert.equal(b.elector.isLeader(), true);
    // Both poll at 4 s; which of the two runs first at that instant is not specified.
    assert.deepEqual([...log].sort(), ["0ms a started", "4000ms a stopped", "4000ms b started"]);
    await clock.advance(30_000);
    assert.equal(a.elector.isLeader(), false, "the old holder stays a standby while b renews");
  });

  it("hands the lease over within one retry period after a graceful release", async (t) => {
    const { clock, store, log, a, stopBoth } = await twoCandidates();
    t.after(stopBoth);
    await clock.advance(5_000);
    await a.elector.stop();
    assert.equal(store.lease?.spec?.holderIdentity, undefined);
    await clock.advance(2_000);
    assert.deepEqual(log, ["0ms a started", "5000ms a stopped", "6000ms b started"]);
  });

  it("does not release the lease until onStoppedLeading has finished stopping the workers", async () => {
    const clock = new ManualClock();
    const store = new LeaseStore();
    let finishStopping: () => void = () => undefined;
    const elector = new LeaderElector({
      ...timings,
      lease: store.clientFor(),
      identity: "a",
      clock,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => new Promise<void>((resolve) => (finishStopping = resolve)),
    });
    elector.start();
    await settle();
    const stopped = elector.stop();
    await settle();
    assert.equal(store.lease?.spec?.holderIdentity, "a", "workers still stopping: the lease stays held");
    finishStopping();
    await stopped;
    assert.equal(store.lease?.spec?.holderIdentity, undefined);
  });

  it("refuses timings where a stalled leader could outlive its lease", () => {
    const store = new LeaseStore();
    const make = (t: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }) =>
      new LeaderElector({
        ...t,
        lease: store.clientFor(),
        identity: "a",
        onStartedLeading: () => undefined,
        onStoppedLeading: () => undefined,
      });
    assert.throws(
      () => make({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }),
      /renew deadline/,
    );
    assert.throws(
      () => make({ leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }),
      /retry period/,
    );
  });
});
