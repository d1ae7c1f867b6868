// Time as the runtime sees it. Injected so the queue and the elector can be tested without waiting.

/** Whatever `setTimeout` returned; only ever handed back to the same clock's `clearTimeout`. */
export type TimerHandle = unknown;

export interface Clock {
  /** Wall time, milliseconds since the epoch: only for timestamps other processes read (a Lease's renewTime). */
  now(): number;
  /**
   * Milliseconds from an arbitrary origin that never steps (NTP, a VM resume, an operator's `date -s`): every
   * "has this much time passed" judgement uses it, or a clock step would shorten or stretch a lease.
   */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Resolves after `ms` on `clock`, or rejects with the signal's reason as soon as `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Exponential backoff: base * 2^(attempt-1), capped at max. attempt 1 is the first retry. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number): number {
  if (attempt <= 0) return 0;
  // 2^30 already dwarfs any sane cap; bounding the exponent keeps the arithmetic finite.
  const factor = 2 ** Math.min(attempt - 1, 30);
  return Math.min(baseMs * factor, maxMs);
}
