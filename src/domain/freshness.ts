/**
 * Freshness of an integration's data per (source, dataset): the state rules and the report, pure.
 *
 * A row's state, the first rule that holds:
 * 1. `failing` — the latest finished (success or failed) unit of the source × dataset failed.
 * 2. `deferred_by_budget` — its newest open unit waits, deferred by a provider rate limit, until a
 *    time still ahead (`deferred_until`: the unit's `available_at`).
 * 3. `never_synced` — no watermark and no successful unit yet.
 * 4. `catching_up` — the lag (now − watermark) is over the allowed lag.
 * 5. `fresh` — the lag is within the allowed lag.
 *
 * The allowed lag is twice the interval of the integration's tightest enabled schedule whose mode
 * moves watermarks (incremental, full_resync), else the SYNC_FRESHNESS_MAX_LAG_SECONDS setting.
 *
 * The catch-up estimate of a `catching_up` row comes from its recent successful units (at most
 * {@link DRAIN_SAMPLE_UNITS}): their drain rate r = Σ(before_at − since_at) ÷ Σ duration_ms, the
 * window of source time read per unit-millisecond. The backlog (the lag) grows by one millisecond
 * per millisecond while it is read, so it is read after lag ÷ (r − 1) ms; with no timed unit, or
 * r ≤ 1 (reading no faster than time passes), there is no estimate.
 */

import { UNIT_TRANSITIONS } from './statuses.js';

export const FRESHNESS_STATES = ['failing', 'deferred_by_budget', 'catching_up', 'never_synced', 'fresh'] as const;
export type FreshnessState = (typeof FRESHNESS_STATES)[number];

/** How many schedule intervals of lag a fresh source × dataset may have. */
export const FRESH_INTERVALS = 2;
/** A failed unit's status. */
const FAILED: string = UNIT_TRANSITIONS.fail.to;
/** Recent successful units a drain rate is measured over. */
export const DRAIN_SAMPLE_UNITS = 20;

/** What the store read about one source × dataset (src/store/freshness.ts). */
export interface FreshnessFacts {
  source_id: string;
  source_key: string;
  source_name: string;
  dataset_key: string;
  watermark_at: Date | null;
  /** The newest successful unit: its run, its end, and the end of the window it read. */
  last_success_run_id: string | null;
  last_success_at: Date | null;
  last_success_before: Date | null;
  /** The newest finished (success or failed) unit: its status, its run, its end and error category. */
  last_end_status: string | null;
  last_end_run_id: string | null;
  last_end_at: Date | null;
  last_error_category: string | null;
  /** The newest open unit's run, and until when it is deferred by a rate limit (null if it is not). */
  open_run_id: string | null;
  deferred_until: Date | null;
  /** Over the recent timed successful units: Σ window ms, Σ duration ms. */
  drain_window_ms: number | null;
  drain_busy_ms: number | null;
}

/** One row of the report, as the API answers it. */
export interface FreshnessItem {
  source_id: string;
  source_key: string;
  source_name: string;
  dataset_key: string;
  state: FreshnessState;
  watermark_at: Date | null;
  /** now − the watermark (or, without one, the end of the last successful unit's window); null if neither. */
  lag_ms: number | null;
  last_success_at: Date | null;
  last_success_run_id: string | null;
  /** The latest finished unit's error category when it failed, its run and when it ended. */
  last_error_category: string | null;
  last_error_run_id: string | null;
  last_error_at: Date | null;
  deferred_until: Date | null;
  /** The run of the newest open unit (work under way), or null. */
  in_progress_run_id: string | null;
  /** catching_up only: when the backlog is estimated to be read (see the module's comment). */
  catch_up_eta: Date | null;
}

/** The lag allowed to a fresh row: {@link FRESH_INTERVALS} × the schedule interval, else the setting. */
export function allowedLagMs(scheduleIntervalMs: number | null, settingMs: number): number {
  return scheduleIntervalMs === null ? settingMs : FRESH_INTERVALS * scheduleIntervalMs;
}

/** now − the point the data is read up to (the watermark, else the last success's window end). */
export function lagMs(f: FreshnessFacts, now: Date): number | null {
  const through = f.watermark_at ?? f.last_success_before;
  return through === null ? null : Math.max(0, now.getTime() - through.getTime());
}

/** The state of one row at `now` (the rules of the module's comment). */
export function freshnessState(f: FreshnessFacts, now: Date, maxLagMs: number): FreshnessState {
  if (f.last_end_status === FAILED) return 'failing';
  if (f.deferred_until !== null && f.deferred_until.getTime() > now.getTime()) return 'deferred_by_budget';
  const lag = lagMs(f, now);
  if (lag === null) return 'never_synced';
  return lag > maxLagMs ? 'catching_up' : 'fresh';
}

/** When a backlog of `lag` ms is read at the recent drain rate; null without a usable rate. */
export function catchUpEta(f: FreshnessFacts, now: Date, lag: number): Date | null {
  const window = f.drain_window_ms ?? 0;
  const busy = f.drain_busy_ms ?? 0;
  if (busy <= 0 || window <= busy) return null;
  const rate = window / busy;
  return new Date(now.getTime() + Math.ceil(lag / (rate - 1)));
}

/** One report row from the store's facts. */
export function freshnessItem(f: FreshnessFacts, now: Date, maxLagMs: number): FreshnessItem {
  const state = freshnessState(f, now, maxLagMs);
  const lag = lagMs(f, now);
  const failed = f.last_end_status === FAILED;
  return {
    source_id: f.source_id,
    source_key: f.source_key,
    source_name: f.source_name,
    dataset_key: f.dataset_key,
    state,
    watermark_at: f.watermark_at,
    lag_ms: lag,
    last_success_at: f.last_success_at,
    last_success_run_id: f.last_success_run_id,
    last_error_category: failed ? (f.last_error_category ?? 'unknown') : null,
    last_error_run_id: failed ? f.last_end_run_id : null,
    last_error_at: failed ? f.last_end_at : null,
    deferred_until: state === 'deferred_by_budget' ? f.deferred_until : null,
    in_progress_run_id: f.open_run_id,
    catch_up_eta: state === 'catching_up' && lag !== null ? catchUpEta(f, now, lag) : null,
  };
}

/** Rows worst first: by state (FRESHNESS_STATES order), then the larger lag, then source and dataset. */
export function sortFreshness(items: readonly FreshnessItem[]): FreshnessItem[] {
  const rank = (s: FreshnessState) => FRESHNESS_STATES.indexOf(s);
  return [...items].sort(
    (a, b) =>
      rank(a.state) - rank(b.state) ||
      (b.lag_ms ?? Infinity) - (a.lag_ms ?? Infinity) ||
      a.source_key.localeCompare(b.source_key) ||
      a.dataset_key.localeCompare(b.dataset_key),
  );
}

/** How many rows are in each state. */
export function countStates(items: readonly FreshnessItem[]): Record<FreshnessState, number> {
  const counts = Object.fromEntries(FRESHNESS_STATES.map((s) => [s, 0])) as Record<FreshnessState, number>;
  for (const i of items) counts[i.state]++;
  return counts;
}

/** The longest gap between consecutive `slots` (ascending times), or null with fewer than two. */
export function longestGapMs(slots: readonly Date[]): number | null {
  let gap: number | null = null;
  for (let i = 1; i < slots.length; i++) {
    const d = slots[i]!.getTime() - slots[i - 1]!.getTime();
    if (gap === null || d > gap) gap = d;
  }
  return gap;
}
