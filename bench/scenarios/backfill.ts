/**
 * 7. A large backfill: one run of BIG one-day units (the unit cap raised to it) against runs of
 * SMALL units on the same worker processes. Reports the plan time (the trigger call: planning and
 * its one transaction), the bench process's RSS growth while planning, the drain rate (units per
 * second from the trigger's return to post_sync) of both sizes and their ratio, and the workers'
 * peak RSS. Target: the large run drains at ≥ 0.9 × the small runs' median rate.
 *
 * Shape: BENCH_BACKFILL_SHAPE=<processes>x<concurrency> (default 2x16), pool min(concurrency, 16).
 * SYNC_RUN_MAX_UNITS and SYNC_UNIT_CONCURRENCY_PER_BUCKET are set to BIG, as e2e does for its N.
 */
import { benchSettings, childEnv, openBenchEngine } from '../lib/engine.js';
import { benchPrefix, createBenchDatabase } from '../lib/pg.js';
import { startChildren, stopAll } from '../lib/procs.js';
import { createBenchIntegration, NOOP_PROVIDER } from '../lib/providers.js';
import { deletePrefix } from '../lib/redis.js';
import { syncrelayOnce } from '../lib/rounds.js';
import { median, ratio, round } from '../lib/stats.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

const RATE_TARGET = 0.9;
const POOL_CAP = 16;
const SAMPLE_MS = 10;

export function parseShape(text: string | undefined): { processes: number; concurrency: number } {
  const m = /^(\d+)x(\d+)$/.exec(text ?? '2x16');
  const processes = Number(m?.[1]);
  const concurrency = Number(m?.[2]);
  if (!m || processes < 1 || concurrency < 1)
    throw new Error(`BENCH_BACKFILL_SHAPE must look like 2x16 (processes x concurrency), got ${JSON.stringify(text)}`);
  return { processes, concurrency };
}

/** Runs `fn` while sampling this process's RSS; returns its result and the peak growth in bytes. */
async function withRssPeak<T>(fn: () => Promise<T>): Promise<{ value: T; growth: number }> {
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), SAMPLE_MS);
  try {
    const value = await fn();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { value, growth: peak - base };
  } finally {
    clearInterval(timer);
  }
}

export const backfillScenario: Scenario = {
  name: 'backfill',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const big = opts.quick ? 2_000 : 100_000;
    const small = opts.quick ? 200 : 2_000;
    const shape = parseShape(process.env.BENCH_BACKFILL_SHAPE);
    const pool = Math.min(shape.concurrency, POOL_CAP);
    const b = await createBenchDatabase('backfill');
    const prefix = benchPrefix('backfill');
    const env = { SYNC_RUN_MAX_UNITS: String(big), SYNC_UNIT_CONCURRENCY_PER_BUCKET: String(big) };
    const integrationId = await createBenchIntegration(b.db, NOOP_PROVIDER);
    const engine = await openBenchEngine({ db: b.db, settings: benchSettings(b.url, prefix, env) });
    const workers = await startChildren('worker', shape.processes, {
      ...childEnv(b.url, prefix, env),
      BENCH_CONCURRENCY: String(shape.concurrency),
      BENCH_POOL: String(pool),
    }).catch(async (err: unknown) => {
      await engine.close();
      await b.drop();
      throw err;
    });
    try {
      await engine.startReconciler({ id: 'bench' });
      await syncrelayOnce(engine, workers, integrationId, small); // warm-up, discarded
      const smallRates: number[] = [];
      for (let rep = 0; rep < opts.reps; rep++) {
        const one = await syncrelayOnce(engine, workers, integrationId, small);
        smallRates.push((small / one.drainMs) * 1000);
        opts.note(`backfill ${small} units, round ${rep + 1}: ${round(smallRates.at(-1)!)} units/s draining`);
      }
      // Generous: the large run may take minutes on a loaded machine.
      const timeoutMs = Math.max(300_000, big * 20);
      const { value: one, growth } = await withRssPeak(() =>
        syncrelayOnce(engine, workers, integrationId, big, { timeoutMs }),
      );
      const bigRate = (big / one.drainMs) * 1000;
      opts.note(`backfill ${big} units: plan ${round(one.phases.trigger)} ms, ${round(bigRate)} units/s draining`);
      const rss = await Promise.all(workers.map((w) => w.rss()));
      const vsSmall = ratio(bigRate, median(smallRates));
      return [
        {
          scenario: 'backfill_large',
          units: big,
          reference_units: small,
          worker_processes: shape.processes,
          concurrency_per_process: shape.concurrency,
          pool_per_process: pool,
          settings: { SYNC_RUN_MAX_UNITS: big, SYNC_UNIT_CONCURRENCY_PER_BUCKET: big },
          plan_ms: round(one.phases.trigger),
          plan_rss_growth_mb: round(growth / 2 ** 20),
          phases_ms: Object.fromEntries(Object.entries(one.phases).map(([k, v]) => [k, round(v)])),
          drain_units_per_s: round(bigRate),
          reference_drain_units_per_s: round(median(smallRates)),
          reference_samples: smallRates.map(round),
          worker_rss_peak_mb: round(Math.max(...rss.map((r) => r.peak)) / 2 ** 20),
          ratio: vsSmall,
          target: `>= ${RATE_TARGET} (drain rate of ${big} units / of ${small} units)`,
          met: vsSmall >= RATE_TARGET,
        },
      ];
    } finally {
      await engine.close();
      await stopAll(workers);
      await deletePrefix(prefix);
      await b.drop();
    }
  },
};
