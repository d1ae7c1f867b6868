// The logger the runtime writes to. winston's Logger satisfies it; tests pass a recorder or `silentLogger`.
// The interface is the log port (src/ports/log.ts).
import type { Logger } from "../../ports/log.ts";

export type { LogMeta, Logger } from "../../ports/log.ts";

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** Renders any thrown value for a log line, keeping the API server's message when there is one. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === "string") return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}
