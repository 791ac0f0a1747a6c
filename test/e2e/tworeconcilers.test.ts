import { afterEach, describe, expect, it } from 'vitest';
import type { Broker, TaskMessage } from '../../src/broker/types.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

/** Counts what is published, per task and run. */
class CountingBroker implements Broker {
  readonly kind = 'inprocess' as const;
  readonly published: TaskMessage[] = [];
  constructor(private readonly inner: Broker) {}
  async publish(messages: readonly TaskMessage[]): Promise<void> {
    this.published.push(...messages);
    await this.inner.publish(messages);
  }
  consume(...args: Parameters<Broker['consume']>) {
    return this.inner.consume(...args);
  }
  ping() {
    return this.inner.ping();
  }
  close() {
    return this.inner.close();
  }
}

describe('two reconcilers at once', () => {
  let t: TestDatabase;
  const engines: Engine[] = [];
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.close();
    await t?.drop();
  });

  it('relay each post_sync once between them and every run ends terminal', async () => {
    t = await createTestDatabase();
    const broker = new CountingBroker(new InProcessBroker());
    const open = async () => {
      const e = await Engine.open({
        settings: testSettings({ concurrencyPerBucket: 3 }),
        db: t.db,
        broker,
        logger: silentLogger(),
        migrate: false,
      });
      engines.push(e);
      return e;
    };
    const [a, b] = [await open(), await open()];
    a.startWorker({ concurrency: 4 });
    await a.startReconciler({ id: 'a' });
    await b.startReconciler({ id: 'b' });
    const integ = await a.createIntegration({
      orgId: 'o',
      provider: 'synthetic',
      name: 'x',
      sources: ['s1', 's2', 's3'],
      datasets: ['teams', 'work-items'],
      config: { itemsPerDay: 1, latencyMs: 1 },
    });
    const runs: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await a.trigger({
        orgId: 'o',
        integrationId: integ.id,
        mode: 'backfill',
        triggeredBy: 'backfill',
        since: new Date('2026-01-01T00:00:00Z'),
        before: new Date('2026-02-01T00:00:00Z'),
        force: true,
      });
      runs.push(r.syncRunId);
    }
    const dump = async () => {
      const u = await t.db.query(
        'SELECT sync_run_id, status, tier, count(*)::int FROM syncrelay.sync_run_units GROUP BY 1,2,3 ORDER BY 1',
      );
      const o = await t.db.query(
        'SELECT sync_run_id, kind, status, available_at, claim_expires_at, attempts, arm_seq, claimed_arm_seq, ' +
          'last_error FROM syncrelay.sync_dispatch_outbox ORDER BY 1, 2',
      );
      const r = await t.db.query('SELECT id, status FROM syncrelay.sync_runs');
      return JSON.stringify({ u: u.rows, o: o.rows, r: r.rows, now: new Date() }, null, 1);
    };
    await waitFor(async () => {
      const { rows } = await t.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM syncrelay.sync_runs WHERE status = 'success' AND id = ANY($1::uuid[])",
        [runs],
      );
      const { rows: gens } = await t.db.query<{ n: number }>(
        'SELECT count(DISTINCT sync_run_id)::int AS n FROM syncrelay.synthetic_metrics_daily ' +
          'WHERE sync_run_id = ANY($1::uuid[])',
        [runs],
      );
      return rows[0]!.n === runs.length && gens[0]!.n === runs.length;
    }, 40_000).catch(async (err) => {
      console.error(await dump());
      throw err;
    });
    for (const run of runs) {
      const of = (name: string) => broker.published.filter((m) => m.name === name && m.payload.runId === run).length;
      // finalize may be published again by a racing re-check (harmless: terminal CAS); post_sync
      // is armed only by the transaction that inserted the ledger row.
      expect(of('finalize_sync_run')).toBeGreaterThanOrEqual(1);
      expect(of('post_sync')).toBe(1);
      const units = broker.published.filter((m) => m.name === 'run_sync_unit' && m.payload.runId === run);
      expect(new Set(units.map((m) => m.payload.unitId)).size).toBe(units.length);
    }
    const { rows: passes } = await t.db.query<{ reconciler: string }>(
      'SELECT DISTINCT reconciler FROM syncrelay.reconciler_passes',
    );
    expect(passes.map((p) => p.reconciler).sort()).toEqual(['a', 'b']);
  });
});
