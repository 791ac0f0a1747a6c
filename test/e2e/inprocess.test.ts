import { afterEach, describe, expect, it } from 'vitest';
import { openTestEngine, waitFor, type TestEngine } from '../helpers/engine.js';

describe('engine end to end (PostgreSQL + in-process broker)', () => {
  let te: TestEngine;
  afterEach(async () => {
    await te?.close();
  });

  it('runs a backfill to success and delivers post_sync once', async () => {
    te = await openTestEngine();
    const { engine } = te;
    const integ = await engine.createIntegration({
      orgId: 'org-a',
      provider: 'synthetic',
      name: 'demo',
      sources: ['s1', 's2'],
      datasets: ['teams', 'work-items', 'work-item-comments'],
      config: { itemsPerDay: 2, latencyMs: 1 },
    });
    engine.startWorker({ concurrency: 4 });
    await engine.startReconciler();
    const { syncRunId } = await engine.trigger({
      orgId: 'org-a',
      integrationId: integ.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date('2026-01-01T00:00:00Z'),
      before: new Date('2026-02-01T00:00:00Z'),
    });
    const run = await waitFor(async () => {
      const { rows } = await engine.db.query<{ status: string; total_units: number; completed_units: number }>(
        "SELECT * FROM syncrelay.sync_runs WHERE id = $1 AND status NOT IN ('planned','dispatching')",
        [syncRunId],
      );
      return rows[0];
    });
    expect(run.status).toBe('success');
    // 1 reference unit + 2 sources × 2 datasets × 5 weekly windows
    expect(run.total_units).toBe(21);
    expect(run.completed_units).toBe(21);
    const metrics = await waitFor(async () => {
      const { rows } = await engine.db.query<{ gens: number }>(
        'SELECT count(DISTINCT computed_at)::int AS gens FROM syncrelay.synthetic_metrics_daily WHERE sync_run_id = $1',
        [syncRunId],
      );
      return rows[0]!.gens > 0 ? rows[0] : null;
    });
    expect(metrics.gens).toBe(1);
    const { rows: jr } = await engine.db.query<{ status: string }>(
      "SELECT status FROM syncrelay.job_runs WHERE result->>'sync_run_id' = $1",
      [syncRunId],
    );
    expect(jr[0]!.status).toBe('success');
  });

  it('wakes the relay by NOTIFY: a run finishes long before the first interval pass would come', async () => {
    // With a 10-minute interval only LISTEN/NOTIFY (and the due-row timer) can move this run.
    te = await openTestEngine({
      settings: { reconcileIntervalMs: 600_000, redispatchCountdownMs: 600_000, concurrencyPerBucket: 2 },
    });
    const { engine } = te;
    const integ = await engine.createIntegration({
      orgId: 'org-b',
      provider: 'synthetic',
      name: 'notify',
      sources: ['s1', 's2', 's3'],
      datasets: ['teams', 'work-items'],
      config: { itemsPerDay: 1, latencyMs: 1 },
    });
    engine.startWorker({ concurrency: 4 });
    await engine.startReconciler();
    const { syncRunId } = await engine.trigger({
      orgId: 'org-b',
      integrationId: integ.id,
      mode: 'full_resync',
      triggeredBy: 'manual',
    });
    const status = await waitFor(async () => {
      const { rows } = await engine.db.query<{ status: string }>(
        "SELECT status FROM syncrelay.sync_runs WHERE id = $1 AND status NOT IN ('planned','dispatching')",
        [syncRunId],
      );
      return rows[0]?.status;
    }, 60_000);
    expect(status).toBe('success');
    const { rows } = await engine.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncrelay.reconciler_passes');
    expect(rows[0]!.n).toBe(1); // only the start-up pass ran
  });
});
