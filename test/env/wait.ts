// Polling for an observable state with a deadline whose error says what was last seen.
import { setTimeout as sleep } from "node:timers/promises";

export interface EventuallyOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Extra context for the timeout error, e.g. a process's last log lines. */
  context?: () => string;
}

/**
 * Calls `check` until it returns a value other than undefined/false, and returns that value. `check` may
 * return `{ waiting: "what was seen" }` to explain why it is not done yet; thrown errors count as "not yet".
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false | { waiting: string }>,
  options: EventuallyOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let lastSeen: string;
  for (;;) {
    try {
      const result = await check();
      if (result !== undefined && result !== false) {
        if (typeof result === "object" && result !== null && "waiting" in result) {
          lastSeen = (result as { waiting: string }).waiting;
        } else {
          return result as T;
        }
      } else {
        lastSeen = String(result);
      }
    } catch (error) {
      lastSeen = `error: ${(error as Error).message}`;
    }
    if (Date.now() > deadline) {
      const context = options.context ? `\n${options.context()}` : "";
      throw new Error(
        `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}; last seen: ${lastSeen}${context}`,
      );
    }
    await sleep(options.intervalMs ?? 250);
  }
}
