/**
 * 4. Recovery: a worker process is SIGKILLed while its unit runs (the hanging provider holds it);
 * measured from the kill to the unit leaving `running` (retried or failed, here `worker_lost`:
 * the bench provider is not an eligible Linear backfill). The reconciler loop runs in this process
 * with a short lease and interval so repetitions stay short; the bound they imply is the baseline:
 * lease + reconcile interval + 1 s. Ratio = median ÷ bound (≤ 1 meets the target).
 */
import { benchSettings, childEnv, openBenchEngine } from '../lib/engine.js';
import { benchPrefix, createBenchDatabase } from '../lib/pg.js';
import { ChildProc, startChildren } from '../lib/procs.js';
import { BENCH_ORG, createBenchIntegration, HANG_PROVIDER } from '../lib/providers.js';
import { deletePrefix } from '../lib/redis.js';
import { median, round } from '../lib/stats.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

const LEASE_S = 2;
const INTERVAL_S = 1;
const DAY_MS = 86_400_000;

export const recoveryScenario: Scenario = {
  name: 'recovery',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const reps = opts.quick ? 1 : Math.max(3, opts.reps);
    const b = await createBenchDatabase('recovery');
    const prefix = benchPrefix('rec');
    const env = {
      SYNC_UNIT_RUNNING_LEASE_SECONDS: String(LEASE_S),
      SYNC_RECONCILE_INTERVAL_SECONDS: String(INTERVAL_S),
    };
    const engine = await openBenchEngine({ db: b.db, settings: benchSettings(b.url, prefix, env) });
    const times: number[] = [];
    let worker: ChildProc | null = null;
    try {
      const integrationId = await createBenchIntegration(b.db, HANG_PROVIDER);
      await engine.startReconciler({ id: 'bench-recovery' });
      for (let rep = 0; rep < reps; rep++) {
        const [spawned] = await startChildren('worker', 1, {
          ...childEnv(b.url, prefix, env),
          BENCH_CONCURRENCY: '2',
          BENCH_POOL: '2',
        });
        worker = spawned!;
        const started = worker.next((w) => w[0] === 'unit', 60_000);
        const before = new Date(Date.UTC(2020, 0, 1 + rep));
        await engine.trigger({
          orgId: BENCH_ORG,
          integrationId,
          mode: 'backfill',
          triggeredBy: 'api',
          since: new Date(before.getTime() - DAY_MS),
          before,
          force: true,
        });
        const [, unitId] = await started;
        // Let the unit run for a moment (a heartbeat or two), then kill its process mid-unit.
        await new Promise((r) => setTimeout(r, 300 + rep * 200));
        worker.kill('SIGKILL');
        const killedAt = performance.now();
        await worker.exited;
        for (;;) {
          const { rows } = await b.db.query<{ status: string }>(
            'SELECT status FROM syncrelay.sync_run_units WHERE id = $1',
            [unitId],
          );
          if (rows[0]?.status !== 'running') break;
          if (performance.now() - killedAt > 60_000) throw new Error('the killed unit was never recovered');
          await new Promise((r) => setTimeout(r, 5));
        }
        times.push(performance.now() - killedAt);
        opts.note(`recovery rep ${rep + 1}: ${round(times.at(-1)!)} ms`);
      }
    } finally {
      worker?.kill('SIGKILL');
      await engine.close();
      await deletePrefix(prefix);
      await b.drop();
    }
    const boundMs = (LEASE_S + INTERVAL_S + 1) * 1000;
    const r = round(median(times) / boundMs);
    return [
      {
        scenario: 'recovery',
        reps,
        lease_s: LEASE_S,
        reconcile_interval_s: INTERVAL_S,
        median_ms: round(median(times)),
        max_ms: round(Math.max(...times)),
        samples_ms: times.map(round),
        bound_ms: boundMs,
        ratio: r,
        target: '<= 1 (time ÷ (lease + reconcile interval + 1 s))',
        met: Math.max(...times) <= boundMs,
      },
    ];
  },
};
