/** Half-open windows `[since, before)`; either bound may be null (unbounded). */
export interface Window {
  since: Date | null;
  before: Date | null;
}

const DAY_MS = 86_400_000;

/** Splits `[since, before)` into consecutive chunks of at most `days` days. */
export function chunkWindow(since: Date, before: Date, days: number): Window[] {
  if (!(days > 0)) throw new RangeError('window size must be positive');
  const out: Window[] = [];
  const step = days * DAY_MS;
  for (let t = since.getTime(); t < before.getTime(); t += step) {
    out.push({ since: new Date(t), before: new Date(Math.min(t + step, before.getTime())) });
  }
  return out;
}

/**
 * The window an incremental unit covers: from `overlapMs` before the watermark (or from the initial
 * depth) to now. The overlap reaches back over the provider's read-after-write lag: what changed just
 * before the last read but was not yet visible to it is read by this one (upserts make the re-read
 * harmless).
 */
export function incrementalWindow(watermark: Date | null, now: Date, initialDepthDays: number, overlapMs = 0): Window {
  if (watermark === null) return { since: new Date(now.getTime() - initialDepthDays * DAY_MS), before: now };
  return { since: new Date(watermark.getTime() - overlapMs), before: now };
}

/** The covered window of a set of windows: min since, max before; nulls if any is unbounded. */
export function coveredWindow(windows: Window[]): { from: Date | null; to: Date | null } {
  if (windows.length === 0 || windows.some((w) => w.since === null || w.before === null)) {
    return { from: null, to: null };
  }
  // A loop, not Math.min(...): spreading a very large array overflows the call stack.
  let from = Infinity;
  let to = -Infinity;
  for (const w of windows) {
    from = Math.min(from, w.since!.getTime());
    to = Math.max(to, w.before!.getTime());
  }
  return { from: new Date(from), to: new Date(to) };
}

export { DAY_MS };
