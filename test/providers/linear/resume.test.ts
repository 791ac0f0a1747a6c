/**
 * A Linear backfill in a real run (in-process engine, worker and reconciler on real PostgreSQL)
 * against an emulator enforcing a small request budget: work-item units are deferred by the budget
 * part-way through their windows, and each attempt after the first asks for the page after the
 * last one written, never the first page again (the emulator's request log shows it). Every issue
 * is stored once; each unit's result counts its whole window; its success clears its checkpoint.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../../src/engine.js';
import { createLinearProvider } from '../../../src/providers/linear/index.js';
import { startLinearEmulator, type LinearEmulator } from '../../../src/emulators/linear/index.js';
import type { UnitRow } from '../../../src/store/rows.js';
import { openProviderEngine, runTerminal, type TestEngine } from '../../helpers/engine.js';
import type { TestDatabase } from '../../helpers/pg.js';

const ORG = 'org-ln-resume';
const DAY = 86_400_000;
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history', 'work-item-labels'];
const ISSUES = 'SyncIssuesCommentsHistoryLabels';
const PAGE = 10;

describe('a Linear unit deferred by the budget resumes from its last cursor', () => {
  let h: TestEngine;
  let t: TestDatabase;
  let engine: Engine;
  let emu: LinearEmulator;
  const started = Date.now();

  beforeAll(async () => {
    // 5 requests a second: the unit's pages of 10 issues (and their overflow pages) span windows.
    emu = await startLinearEmulator({
      seed: 11,
      scale: { teams: 1, issues: 80, days: 20 },
      rateLimit: { requests: { limit: 5, windowSeconds: 1 }, complexity: { limit: 1e9, windowSeconds: 1 } },
    });
    h = await openProviderEngine({
      provider: createLinearProvider({ pageSize: PAGE, budget: { reserve: 1 } }),
      concurrency: 2,
      random: () => 0, // no jitter: the unit comes due when the window resets
    });
    ({ t, engine } = h);
  });
  afterAll(async () => {
    await h?.close();
    await emu?.close();
  });

  it('asks each next attempt for the page after the last written one; every issue stored once', async () => {
    const integ = await engine.createIntegration({
      orgId: ORG,
      name: 'acme-linear',
      provider: 'linear',
      sources: emu.data.teams.map((x) => x.key),
      datasets: FAMILY,
      config: { apiUrl: emu.url },
      credential: emu.token,
    });
    const run = await engine.trigger({
      orgId: ORG,
      integrationId: integ.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date(Math.floor((started - 22 * DAY) / DAY) * DAY),
      before: new Date(Date.now() + 60_000),
    });
    expect(await runTerminal(t.db, run.syncRunId)).toBe('success');

    const { rows: units } = await t.db.query<UnitRow>(
      `SELECT * FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [run.syncRunId],
    );
    const deferrals = units.reduce((n, u) => n + u.rate_limit_deferrals, 0);
    expect(deferrals).toBeGreaterThanOrEqual(1); // the budget stopped units part-way
    for (const u of units) expect(u).toMatchObject({ status: 'success', resume_checkpoint: null });
    // Each unit's result counts its whole window, whatever attempt read which part of it.
    const counted = units.map((u) => u.result!.work_items as number);
    expect(counted.reduce((a, n) => a + n, 0)).toBe(emu.data.issues.length);

    // Each unit reads its first page (no cursor) once, on its first attempt; each later attempt
    // starts from the cursor where the one before it stopped. A deferral re-reads at most the one
    // page whose overflow it was reading (not yet written); without resuming, each re-read its window.
    const pages = emu.requestLog.filter((e) => e.operation === ISSUES && e.status === 200).map((e) => e.after);
    const needed = counted.reduce((a, n) => a + Math.max(1, Math.ceil(n / PAGE)), 0);
    expect(pages.filter((a) => a === null)).toHaveLength(units.length);
    expect(new Set(pages).size).toBe(needed - units.length + 1);
    expect(pages.length).toBeLessThanOrEqual(needed + deferrals);

    const { rows } = await t.db.query<{ keys: number; n: number }>(
      `SELECT count(DISTINCT external_id)::int AS keys, count(*)::int AS n
         FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [integ.id],
    );
    expect(rows[0]).toEqual({ keys: emu.data.issues.length, n: emu.data.issues.length });
  });
});
