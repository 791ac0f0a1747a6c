/**
 * The Linear provider in real runs (in-process engine, worker and reconciler on real PostgreSQL)
 * against the emulator: a backfill of every dataset stores each emulated record once in the
 * normalized tables, and an incremental run after changes reads them on without a gap or a
 * duplicate. The work-item-metrics handler runs over the result.
 */
import { describe, expect, it } from 'vitest';
import { createLinearProvider, LINEAR_DATASETS } from '../../../src/providers/linear/index.js';
import { linearIntegrationFor, startLinearEmulator } from '../../../src/emulators/linear/index.js';
import { workItemMetricsHandler } from '../../../src/sinks/normalized/index.js';
import { linearRows } from '../../helpers/emulatorRows.js';
import { useEngineSuite } from '../../helpers/engineSuite.js';
import { DAY } from '../../helpers/emulatorSuite.js';

describe('Linear in real runs', () => {
  const fx = useEngineSuite({
    orgId: 'org-ln-e2e',
    emulator: () => startLinearEmulator({ seed: 5, scale: { teams: 2, issues: 150, days: 20 } }),
    provider: createLinearProvider({ postSyncHandlers: [workItemMetricsHandler], pageSize: 25 }),
    concurrency: 3,
  });
  const started = Date.now();

  async function expectStoredEqualsEmulator(id: string): Promise<void> {
    for (const [surface, n] of Object.entries(linearRows(fx.emu.data))) {
      expect(await fx.stored(id, surface), surface).toEqual({ keys: n, rows: n });
    }
  }

  it('backfills every dataset, then an incremental run after changes reads them on', async () => {
    const { emu, db } = fx;
    const setup = linearIntegrationFor(emu);
    expect([...setup.datasets].sort()).toEqual(LINEAR_DATASETS.map((d) => d.key).sort());
    const id = await fx.integrate(setup);
    const since = new Date(Math.floor((started - 22 * DAY) / DAY) * DAY);
    const before = new Date(Date.now() + 60_000);
    expect((await fx.run(id, { mode: 'backfill', triggeredBy: 'backfill', since, before })).status).toBe('success');
    await expectStoredEqualsEmulator(id);

    const m = emu.mutate();
    expect(m.updated.length + m.created.length).toBeGreaterThan(0);
    expect((await fx.run(id, { mode: 'incremental', triggeredBy: 'api' })).status).toBe('success');
    await expectStoredEqualsEmulator(id);
    // The changed issues' rows carry their new state.
    const { rows: changed } = await db.query<{ external_id: string; updated_at: Date }>(
      `SELECT external_id, updated_at FROM ${db.schema.table('work_items')}
        WHERE integration_id = $1 AND external_id = ANY($2::text[])`,
      [id, m.updated],
    );
    expect(changed).toHaveLength(m.updated.length);
    for (const r of changed) expect(r.updated_at.getTime()).toBe(emu.data.issueById.get(r.external_id)!.updatedAt);
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1`,
      [id],
    );
    expect(rows[0]!.n).toBeGreaterThan(0);
  });
});
