/**
 * 5. History scale: the relay's claim and a whole reconciler pass with 1,000 versus 1,000,000
 * historical rows — terminal runs spread over the last 28 days (inside the outbox retention, so
 * nothing is pruned), each with three successful units, three dispatched outbox rows, a ledger row
 * and a JobRun, bulk-loaded with SQL, then VACUUM ANALYZE. Both databases carry the same live work:
 * 100 dispatching runs with one planned unit and a due dispatch row each. Measured alternately:
 *   claim: one claimDueOutboxRows of 100 due rows;
 *   pass:  one reconcilePass (expire → repair → materialize → relay of those 100 rows → prune).
 * The ratio is large ÷ small of the medians (the worse of the two); target ≤ 1.5.
 */
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { reconcilePass } from '../../src/reconciler/pass.js';
import { claimDueOutboxRows } from '../../src/store/outbox.js';
import { benchSettings, openBenchEngine } from '../lib/engine.js';
import { benchPrefix, createBenchDatabase, type BenchDatabase } from '../lib/pg.js';
import { BENCH_ORG, createBenchIntegration, NOOP_PROVIDER } from '../lib/providers.js';
import { median, ratio, round, since } from '../lib/stats.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

const LIVE_RUNS = 100;
const CHUNK_RUNS = 50_000;
const TARGET = 1.5;

/** `rows` historical units and outbox rows (rows / 3 terminal runs), in chunks. */
export async function loadHistory(b: BenchDatabase, integrationId: string, rows: number): Promise<void> {
  for (let left = Math.ceil(rows / 3); left > 0; left -= CHUNK_RUNS) {
    await b.db.query(
      `WITH r AS (
         INSERT INTO syncrelay.sync_runs (org_id, integration_id, triggered_by, mode, status, total_units,
                                completed_units, started_at, completed_at, created_at, updated_at)
         SELECT $1, $2, 'schedule', 'incremental', 'success', 3, 3, t - interval '1 minute', t,
                t - interval '1 minute', t
           FROM (SELECT now() - interval '1 hour' - random() * interval '28 days' AS t FROM generate_series(1, $3)) g
         RETURNING id, org_id, integration_id, completed_at),
       u AS (
         INSERT INTO syncrelay.sync_run_units (org_id, sync_run_id, integration_id, provider, dataset_key, tier,
                                     cost_class, mode, status, attempts, started_at, duration_ms, result,
                                     dispatched_at, created_at, updated_at)
         SELECT r.org_id, r.id, r.integration_id, $4, 'noop-items', 'work_item', 'noop', 'incremental', 'success', 1,
                r.completed_at - interval '30 seconds', 5, '{"items":0}'::jsonb, r.completed_at - interval '40 seconds',
                r.completed_at - interval '1 minute', r.completed_at
           FROM r, generate_series(1, 3)),
       o AS (
         INSERT INTO syncrelay.sync_dispatch_outbox (org_id, sync_run_id, kind, status, available_at, attempts,
                                         dispatched_at, created_at, updated_at)
         SELECT r.org_id, r.id, k, 'dispatched', r.completed_at, 1, r.completed_at, r.completed_at, r.completed_at
           FROM r, unnest(ARRAY['dispatch_sync_run', 'finalize_sync_run', 'post_sync']) k),
       l AS (
         INSERT INTO syncrelay.sync_run_post_dispatches (org_id, sync_run_id, kind, dispatched_at)
         SELECT r.org_id, r.id, 'post_sync', r.completed_at FROM r)
       INSERT INTO syncrelay.job_runs (org_id, integration_id, status, triggered_by, started_at, completed_at,
                                       duration_ms, result, created_at)
       SELECT r.org_id, r.integration_id, 'success', 'schedule', r.completed_at - interval '1 minute',
              r.completed_at, 60000, jsonb_build_object('sync_run_id', r.id::text), r.completed_at - interval '1 minute'
         FROM r`,
      [BENCH_ORG, integrationId, Math.min(left, CHUNK_RUNS), NOOP_PROVIDER],
    );
  }
}

/** The live work both databases share; returns the live run ids. */
export async function loadLive(b: BenchDatabase, integrationId: string): Promise<string[]> {
  const { rows } = await b.db.query<{ id: string }>(
    `INSERT INTO syncrelay.sync_runs (org_id, integration_id, triggered_by, mode, status, started_at)
     SELECT $1, $2, 'api', 'backfill', 'dispatching', now() FROM generate_series(1, $3) RETURNING id`,
    [BENCH_ORG, integrationId, LIVE_RUNS],
  );
  const ids = rows.map((r) => r.id);
  await b.db.query(
    `INSERT INTO syncrelay.sync_run_units (org_id, sync_run_id, integration_id, provider, dataset_key, tier, cost_class,
                                          mode)
     SELECT $1, id, $2, $3, 'noop-items', 'work_item', 'noop', 'backfill' FROM unnest($4::uuid[]) id`,
    [BENCH_ORG, integrationId, NOOP_PROVIDER, ids],
  );
  await b.db.query(
    `INSERT INTO syncrelay.sync_dispatch_outbox (org_id, sync_run_id, kind, status, available_at)
     SELECT $1, id, 'dispatch_sync_run', 'pending', now() FROM unnest($2::uuid[]) id`,
    [BENCH_ORG, ids],
  );
  return ids;
}

