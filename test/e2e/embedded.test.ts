import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { PgliteDb } from '../../src/db/pglite.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { testSettings, waitFor } from '../helpers/engine.js';

describe('embedded default (PGlite + in-process broker)', () => {
  let engine: Engine | undefined;
  afterEach(async () => {
    await engine?.close();
  });

  it('runs a backfill with failures and rate limits to a terminal status, post_sync once', async () => {
    engine = await Engine.open({
      settings: testSettings(),
      db: await PgliteDb.open(),
      broker: new InProcessBroker(),
      logger: silentLogger(),
    });
    const integ = await engine.createIntegration({
      orgId: 'demo',
      provider: 'synthetic',
      name: 'Demo Linear',
      sources: ['a', 'b'],
      datasets: ['teams', 'members', 'work-items'],
      config: {
        impersonate: 'linear',
        itemsPerDay: 2,
        latencyMs: 2,
        failRate: 0.1,
        rateLimitRate: 0.5,
        rateLimitRetryAfterMs: 50,
        seed: 7,
      },
    });
    engine.startWorker({ concurrency: 4 });
    await engine.startReconciler();
    const { syncRunId } = await engine.trigger({
      orgId: 'demo',
      integrationId: integ.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date('2026-01-01T00:00:00Z'),
      before: new Date('2026-03-01T00:00:00Z'),
    });
    const run = await waitFor(async () => {
      const { rows } = await engine!.db.query<{
        status: string;
        total_units: number;
        completed_units: number;
        failed_units: number;
      }>("SELECT * FROM syncrelay.sync_runs WHERE id = $1 AND status NOT IN ('planned', 'dispatching')", [syncRunId]);
      return rows[0];
    }, 60_000);
    expect(['success', 'partial_failed']).toContain(run.status);
    // 2 reference units + 2 sources × 5 fourteen-day windows (impersonating linear)
    expect(run.total_units).toBe(12);
    expect(run.completed_units + run.failed_units).toBe(12);
    const { rows: deferred } = await engine.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM syncrelay.sync_run_units WHERE sync_run_id = $1 AND rate_limit_deferrals > 0',
      [syncRunId],
    );
    expect(deferred[0]!.n).toBeGreaterThan(0);
    const gens = await waitFor(async () => {
      const { rows } = await engine!.db.query<{ g: number }>(
        'SELECT count(DISTINCT computed_at)::int AS g FROM syncrelay.synthetic_metrics_daily WHERE sync_run_id = $1',
        [syncRunId],
      );
      return rows[0]!.g > 0 ? rows[0]!.g : null;
    });
    expect(gens).toBe(1);
  });

  it('on open, treats units a previous embedded process left in flight as lost', async () => {
    const db = await PgliteDb.open();
    const first = await Engine.open({
      settings: testSettings(),
      db,
      broker: new InProcessBroker(),
      logger: silentLogger(),
    });
    const integ = await first.createIntegration({
      orgId: 'demo',
      provider: 'synthetic',
      name: 'restart',
      sources: ['a'],
      datasets: ['work-items'],
      config: {},
    });
    const { syncRunId } = await first.trigger({
      orgId: 'demo',
      integrationId: integ.id,
      mode: 'full_resync',
      triggeredBy: 'manual',
    });
    // Simulate a process that died with one unit dispatching and one running under a long lease.
    await db.query(
      `UPDATE syncrelay.sync_run_units
          SET status = 'running', lease_owner = 'dead', lease_expires_at = now() + interval '1 hour',
              started_at = now(), dispatched_at = now() WHERE sync_run_id = $1`,
      [syncRunId],
    );
    await first.close();
    engine = await Engine.open({ settings: testSettings(), db, broker: new InProcessBroker(), logger: silentLogger() });
    const { rows } = await db.query<{ expired: boolean }>(
      'SELECT lease_expires_at <= now() AS expired FROM syncrelay.sync_run_units WHERE sync_run_id = $1',
      [syncRunId],
    );
    expect(rows.every((r) => r.expired)).toBe(true);
    engine.startWorker();
    await engine.startReconciler();
    const status = await waitFor(async () => {
      const r = await db.query<{ status: string }>(
        "SELECT status FROM syncrelay.sync_runs WHERE id = $1 AND status NOT IN ('planned', 'dispatching')",
        [syncRunId],
      );
      return r.rows[0]?.status;
    });
    expect(status).toBe('failed'); // the lost unit is not retry-eligible: worker_lost
    await engine.close();
    await db.close();
    engine = undefined;
  });
});
