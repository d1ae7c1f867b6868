// Percentiles and summaries for benchmark samples. Nearest-rank percentiles: every reported figure is a value
// that was actually measured, which keeps a p99 over few samples honest (it is the maximum, not an extrapolation).

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const mean = n === 0 ? Number.NaN : sorted.reduce((sum, value) => sum + value, 0) / n;
  return {
    n,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[n - 1] ?? Number.NaN,
    mean,
  };
}

/** Rounds every number in a summary (ms figures to 0.1 ms) so the JSON stays readable. */
export function rounded(summary: Summary, digits = 1): Summary {
  const factor = 10 ** digits;
  const round = (value: number) => (Number.isFinite(value) ? Math.round(value * factor) / factor : value);
  return {
    n: summary.n,
    min: round(summary.min),
    p50: round(summary.p50),
    p95: round(summary.p95),
    p99: round(summary.p99),
    max: round(summary.max),
    mean: round(summary.mean),
  };
}
