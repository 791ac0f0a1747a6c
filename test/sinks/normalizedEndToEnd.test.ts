/**
 * A provider named github writing work items through the normalized sink in a real run, and the
 * work-item-metrics handler it lists delivered by post_sync over the run's covered window.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Provider, UnitContext } from '../../src/sdk/types.js';
import { normalizedSink, workItemMetricsHandler } from '../../src/sinks/normalized/index.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const DAY = 86_400_000;

/** One issue per day of the unit's window, opened at noon and closed done 24 hours later. */
async function writeIssues(ctx: UnitContext): Promise<{ items: number }> {
  const rows = [];
  for (let t = ctx.unit.since!.getTime(); t < ctx.unit.before!.getTime(); t += DAY) {
    const day = new Date(t).toISOString().slice(0, 10);
    rows.push({
      org_id: ctx.unit.orgId,
      integration_id: ctx.unit.integrationId,
      provider: 'github',
      external_id: `${ctx.unit.sourceKey ?? '-'}#${day}`,
      status: 'done',
      created_at: new Date(t + DAY / 2),
      completed_at: new Date(t + DAY + DAY / 2),
      last_synced_at: ctx.clock.now(),
      raw: { day },
    });
  }
  return { items: await ctx.sink.write(ctx.lease, 'work_items', rows) };
}

const fakeGithub: Provider = {
  name: 'github',
  windowDays: 7,
  datasets: [
    { key: 'work-items', tier: 'work_item', costClass: 'core', keepsWatermark: true, surfaces: ['work_items'] },
  ],
  runUnit: writeIssues,
  postSyncHandlers: [workItemMetricsHandler],
};

describe('normalized store in a run', () => {
  let t: TestDatabase;
  let engine: Engine;
  let broker: InProcessBroker;

  beforeAll(async () => {
    t = await createTestDatabase();
    broker = new InProcessBroker();
    const registry = new ProviderRegistry().register(fakeGithub, normalizedSink(t.db));
    engine = await Engine.open({
      settings: testSettings(),
      db: t.db,
      broker,
      registry,
      logger: silentLogger(),
      migrate: false,
    });
  });
  afterAll(async () => {
    await engine?.close();
    await broker?.close();
    await t?.drop();
  });

  it('writes the items and one metrics generation for every day of the backfill window', async () => {
    const integ = await engine.createIntegration({
      orgId: 'org-e2e',
      provider: 'github',
      name: 'acme',
      sources: ['acme/app'],
      datasets: ['work-items'],
    });
    engine.startWorker({ concurrency: 2 });
    await engine.startReconciler();
    const { syncRunId } = await engine.trigger({
      orgId: 'org-e2e',
      integrationId: integ.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date('2026-01-01T00:00:00Z'),
      before: new Date('2026-01-15T00:00:00Z'),
    });
    const rows = await waitFor(async () => {
      type Row = { day: string; items_created: number; items_completed: number; wip: number; p50: number | null };
      const res = await t.db.query<Row>(
        `SELECT to_char(day, 'YYYY-MM-DD') AS day, items_created, items_completed, wip, cycle_time_p50_hours AS p50
           FROM syncrelay.work_item_metrics_daily WHERE integration_id = $1 ORDER BY day`,
        [integ.id],
      );
      return res.rows.length > 0 ? res.rows : null;
    });
    const { rows: run } = await t.db.query<{ status: string }>('SELECT status FROM syncrelay.sync_runs WHERE id = $1', [
      syncRunId,
    ]);
    expect(run[0]!.status).toBe('success');
    const { rows: items } = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM syncrelay.work_items WHERE integration_id = $1',
      [integ.id],
    );
    expect(items[0]!.n).toBe(14);
    expect(rows).toHaveLength(14);
    expect(rows[0]).toMatchObject({ day: '2026-01-01', items_created: 1, items_completed: 0, wip: 1 });
    expect(rows.slice(1).every((r) => r.items_created === 1 && r.items_completed === 1 && r.wip === 1)).toBe(true);
    expect(rows.slice(1).map((r) => r.p50)).toEqual(Array(13).fill(24));
    expect(rows.at(-1)!.day).toBe('2026-01-14');
  });
});
