/** Small statistics for benchmark samples: medians and percentiles, never means of noisy runs. */

/** The q-quantile (0 ≤ q ≤ 1) by linear interpolation between the closest ranks. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export function median(samples: readonly number[]): number {
  return quantile(samples, 0.5);
}

/** Rounds for JSON output: 3 significant decimals below 10, fewer above. */
export function round(x: number): number {
  if (!Number.isFinite(x)) return x;
  const abs = Math.abs(x);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Milliseconds since `start` (from performance.now()). */
export function since(start: number): number {
  return performance.now() - start;
}

/** The ratio of two medians, rounded for output. */
export function ratio(a: number, b: number): number {
  return round(a / b);
}
