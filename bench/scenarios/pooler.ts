/**
 * 13. Behind PgBouncer: the end-to-end scenario's run — one backfill of N one-day units of the no-op
 * provider, timed from the trigger call to the post_sync handler running — with every pool of every
 * process going through PgBouncer in transaction mode (DATABASE_URL the pooler,
 * SYNCRELAY_DB_POOLER=transaction, so no named prepared statements; DATABASE_DIRECT_URL the server,
 * for the LISTEN connection), beside the same run straight to the server, in the same bench run.
 *
 * Each side has a database, an engine in this process (trigger, reconciler) and a queue prefix of its
 * own; per shape (worker processes × concurrency, pool = min(concurrency, 16)) both sides' workers are
 * started, warmed up once, then `reps` rounds alternate between the sides (which goes first
 * alternating too). Beside each round, the connections the side holds on the server: the peak count
 * of its database's client backends in pg_stat_activity, sampled every 50 ms (through the pooler:
 * PgBouncer's server connections plus each process's direct LISTEN connection).
 *
 * The headline is best vs best: the pooled side's best shape median ÷ the direct side's best.
 * Target: ≥ 0.8. The pooler is SYNCRELAY_BENCH_PGBOUNCER (default postgres://postgres@127.0.0.1:6432,
 * the one `.ci/run` starts, pool_mode=transaction and a wildcard database).
 */
import pg from 'pg';
import { loadSettings } from '../../src/config.js';
import { openDb } from '../../src/db/open.js';
import type { Db } from '../../src/db/types.js';
import { childEnv, openBenchEngine } from '../lib/engine.js';
import { benchPrefix, createBenchDatabase, PG_BASE, pgUrl, REDIS_URL, type BenchDatabase } from '../lib/pg.js';
import { startChildren, stopAll, type ChildProc } from '../lib/procs.js';
import { createBenchIntegration, NOOP_PROVIDER } from '../lib/providers.js';
import { deletePrefix } from '../lib/redis.js';
import { syncrelayOnce } from '../lib/rounds.js';
import { median, ratio, round } from '../lib/stats.js';
import { shapeName, type Shape } from '../lib/sweep.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

const TARGET = 0.8;
const POOL_CAP = 16;
const SAMPLE_MS = 50;
/** The pooler (a URL without a database). */
const PGBOUNCER = process.env.SYNCRELAY_BENCH_PGBOUNCER ?? 'postgres://postgres@127.0.0.1:6432';

type Side = 'direct' | 'pooled';
const SIDES: readonly Side[] = ['direct', 'pooled'];

/** One side: its database, the environment its processes get, its engine and integration. */
interface SideCtx {
  side: Side;
  b: BenchDatabase;
  env: Record<string, string>;
  prefix: string;
  db: Db;
  engine: Awaited<ReturnType<typeof openBenchEngine>>;
  integrationId: string;
}

interface Round {
  rate: number;
  /** Peak client backends of the side's database during the round. */
  server_connections: number;
}

function shapesFor(quick: boolean): Shape[] {
  const shapes = quick
    ? [[1, 32]]
    : [
        [1, 32],
        [1, 64],
        [2, 32],
      ];
  return shapes.map(([processes, concurrency]) => ({
    processes: processes!,
    concurrency: concurrency!,
    pool: Math.min(concurrency!, POOL_CAP),
  }));
}

function pooledUrl(database: string): string {
  return `${PGBOUNCER.replace(/\/+$/, '')}/${database}`;
}

/** Settings of a side (the no-op run must not be capped: N units, N per bucket). */
function sideEnv(side: Side, b: BenchDatabase, n: number): Record<string, string> {
  const common = { SYNC_RUN_MAX_UNITS: String(n), SYNC_UNIT_CONCURRENCY_PER_BUCKET: String(n) };
  if (side === 'direct') return { ...common, DATABASE_URL: b.url };
  return {
    ...common,
    DATABASE_URL: pooledUrl(b.name),
    DATABASE_DIRECT_URL: b.url,
    SYNCRELAY_DB_POOLER: 'transaction',
  };
}

