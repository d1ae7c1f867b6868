// The log port: winston's Logger satisfies it; tests pass a recorder or `silentLogger` (src/adapters/kube/log.ts).

export type LogMeta = Record<string, unknown>;

export interface Logger {
  debug(message: string, meta?: LogMeta): unknown;
  info(message: string, meta?: LogMeta): unknown;
  warn(message: string, meta?: LogMeta): unknown;
  error(message: string, meta?: LogMeta): unknown;
}
