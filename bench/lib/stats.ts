/**
 * Percentiles and summaries for the benchmark. Nearest-rank percentiles (no interpolation): the
 * p-th percentile is the smallest sample with at least p % of the samples at or below it, so
 * every reported figure is a latency that was actually observed.
 */

/** Nearest-rank percentile of samples sorted ascending; NaN for no samples. */
export const percentile = (sorted: readonly number[], p: number): number => {
  if (sorted.length === 0) return Number.NaN;
  if (p <= 0) return sorted[0] as number;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, rank) - 1] as number;
};

/** The median; the mean of the two middle samples for an even count. NaN for no samples. */
export const median = (samples: readonly number[]): number => {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

export interface LatencySummary {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}

export const summarize = (samples: readonly number[]): LatencySummary => {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  };
};

/**
 * Repeated rounds of one measurement: each percentile is the median of that percentile over the
 * rounds, so one round disturbed by a neighbour's test run does not set the figure.
 */
export const medianOfRounds = (rounds: readonly LatencySummary[]): LatencySummary => ({
  n: rounds.reduce((total, round) => total + round.n, 0),
  p50: median(rounds.map((round) => round.p50)),
  p95: median(rounds.map((round) => round.p95)),
  p99: median(rounds.map((round) => round.p99)),
  max: Math.max(...rounds.map((round) => round.max)),
});

/** Rounds a figure for reports: 3 significant digits below 100, integers above. */
export const round = (value: number, digits = 3): number => {
  if (!Number.isFinite(value)) return value;
  if (Math.abs(value) >= 100) return Math.round(value);
  return Number(value.toPrecision(digits));
};
