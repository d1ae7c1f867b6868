// Go-style durations ("300s", "5m", "1h30m", "1.5h") as the CRD accepts them, converted to milliseconds.
import { belowMinimumMessage, SPEC_DURATION_MINIMUMS } from "./bounds.ts";

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;

/** Parses a Go duration; returns undefined for anything that is not one, so callers can name the bad field. */
export function parseDuration(text: string): number | undefined {
  if (text === "0") return 0;
  if (!/^((\d+(\.\d+)?)(ns|us|µs|ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const match of text.matchAll(PART)) total += Number(match[1]) * UNIT_MS[match[2]];
  return Math.round(total);
}

/**
 * The field's duration in ms, or the default when the field is unset. Throws naming the field when invalid or
 * below its minimum in src/api/bounds.ts (looked up by the field's path, the last word of `field`): an object
 * stored before the CRD had the minimum reaches the controller unchecked.
 */
export function durationOr(field: string, text: string | undefined, defaultMs: number): number {
  if (text === undefined || text === "") return defaultMs;
  const ms = parseDuration(text);
  if (ms === undefined)
    throw new Error(`${field}: "${text}" is not a duration; use a Go duration such as "300s", "5m" or "1h30m"`);
  const minimum = SPEC_DURATION_MINIMUMS[field.split(" ").at(-1) ?? ""];
  if (minimum && ms < minimum.minMs) throw new Error(belowMinimumMessage(field, minimum, text));
  return ms;
}
