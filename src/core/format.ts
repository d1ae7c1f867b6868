// Human-readable durations for reasons and status ("5m", "1h30m", "45s"), Go-style like the spec's durations.

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return "forever";
  const totalSeconds = Math.max(0, Math.round(ms / 1000));
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  if (hours > 0) return `${hours}h${minutes > 0 ? `${minutes}m` : ""}`;
  if (minutes > 0) return `${minutes}m${seconds > 0 ? `${seconds}s` : ""}`;
  return `${seconds}s`;
}

/** Seconds with one decimal, for waits shorter than formatDuration's whole seconds: "3.8s". */
export function formatSeconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(1)}s`;
}

/**
 * An epoch-ms time as RFC 3339 UTC in whole seconds ("2026-12-03T10:00:00Z"), computed without Date so the core never
 * builds one (test/unit/core/purity.test.ts). Days to a civil date by Howard Hinnant's days_from_civil inverse.
 */
export function formatTime(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  const days = Math.floor(seconds / 86_400);
  const secondOfDay = seconds - days * 86_400;
  const shifted = days + 719_468;
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const two = (value: number) => String(value).padStart(2, "0");
  const time = [Math.floor(secondOfDay / 3600), Math.floor((secondOfDay % 3600) / 60), secondOfDay % 60].map(two);
  return `${String(year).padStart(4, "0")}-${two(month)}-${two(day)}T${time.join(":")}Z`;
}
