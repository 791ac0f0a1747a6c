/** The UTC days a work-item metrics run covers. Pure: no I/O. */

const DAY_MS = 86_400_000;

/** At most this many days are computed per run: the most recent ones of the window. */
export const MAX_METRICS_DAYS = 400;

export interface MetricsDays {
  /** First and last UTC day (`YYYY-MM-DD`) computed, both included. */
  firstDay: string;
  lastDay: string;
  /** Days of the window before `firstDay` left out by the cap (0 when none). */
  skippedDays: number;
}

/**
 * The days of `[from, to)`: every UTC day the window touches (a partial day counts). A null `from`
 * starts at `firstItemAt` (the integration's first item); a null `to` ends at `now`. More than
 * `maxDays` days keep the last `maxDays`: the older ones are not recomputed by this run (their
 * earlier generations stay). Null when there is nothing to compute (empty window, no items).
 */
export function metricsDays(
  window: { from: Date | null; to: Date | null },
  now: Date,
  firstItemAt: Date | null,
  maxDays = MAX_METRICS_DAYS,
): MetricsDays | null {
  const from = window.from ?? firstItemAt;
  const to = window.to ?? now;
  if (from === null || from.getTime() >= to.getTime()) return null;
  const first = Math.floor(from.getTime() / DAY_MS);
  const last = Math.floor((to.getTime() - 1) / DAY_MS);
  const kept = Math.max(first, last - maxDays + 1);
  return { firstDay: isoDay(kept), lastDay: isoDay(last), skippedDays: kept - first };
}

function isoDay(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}
