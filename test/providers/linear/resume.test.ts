/**
 * A Linear backfill in a real run (in-process engine, worker and reconciler on real PostgreSQL)
 * against an emulator enforcing a small request budget (a leaky bucket refilled in real time: 3
 * requests every 2 seconds, slow enough that a loaded machine's slower pages still outrun it):
 * work-item units are deferred by the budget part-way through their windows, and each attempt
 * after the first reads on from the oldest update it wrote (its `lte` bound), never the first page
 * again (the emulator's request log shows it). Every issue is stored once;
 * each unit's result counts its whole window; its success clears its checkpoint.
 */
import { describe, expect, it } from 'vitest';
import { createLinearProvider } from '../../../src/providers/linear/index.js';
import { startLinearEmulator } from '../../../src/emulators/linear/index.js';
import type { UnitRow } from '../../../src/store/rows.js';
import { useEngineSuite } from '../../helpers/engineSuite.js';
import { DAY } from '../../helpers/emulatorSuite.js';

const FAMILY = ['work-items', 'work-item-comments', 'work-item-history', 'work-item-labels'];
const ISSUES = 'SyncIssuesCommentsHistoryLabels';
const PAGE = 10;

describe('a Linear unit deferred by the budget resumes where its keyset read stands', () => {
  const fx = useEngineSuite({
    orgId: 'org-ln-resume',
    // A bucket of 3 requests refilled at 1.5 a second: the unit's pages (and overflow pages) outrun it.
    emulator: () =>
      startLinearEmulator({
        seed: 11,
        scale: { teams: 1, issues: 80, days: 20 },
        rateLimit: { requests: { limit: 3, windowSeconds: 2 }, complexity: { limit: 1e9, windowSeconds: 1 } },
      }),
    provider: createLinearProvider({ pageSize: PAGE, budget: { reserve: 1 } }),
    concurrency: 2,
    random: () => 0, // no jitter: the unit comes due when the window resets
  });
  const started = Date.now();

  it('reads each next attempt on from the last written issue; every issue stored once', async () => {
    const { emu, db } = fx;
    const id = await fx.integrate({
      provider: 'linear',
      sources: emu.data.teams.map((x) => x.key),
      datasets: FAMILY,
      config: { apiUrl: emu.url },
      credential: emu.token,
    });
    const since = new Date(Math.floor((started - 22 * DAY) / DAY) * DAY);
    const before = new Date(Date.now() + 60_000);
    const run = await fx.run(id, { mode: 'backfill', triggeredBy: 'backfill', since, before });
    expect(run.status).toBe('success');

    const { rows: units } = await db.query<UnitRow>(
      `SELECT * FROM ${db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [run.runId],
    );
    const deferrals = units.reduce((n, u) => n + u.rate_limit_deferrals, 0);
    expect(deferrals).toBeGreaterThanOrEqual(1); // the budget stopped units part-way
    for (const u of units) expect(u).toMatchObject({ status: 'success', resume_checkpoint: null });
    // Each unit's result counts its whole window, whatever attempt read which part of it.
    const counted = units.map((u) => u.result!.work_items as number);
    expect(counted.reduce((a, n) => a + n, 0)).toBe(emu.data.issues.length);

    // Each unit reads its first page (no bound) once, on its first attempt; each later attempt
    // starts from the bound where the one before it stopped. A deferral re-reads at most the one
    // page whose overflow it was reading (not yet written); without resuming, each re-read its window.
    const pages = emu.requestLog.filter((e) => e.operation === ISSUES && e.status === 200).map((e) => e.upTo);
    const needed = counted.reduce((a, n) => a + Math.max(1, Math.ceil(n / PAGE)), 0);
    expect(pages.filter((a) => a === null)).toHaveLength(units.length);
    expect(new Set(pages).size).toBe(needed - units.length + 1);
    expect(pages.length).toBeLessThanOrEqual(needed + deferrals);

    const n = emu.data.issues.length;
    expect(await fx.stored(id, 'work_items')).toEqual({ keys: n, rows: n });
  });
});
