/**
 * 3. Latency on an idle system: the commit of a trigger → `dispatch_sync_run` starting, and the
 * commit of a unit's success → `finalize_sync_run` starting. Each sample is a one-unit run (no-op
 * provider) that runs to post_sync before the next trigger. Clock times are taken at the exact
 * points: the trigger call returning (its commit acknowledged), the fault point right after the
 * unit's end transaction commits (`unit.afterComplete.beforeRecheck`), and the broker handing the
 * task to its handler. Worker and reconciler run in this process on BullMQ (real Redis).
 *
 * Baseline, alternating with it: raw BullMQ, `add` returning → the worker's handler starting.
 * The ratio is the larger of p50/10 ms and p99/50 ms (≤ 1 meets the target).
 */
import { randomUUID } from 'node:crypto';
import { Queue, Worker as BullWorker } from 'bullmq';
import { Redis } from 'ioredis';
import { Faults } from '../../src/faults.js';
import { benchSettings, openBenchEngine, openBroker } from '../lib/engine.js';
import { benchPrefix, createBenchDatabase, REDIS_URL } from '../lib/pg.js';
import { BENCH_ORG, createBenchIntegration, NOOP_PROVIDER } from '../lib/providers.js';
import { deletePrefix } from '../lib/redis.js';
import { quantile, round } from '../lib/stats.js';
import { TimedBroker } from '../lib/timedBroker.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

const P50_MS = 10;
const P99_MS = 50;
const DAY_MS = 86_400_000;

/** Waits for `key` to be recorded in `map` (polling the event loop briefly). */
async function waitFor<T>(map: Map<string, T>, key: string, what: string, ms = 30_000): Promise<T> {
  const deadline = performance.now() + ms;
  while (!map.has(key)) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
  return map.get(key)!;
}

class RawBullMq {
  private readonly prefix = benchPrefix('lat-raw');
  private readonly connection = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  private readonly queue = new Queue('tasks', { connection: this.connection, prefix: this.prefix });
  private readonly started = new Map<string, number>();
  private readonly worker = new BullWorker(
    'tasks',
    async (job) => {
      this.started.set(job.id!, performance.now());
    },
    { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix: this.prefix, concurrency: 4 },
  );

  async ready(): Promise<void> {
    await this.queue.waitUntilReady();
    await this.worker.waitUntilReady();
  }

  /** add() returning → handler start, in ms. */
  async sample(): Promise<number> {
    const id = randomUUID();
    await this.queue.add('dispatch_sync_run', { orgId: BENCH_ORG, runId: id }, { jobId: id, removeOnComplete: 100 });
    const added = performance.now();
    return (await waitFor(this.started, id, 'a raw BullMQ job to start')) - added;
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
    this.connection.disconnect();
    await deletePrefix(this.prefix);
  }
}

export const latencyScenario: Scenario = {
  name: 'latency',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const samples = opts.quick ? 30 : 1000;
    const b = await createBenchDatabase('latency');
    const prefix = benchPrefix('lat');
    const dispatchStart = new Map<string, number>();
    const finalizeStart = new Map<string, number>();
    const postSyncStart = new Map<string, number>();
    const unitCommitted = new Map<string, number>();
    const broker = new TimedBroker(openBroker(prefix), (msg, at) => {
      const target = { dispatch_sync_run: dispatchStart, finalize_sync_run: finalizeStart, post_sync: postSyncStart }[
        msg.name as string
      ];
      if (target && !target.has(msg.payload.runId)) target.set(msg.payload.runId, at);
    });
    const faults = new Faults();
    const engine = await openBenchEngine({ db: b.db, settings: benchSettings(b.url, prefix), broker, faults });
    const raw = new RawBullMq();
    const toDispatch: number[] = [];
    const toFinalize: number[] = [];
    const rawSamples: number[] = [];
    try {
      const integrationId = await createBenchIntegration(b.db, NOOP_PROVIDER);
      await raw.ready();
      engine.startWorker({ concurrency: 4 });
      await engine.startReconciler({ id: 'bench-latency' });
      let currentRun = '';
      faults.arm(
        'unit.afterComplete.beforeRecheck',
        () => void unitCommitted.set(currentRun, performance.now()),
        Number.MAX_SAFE_INTEGER,
      );
      const before = new Date(Date.UTC(2020, 0, 1));
      const since = new Date(before.getTime() - DAY_MS);
      for (let i = 0; i < samples + 5; i++) {
        const rawMs = await raw.sample();
        const t = await engine.trigger({
          orgId: BENCH_ORG,
          integrationId,
          mode: 'backfill',
          triggeredBy: 'api',
          since,
          before,
          force: true,
        });
        const committed = performance.now();
        currentRun = t.syncRunId;
        const d = await waitFor(dispatchStart, t.syncRunId, 'dispatch_sync_run to start');
        const f = await waitFor(finalizeStart, t.syncRunId, 'finalize_sync_run to start');
        await waitFor(postSyncStart, t.syncRunId, 'post_sync to start');
        const u = unitCommitted.get(t.syncRunId);
        if (u === undefined) throw new Error('the unit end commit was not observed');
        if (i < 5) continue; // warm-up: connections, prepared statements, JIT
        rawSamples.push(rawMs);
        toDispatch.push(d - committed);
        toFinalize.push(f - u);
        await new Promise((r) => setTimeout(r, 2));
      }
    } finally {
      await engine.close();
      await broker.close();
      await raw.close();
      await deletePrefix(prefix);
      await b.drop();
    }
    const fig = (xs: number[]) => ({
      p50: round(quantile(xs, 0.5)),
      p99: round(quantile(xs, 0.99)),
      max: round(Math.max(...xs)),
    });
    const budget = (xs: number[]) => Math.max(quantile(xs, 0.5) / P50_MS, quantile(xs, 0.99) / P99_MS);
    const result = (scenario: string, xs: number[]): ScenarioResult => {
      const f = fig(xs);
      const r = round(budget(xs));
      return {
        scenario,
        samples: xs.length,
        p50_ms: f.p50,
        p99_ms: f.p99,
        max_ms: f.max,
        baseline: 'BullMQ add → handler start',
        baseline_p50_ms: round(quantile(rawSamples, 0.5)),
        baseline_p99_ms: round(quantile(rawSamples, 0.99)),
        ratio_p50_vs_baseline: round(quantile(xs, 0.5) / quantile(rawSamples, 0.5)),
        ratio: r,
        target: `<= 1 (p50 < ${P50_MS} ms and p99 < ${P99_MS} ms)`,
        met: quantile(xs, 0.5) < P50_MS && quantile(xs, 0.99) < P99_MS,
      };
    };
    return [result('latency_trigger_to_dispatch', toDispatch), result('latency_unit_to_finalize', toFinalize)];
  },
};
