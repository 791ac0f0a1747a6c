/**
 * 1. Relay throughput: N due dispatch_sync_run outbox rows (each run with one planned unit, so
 * the relay's re-check publishes every one) claimed, published to BullMQ and marked, against raw
 * BullMQ `addBulk` of N jobs of the same shape (name, payload, job id, job options) into a fresh
 * queue. Both alternate, each on its own queue prefix, rows reset between repetitions.
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { toBullJobId } from '../../src/broker/bullmq.js';
import { relayDue } from '../../src/reconciler/relay.js';
import { benchSettings, openBenchEngine, openBroker } from '../lib/engine.js';
import { benchPrefix, createBenchDatabase, REDIS_URL, type BenchDatabase } from '../lib/pg.js';
import { BENCH_ORG, createBenchIntegration, NOOP_PROVIDER } from '../lib/providers.js';
import { deletePrefix } from '../lib/redis.js';
import { median, ratio, round, since } from '../lib/stats.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

const TARGET = 0.6;

/** N live runs, one planned unit each, one due dispatch row each. */
async function load(b: BenchDatabase, n: number): Promise<void> {
  const integrationId = await createBenchIntegration(b.db, NOOP_PROVIDER);
  await b.db.query(
    `INSERT INTO syncrelay.sync_runs (org_id, integration_id, triggered_by, mode, status)
     SELECT $1, $2, 'api', 'backfill', 'planned' FROM generate_series(1, $3)`,
    [BENCH_ORG, integrationId, n],
  );
  await b.db.query(
    `INSERT INTO syncrelay.sync_run_units (org_id, sync_run_id, integration_id, provider, dataset_key, tier, cost_class,
                                          mode)
     SELECT org_id, id, integration_id, $1, 'noop-items', 'work_item', 'noop', 'backfill' FROM syncrelay.sync_runs`,
    [NOOP_PROVIDER],
  );
  await reset(b);
}

/** Every row pending, unclaimed and due; dead tuples of the previous repetition vacuumed. */
async function reset(b: BenchDatabase): Promise<void> {
  await b.db.query('DELETE FROM syncrelay.sync_dispatch_outbox');
  await b.db.query(
    `INSERT INTO syncrelay.sync_dispatch_outbox (org_id, sync_run_id, kind, status, available_at)
     SELECT org_id, id, 'dispatch_sync_run', 'pending', now() - interval '1 second' FROM syncrelay.sync_runs`,
  );
  for (const t of ['sync_dispatch_outbox', 'sync_runs', 'sync_run_units'])
    await b.db.query(`VACUUM ANALYZE ${b.db.schema.table(t)}`);
}

/** Rows per second through the relay (claim → re-check → publish → mark), all on BullMQ. */
async function relayOnce(b: BenchDatabase, n: number): Promise<number> {
  const prefix = benchPrefix('relay');
  const broker = openBroker(prefix);
  const engine = await openBenchEngine({ db: b.db, settings: benchSettings(b.url, prefix), broker });
  try {
    await broker.ping();
    await broker.publish([{ name: 'post_sync', payload: { orgId: BENCH_ORG, runId: randomUUID() }, jobId: 'warm-up' }]);
    const start = performance.now();
    const counters = await relayDue(engine.ctx);
    const ms = since(start);
    if (counters.relayed_dispatch !== n) throw new Error(`relay published ${counters.relayed_dispatch} of ${n} rows`);
    const { rows } = await b.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM syncrelay.sync_dispatch_outbox WHERE status = 'dispatched'",
    );
    if (rows[0]!.n !== n) throw new Error(`relay marked ${rows[0]!.n} of ${n} rows`);
    return (n / ms) * 1000;
  } finally {
    await engine.close();
    await broker.close();
    await deletePrefix(prefix);
  }
}

/** Jobs per second through one `addBulk` call of N jobs shaped like the relay's. */
async function rawOnce(n: number): Promise<number> {
  const prefix = benchPrefix('raw');
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
  const keep = { count: 1000 };
  const queue = new Queue('tasks', {
    connection,
    prefix,
    defaultJobOptions: { attempts: 1, removeOnComplete: keep, removeOnFail: keep },
  });
  try {
    await queue.waitUntilReady();
    await queue.add('post_sync', { orgId: BENCH_ORG, runId: randomUUID() }, { jobId: 'warm-up' });
    const jobs = Array.from({ length: n }, () => {
      const id = randomUUID();
      return {
        name: 'dispatch_sync_run',
        data: { orgId: BENCH_ORG, runId: randomUUID() },
        opts: { jobId: toBullJobId(`dispatch_sync_run.${id}.${randomUUID()}`) },
      };
    });
    const start = performance.now();
    await queue.addBulk(jobs);
    return (n / since(start)) * 1000;
  } finally {
    await queue.close();
    connection.disconnect();
    await deletePrefix(prefix);
  }
}

export const relayScenario: Scenario = {
  name: 'relay_throughput',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const n = opts.quick ? 2000 : 50_000;
    const b = await createBenchDatabase('relay');
    try {
      await load(b, n);
      const relay: number[] = [];
      const raw: number[] = [];
      for (let rep = 0; rep < opts.reps; rep++) {
        raw.push(await rawOnce(n));
        relay.push(await relayOnce(b, n));
        opts.note(`relay rep ${rep + 1}: raw ${round(raw.at(-1)!)} jobs/s, relay ${round(relay.at(-1)!)} rows/s`);
        await reset(b);
      }
      const r = ratio(median(relay), median(raw));
      return [
        {
          scenario: 'relay_throughput',
          rows: n,
          reps: opts.reps,
          relay_rows_per_s: round(median(relay)),
          raw_addbulk_jobs_per_s: round(median(raw)),
          relay_samples: relay.map(round),
          raw_samples: raw.map(round),
          ratio: r,
          target: `>= ${TARGET}`,
          met: r >= TARGET,
        },
      ];
    } finally {
      await b.drop();
    }
  },
};
