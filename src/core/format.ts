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