async function pgbouncerReachable(): Promise<void> {
  const client = new pg.Client({ connectionString: pooledUrl('postgres'), connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    throw new Error(`PgBouncer is not reachable at ${PGBOUNCER} (SYNCRELAY_BENCH_PGBOUNCER)`, { cause: err });
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function openSide(side: Side, n: number): Promise<SideCtx> {
  const b = await createBenchDatabase(`pooler_${side}`, 2);
  try {
    const env = sideEnv(side, b, n);
    const prefix = benchPrefix(`pooler_${side}`);
    const settings = loadSettings({ ...env, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: prefix });
    const db = await openDb(settings, { poolSize: POOL_CAP, applicationName: `syncrelay-bench-${side}` });
    const integrationId = await createBenchIntegration(db, NOOP_PROVIDER);
    const engine = await openBenchEngine({ db, settings });
    await engine.startReconciler({ id: `bench-${side}` });
    return { side, b, env, prefix, db, engine, integrationId };
  } catch (err) {
    await b.drop();
    throw err;
  }
}

async function closeSide(s: SideCtx): Promise<void> {
  await s.engine.close();
  await s.db.close();
  await deletePrefix(s.prefix);
  await s.b.drop();
}

/** Samples the database's client backends every SAMPLE_MS until stopped; resolves with the peak. */
function connectionPeak(database: string): { stop: () => Promise<number> } {
  const client = new pg.Client({ connectionString: pgUrl('postgres') });
  let peak = 0;
  let running = true;
  const loop = (async () => {
    await client.connect();
    try {
      while (running) {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
          [database],
        );
        peak = Math.max(peak, rows[0]!.n);
        await new Promise((r) => setTimeout(r, SAMPLE_MS));
      }
    } finally {
      await client.end();
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return peak;
    },
  };
}

async function oneRound(s: SideCtx, workers: ChildProc[], n: number): Promise<Round> {
  const sampler = connectionPeak(s.b.name);
  try {
    const { rate } = await syncrelayOnce(s.engine, workers, s.integrationId, n);
    return { rate, server_connections: await sampler.stop() };
  } catch (err) {
    await sampler.stop().catch(() => undefined);
    throw err;
  }
}

/** Both sides' workers for `shape`, one warm-up each, then `reps` alternating rounds. */
async function runShape(opts: BenchOptions, sides: SideCtx[], shape: Shape, n: number): Promise<Record<Side, Round[]>> {
  const workers = new Map<Side, ChildProc[]>();
  try {
    for (const s of sides) {
      const env = {
        ...childEnv(s.env.DATABASE_URL!, s.prefix, s.env),
        BENCH_CONCURRENCY: String(shape.concurrency),
        BENCH_POOL: String(shape.pool),
      };
      workers.set(s.side, await startChildren('worker', shape.processes, env));
    }
    for (const s of sides) await syncrelayOnce(s.engine, workers.get(s.side)!, s.integrationId, n);
    const out: Record<Side, Round[]> = { direct: [], pooled: [] };
    for (let rep = 0; rep < opts.reps; rep++) {
      const order = rep % 2 === 0 ? sides : [...sides].reverse();
      for (const s of order) out[s.side].push(await oneRound(s, workers.get(s.side)!, n));
      const [d, p] = [out.direct.at(-1)!, out.pooled.at(-1)!];
      opts.note(
        `pooler ${shapeName(shape)} round ${rep + 1}/${opts.reps}: direct ${round(d.rate)} units/s ` +
          `(${d.server_connections} server connections), pooled ${round(p.rate)} units/s ` +
          `(${p.server_connections})`,
      );
    }
    return out;
  } finally {
    await stopAll([...workers.values()].flat());
  }
}

function summary(shape: Shape, rounds: Record<Side, Round[]>) {
  const med = (side: Side) => median(rounds[side].map((r) => r.rate));
  const conns = (side: Side) => Math.max(...rounds[side].map((r) => r.server_connections));
  return {
    shape: shapeName(shape),
    processes: shape.processes,
    concurrency: shape.concurrency,
    pool_per_process: shape.pool,
    direct_units_per_s: round(med('direct')),
    pooled_units_per_s: round(med('pooled')),
    ratio: ratio(med('pooled'), med('direct')),
    direct_server_connections_peak: conns('direct'),
    pooled_server_connections_peak: conns('pooled'),
    direct_samples: rounds.direct.map((r) => round(r.rate)),
    pooled_samples: rounds.pooled.map((r) => round(r.rate)),
  };
}

type ShapeSummary = ReturnType<typeof summary>;

function bestOf(all: ShapeSummary[], side: Side): ShapeSummary {
  const rate = (s: ShapeSummary) => (side === 'direct' ? s.direct_units_per_s : s.pooled_units_per_s);
  return all.reduce((a, b) => (rate(b) > rate(a) ? b : a));
}

export const poolerScenario: Scenario = {
  name: 'pooler',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const n = opts.quick ? 200 : 2000;
    await pgbouncerReachable();
    const sides: SideCtx[] = [];
    try {
      for (const side of SIDES) sides.push(await openSide(side, n));
      const shapes: ShapeSummary[] = [];
      for (const shape of shapesFor(opts.quick)) shapes.push(summary(shape, await runShape(opts, sides, shape, n)));
      const direct = bestOf(shapes, 'direct');
      const pooled = bestOf(shapes, 'pooled');
      const headline = ratio(pooled.pooled_units_per_s, direct.direct_units_per_s);
      return [
        {
          scenario: 'pgbouncer_e2e',
          units: n,
          pooler: `PgBouncer, pool_mode=transaction (${PGBOUNCER.replace(/\/\/[^@]*@/, '//')})`,
          server: PG_BASE.replace(/\/\/[^@]*@/, '//'),
          method:
            'per shape: both sides started, 1 warm-up each, then reps rounds alternating; ' +
            'headline = pooled best-shape median / direct best-shape median',
          direct_best_shape: direct.shape,
          direct_units_per_s: direct.direct_units_per_s,
          pooled_best_shape: pooled.shape,
          pooled_units_per_s: pooled.pooled_units_per_s,
          shapes,
          ratio: headline,
          target: `>= ${TARGET} (pooled / direct, best vs best)`,
          met: headline >= TARGET,
        },
      ];
    } finally {
      for (const s of sides) await closeSide(s);
    }
  },
};
