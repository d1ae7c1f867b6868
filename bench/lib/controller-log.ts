// The controller's log read back as what it did: each step's decision ("next action: <Kind>: <reason>", logged just
// before the step's first call) and its outcome (the result line of that action, or the queue's "reconcile failed;
// will retry" for the same object). The controller logs in text (the steps benchmark) or JSON (the scale benchmark);
// both reduce to the same entries.

export interface LogEntry {
  /** The log line's timestamp, epoch ms (the controller's clock: the same host clock as the benchmark's). */
  at: number;
  level: string;
  message: string;
  meta: { action?: string; object?: string; key?: string; error?: string };
}

export interface ActionRecord {
  kind: string;
  /** The QuorumControlPlane, namespace/name. */
  object: string;
  /** The "next action" line: the decision, just before the first call. */
  decidedAt: number;
  /** The result line: the call returned. Undefined when no result line followed (an error). */
  completedAt?: number;
  /** The decision line's text: "next action: <kind>: <reason>". */
  decision: string;
  message: string;
  /** The call ran but did not do the step (e.g. "not caught up yet; will retry"), or failed. */
  retry: boolean;
}

/** Text format: "<ISO time> <LEVEL>  <message> {meta}". Lines that are not log lines are skipped. */
export function textLogEntries(text: string): LogEntry[] {
  const entries: LogEntry[] = [];
  for (const line of text.split("\n")) {
    const match = /^(\d{4}-\d\d-\d\dT\S+Z) (\w+)\s+(.*?)(?: (\{.*\}))?$/.exec(line);
    if (!match) continue;
    try {
      const meta = match[4] ? (JSON.parse(match[4]) as LogEntry["meta"]) : {};
      entries.push({ at: Date.parse(match[1]), level: match[2].toLowerCase(), message: match[3], meta });
    } catch {
      // A message that merely ends in braces: not an action line.
    }
  }
  return entries;
}

/** JSON format (winston's json with timestamp): one object a line; lines that are not JSON are skipped. */
export function jsonLogEntries(text: string): LogEntry[] {
  const entries: LogEntry[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let parsed: { timestamp?: string; level?: string; message?: string } & LogEntry["meta"];
    try {
      parsed = JSON.parse(line) as typeof parsed;
    } catch {
      continue;
    }
    if (!parsed.timestamp || parsed.message === undefined) continue;
    const { action, object, key, error } = parsed;
    entries.push({
      at: Date.parse(parsed.timestamp),
      level: parsed.level ?? "",
      message: parsed.message,
      meta: { action, object, key, error },
    });
  }
  return entries;
}

/** Every action (Wait excluded) with its outcome, in log order. */
export function actionsOf(entries: readonly LogEntry[]): ActionRecord[] {
  const actions: ActionRecord[] = [];
  const open = new Map<string, ActionRecord>();
  for (const { at, message, meta } of entries) {
    if (message.startsWith("reconcile failed") && meta.key) {
      const record = open.get(meta.key);
      if (record) {
        record.completedAt = at;
        record.message = `failed: ${meta.error ?? "unknown error"}`;
        open.delete(meta.key);
      }
      continue;
    }
    if (!meta.action || meta.action === "Wait" || !meta.object) continue;
    if (message.startsWith("next action: ")) {
      const record: ActionRecord = {
        kind: meta.action,
        object: meta.object,
        decidedAt: at,
        decision: message,
        message,
        retry: true,
      };
      actions.push(record);
      open.set(meta.object, record);
      continue;
    }
    const record = open.get(meta.object);
    if (!record || record.kind !== meta.action) continue;
    record.completedAt = at;
    record.message = message;
    // A conflict re-plans at once; "not caught up" promotes later; a removal etcd refuses for now is "deferred":
    // the step is not done in any of these.
    record.retry = /will retry|not caught up|hit a conflict|deferred/i.test(message);
    open.delete(meta.object);
  }
  return actions;
}