/** The live runs' dispatch rows: pending, unclaimed, due. */
export async function rearm(b: BenchDatabase, live: string[]): Promise<void> {
  await b.db.query(
    `UPDATE syncrelay.sync_dispatch_outbox
        SET status = 'pending', dispatched_at = NULL, claim_token = NULL, claim_expires_at = NULL,
            available_at = now() - interval '1 second'
      WHERE sync_run_id = ANY($1::uuid[]) AND kind = 'dispatch_sync_run'`,
    [live],
  );
}

interface Side {
  name: 'small' | 'large';
  history: number;
  b: BenchDatabase;
  live: string[];
  engine: Awaited<ReturnType<typeof openBenchEngine>>;
  claim: number[];
  pass: number[];
}

async function prepare(name: Side['name'], history: number, note: (m: string) => void): Promise<Side> {
  const b = await createBenchDatabase(`hist_${name}`);
  const integrationId = await createBenchIntegration(b.db, NOOP_PROVIDER);
  const start = performance.now();
  await loadHistory(b, integrationId, history);
  const live = await loadLive(b, integrationId);
  await b.db.query('VACUUM ANALYZE');
  note(`history ${name}: ${history} rows loaded in ${round(since(start) / 1000)} s`);
  const engine = await openBenchEngine({
    db: b.db,
    settings: benchSettings(b.url, benchPrefix('hist')),
    broker: new InProcessBroker(),
  });
  return { name, history, b, live, engine, claim: [], pass: [] };
}

async function measureOnce(s: Side): Promise<void> {
  await rearm(s.b, s.live);
  const now = new Date();
  let start = performance.now();
  const claimed = await s.b.db
    .transaction(async (tx) => {
      const rows = await claimDueOutboxRows(tx, now, new Date(now.getTime() + 300_000), LIVE_RUNS);
      s.claim.push(since(start));
      throw Object.assign(new Error('roll back'), { rows: rows.length });
    })
    .catch((err: { rows?: number }) => err.rows ?? -1);
  if (claimed !== LIVE_RUNS) throw new Error(`claimed ${claimed} of ${LIVE_RUNS} due rows`);
  await rearm(s.b, s.live);
  start = performance.now();
  const c = await reconcilePass(s.engine.ctx, 'bench-history');
  s.pass.push(since(start));
  if (c.relayed_dispatch !== LIVE_RUNS) throw new Error(`the pass relayed ${c.relayed_dispatch} of ${LIVE_RUNS} rows`);
}

export const historyScenario: Scenario = {
  name: 'history',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const large = opts.quick ? 20_000 : 1_000_000;
    const reps = opts.quick ? 3 : Math.max(15, opts.reps);
    const sides: Side[] = [];
    try {
      sides.push(await prepare('small', 1000, opts.note));
      sides.push(await prepare('large', large, opts.note));
      for (const s of sides) await measureOnce(s); // warm-up
      for (const s of sides) {
        s.claim.length = 0;
        s.pass.length = 0;
      }
      for (let rep = 0; rep < reps; rep++) for (const s of rep % 2 ? [...sides].reverse() : sides) await measureOnce(s);
    } finally {
      for (const s of sides) {
        await s.engine.close();
        await s.engine.ctx.broker.close();
        await s.b.drop();
      }
    }
    const [small, big] = sides as [Side, Side];
    const claimRatio = ratio(median(big.claim), median(small.claim));
    const passRatio = ratio(median(big.pass), median(small.pass));
    const worst = Math.max(claimRatio, passRatio);
    return [
      {
        scenario: 'history_scale',
        history_small: small.history,
        history_large: big.history,
        live_due_rows: LIVE_RUNS,
        reps,
        claim_ms_small: round(median(small.claim)),
        claim_ms_large: round(median(big.claim)),
        claim_ratio: claimRatio,
        pass_ms_small: round(median(small.pass)),
        pass_ms_large: round(median(big.pass)),
        pass_ratio: passRatio,
        ratio: worst,
        target: `<= ${TARGET} (large ÷ small)`,
        met: worst <= TARGET,
      },
    ];
  },
};
