/**
 * The freshness report (src/store/freshness.ts + src/domain/freshness.ts) over real runs of the
 * synthetic provider on a cloned PostgreSQL database, at instants of an injected clock: one source
 * synced (fresh, then catching_up with an estimate from its unit's drain rate once the lag passes
 * the allowed lag), one whose run failed, one a rate limit defers, one never synced; the allowed lag
 * follows the tightest watermark-moving schedule; another org sees nothing. Then the pure rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readIntegrationFreshness } from '../../src/api/routes/freshness.js';
import { ManualClock } from '../../src/clock.js';
import {
  catchUpEta,
  freshnessState,
  longestGapMs,
  sortFreshness,
  type FreshnessFacts,
  type FreshnessItem,
} from '../../src/domain/freshness.js';
import { createSchedule } from '../../src/planning/schedules.js';
import { readFreshnessFacts } from '../../src/store/freshness.js';
import { getIntegration, type IntegrationRow } from '../../src/store/integrations.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';
import { seedFreshnessStates, type FreshnessSeed } from '../helpers/freshness.js';

const ORG = 'org-fresh';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const clock = new ManualClock(Date.UTC(2026, 2, 2, 12));
let h: TestEngine;
let seed: FreshnessSeed;
let row: IntegrationRow;

beforeAll(async () => {
  h = await openTestEngine({ clock, settings: { leaseMs: 60_000 } });
  // Each attempt takes one second of the injected clock: its unit's duration_ms.
  h.faults.arm('unit.beforeComplete', () => clock.advance(1000), 1_000_000);
  h.engine.startWorker({ concurrency: 1 });
  await h.engine.startReconciler({ scheduler: false });
  seed = await seedFreshnessStates(h.engine, ORG);
  row = (await getIntegration(h.t.db, seed.integrationId))!;
}, 60_000);
afterAll(async () => {
  await h?.close();
});

/** The report at `at` (the engine's clock stays where it is). */
function reportAt(at: Date) {
  return readIntegrationFreshness({ ...h.engine.ctx, clock: new ManualClock(at) }, row);
}

function bySource(items: readonly FreshnessItem[]): Record<string, FreshnessItem> {
  return Object.fromEntries(items.map((i) => [i.source_key, i]));
}

