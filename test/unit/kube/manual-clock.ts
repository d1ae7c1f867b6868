// A clock that only moves when a test says so, for the queue's and elector's timing rules.
import type { Clock, TimerHandle } from "../../../src/adapters/kube/clock.ts";

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

export class ManualClock implements Clock {
  private current: number;
  /** How far the wall clock has been stepped away from the monotonic one (`stepWallClock`). */
  private wallOffset = 0;
  private nextId = 1;
  private timers: Timer[] = [];

  constructor(start = 1_700_000_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current + this.wallOffset;
  }

  monotonic(): number {
    return this.current;
  }

  /** Steps the wall clock (as NTP or `date -s` would) without moving the monotonic clock or firing timers. */
  stepWallClock(ms: number): void {
    this.wallOffset += ms;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer = { id: this.nextId++, at: this.current + Math.max(0, ms), fn };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  /** Moves time forward, firing due timers in order and letting promise callbacks run after each. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await settle();
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = due.at;
      due.fn();
    }
    this.current = target;
    await settle();
  }
}

/** Lets every queued promise callback and immediate run (several rounds, for chained awaits). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
