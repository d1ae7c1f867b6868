// The logger the runtime writes to. winston's Logger satisfies it; tests pass a recorder or `silentLogger`.

export type LogMeta = Record<string, unknown>;

export interface Logger {
  debug(message: string, meta?: LogMeta): unknown;
  info(message: string, meta?: LogMeta): unknown;
  warn(message: string, meta?: LogMeta): unknown;
  error(message: string, meta?: LogMeta): unknown;
}

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