describe('the states reached by real runs', () => {
  it('answers one row per enabled source × work-item dataset, worst first, each as its runs left it', async () => {
    const now = clock.now();
    const report = await reportAt(now);
    expect(report.items.map((i) => [i.source_key, i.dataset_key, i.state])).toEqual([
      ['s-failing', 'work-items', 'failing'],
      ['s-deferred', 'work-items', 'deferred_by_budget'],
      ['s-never', 'work-items', 'never_synced'],
      ['s-fresh', 'work-items', 'fresh'],
    ]);
    expect(report.counts).toEqual({ failing: 1, deferred_by_budget: 1, catching_up: 0, never_synced: 1, fresh: 1 });
    expect(report).toMatchObject({ max_lag_ms: DAY, max_lag_basis: 'setting', schedules: [], as_of: now });

    const db = h.t.db;
    const rows = bySource(report.items);
    const { rows: marks } = await db.query<{ source_id: string; watermark_at: Date }>(
      `SELECT source_id, watermark_at FROM ${db.schema.sync_watermarks} WHERE integration_id = $1`,
      [seed.integrationId],
    );
    expect(marks.map((m) => m.source_id)).toEqual([seed.sources['s-fresh']]);
    const fresh = rows['s-fresh']!;
    expect(fresh.watermark_at).toEqual(marks[0]!.watermark_at);
    expect(fresh.lag_ms).toBe(now.getTime() - marks[0]!.watermark_at.getTime());
    expect(fresh.last_success_run_id).toBe(seed.runs.fresh);
    expect(fresh.last_error_category).toBeNull();

    const failing = rows['s-failing']!;
    expect(failing).toMatchObject({
      watermark_at: null,
      last_success_at: null,
      last_error_category: 'provider_error',
      last_error_run_id: seed.runs.failing,
    });
    const { rows: ended } = await db.query<{ updated_at: Date; available_at: Date | null; status: string }>(
      `SELECT updated_at, available_at, status FROM ${db.schema.sync_run_units}
        WHERE sync_run_id = ANY ($1::uuid[]) AND source_id IS NOT NULL ORDER BY sync_run_id`,
      [[seed.runs.failing, seed.runs.deferred]],
    );
    expect(failing.last_error_at).toEqual(ended.find((u) => u.status === 'failed')!.updated_at);

    const deferred = rows['s-deferred']!;
    const waiting = ended.find((u) => u.status === 'retrying')!;
    expect(deferred.deferred_until).toEqual(waiting.available_at);
    expect(deferred.deferred_until!.getTime()).toBeGreaterThanOrEqual(now.getTime() + HOUR - 1000);
    expect(deferred.in_progress_run_id).toBe(seed.runs.deferred);

    expect(rows['s-never']).toMatchObject({ watermark_at: null, lag_ms: null, in_progress_run_id: null });
  });

  it('is catching_up past the allowed lag, with the estimate of its drain rate', async () => {
    const db = h.t.db;
    const later = new Date(clock.now().getTime() + 3 * DAY);
    const report = await reportAt(later);
    const fresh = bySource(report.items)['s-fresh']!;
    expect(fresh.state).toBe('catching_up');
    expect(report.items[1]).toBe(fresh);
    const { rows } = await db.query<{ since_at: Date; before_at: Date; duration_ms: number }>(
      `SELECT since_at, before_at, duration_ms FROM ${db.schema.sync_run_units}
        WHERE sync_run_id = $1 AND source_id IS NOT NULL`,
      [seed.runs.fresh],
    );
    const unit = rows[0]!;
    expect(unit.duration_ms).toBeGreaterThanOrEqual(1000);
    const rate = (unit.before_at.getTime() - unit.since_at.getTime()) / unit.duration_ms;
    const lag = later.getTime() - fresh.watermark_at!.getTime();
    expect(fresh.lag_ms).toBe(lag);
    expect(fresh.catch_up_eta).toEqual(new Date(later.getTime() + Math.ceil(lag / (rate - 1))));
    expect(bySource(report.items)['s-failing']!.state).toBe('failing');
    expect(bySource(report.items)['s-never']!.state).toBe('never_synced');
  });

  it('allows twice the tightest enabled incremental or full_resync schedule interval', async () => {
    const at = clock.now();
    await createSchedule(h.t.db, clock, { orgId: ORG, integrationId: row.id, cron: '0 * * * *' });
    await createSchedule(h.t.db, clock, { orgId: ORG, integrationId: row.id, cron: '*/5 * * * *', mode: 'verify' });
    await createSchedule(h.t.db, clock, { orgId: ORG, integrationId: row.id, cron: '* * * * *', enabled: false });
    const mark = bySource((await reportAt(at)).items)['s-fresh']!.watermark_at!.getTime();
    const within = await reportAt(new Date(mark + 2 * HOUR));
    expect(within).toMatchObject({ max_lag_ms: 2 * HOUR, max_lag_basis: 'schedule' });
    const schedules = within.schedules.map((s) => [s.cron, s.mode, s.enabled, s.interval_ms]);
    expect(schedules.sort()).toEqual([
      ['* * * * *', 'incremental', false, 60_000],
      ['*/5 * * * *', 'verify', true, 5 * 60_000],
      ['0 * * * *', 'incremental', true, HOUR],
    ]);
    expect(bySource(within.items)['s-fresh']!.state).toBe('fresh');
    const past = await reportAt(new Date(mark + 2 * HOUR + 1));
    expect(bySource(past.items)['s-fresh']!.state).toBe('catching_up');
  });

  it("reads nothing of another org's integration", async () => {
    const q = { integrationId: row.id, datasetKeys: null };
    expect(await readFreshnessFacts(h.t.db, { ...q, orgId: 'org-other' })).toEqual([]);
    const all = await readFreshnessFacts(h.t.db, { ...q, orgId: ORG });
    // Without a dataset filter the reference dataset is there too.
    expect(new Set(all.map((f) => f.dataset_key))).toEqual(new Set(['teams', 'work-items']));
  });
});

describe('the rules', () => {
  const NOW = new Date(Date.UTC(2026, 0, 10));
  const base: FreshnessFacts = {
    source_id: 's',
    source_key: 'k',
    source_name: 'n',
    dataset_key: 'work-items',
    watermark_at: new Date(NOW.getTime() - HOUR),
    last_success_run_id: 'r1',
    last_success_at: new Date(NOW.getTime() - HOUR),
    last_success_before: new Date(NOW.getTime() - HOUR),
    last_end_status: 'success',
    last_end_run_id: 'r1',
    last_end_at: new Date(NOW.getTime() - HOUR),
    last_error_category: null,
    open_run_id: null,
    deferred_until: null,
    drain_window_ms: null,
    drain_busy_ms: null,
  };

  it('takes the first state that holds: failing, deferred, never synced, then by lag', () => {
    const later = new Date(NOW.getTime() + HOUR);
    expect(freshnessState(base, NOW, HOUR)).toBe('fresh');
    expect(freshnessState(base, NOW, HOUR - 1)).toBe('catching_up');
    expect(freshnessState({ ...base, deferred_until: later }, NOW, HOUR)).toBe('deferred_by_budget');
    expect(freshnessState({ ...base, deferred_until: NOW }, NOW, HOUR)).toBe('fresh');
    expect(freshnessState({ ...base, last_end_status: 'failed', deferred_until: later }, NOW, HOUR)).toBe('failing');
    const never = { ...base, watermark_at: null, last_success_before: null };
    expect(freshnessState(never, NOW, HOUR)).toBe('never_synced');
    expect(freshnessState({ ...never, deferred_until: later }, NOW, HOUR)).toBe('deferred_by_budget');
    // A dataset that keeps no watermark is as fresh as its last successful window.
    expect(freshnessState({ ...base, watermark_at: null }, NOW, HOUR)).toBe('fresh');
  });

  it('estimates only from a drain rate faster than time passes', () => {
    expect(catchUpEta({ ...base, drain_window_ms: 10 * DAY, drain_busy_ms: 0 }, NOW, DAY)).toBeNull();
    expect(catchUpEta({ ...base, drain_window_ms: 1000, drain_busy_ms: 1000 }, NOW, DAY)).toBeNull();
    // 11 ms of window per ms: the lag shrinks by 10 ms per ms.
    expect(catchUpEta({ ...base, drain_window_ms: 11_000, drain_busy_ms: 1000 }, NOW, DAY)).toEqual(
      new Date(NOW.getTime() + DAY / 10),
    );
  });

  it('sorts worst first and measures the longest gap between slots', () => {
    const item = (source_key: string, state: FreshnessItem['state'], lag_ms: number | null) =>
      ({ source_key, dataset_key: 'd', state, lag_ms }) as FreshnessItem;
    const sorted = sortFreshness([
      item('a', 'fresh', 5),
      item('b', 'catching_up', 10),
      item('c', 'catching_up', 20),
      item('d', 'failing', null),
      item('e', 'never_synced', null),
    ]);
    expect(sorted.map((i) => i.source_key)).toEqual(['d', 'c', 'b', 'e', 'a']);
    const slots = [0, 1, 2, 5, 6].map((d) => new Date(d * DAY));
    expect(longestGapMs(slots)).toBe(3 * DAY);
    expect(longestGapMs(slots.slice(0, 1))).toBeNull();
  });
});
