/**
 * 2. End-to-end, and 6. worker memory (measured during it).
 *
 * syncrelay: one backfill run of N one-day units with the no-op provider — trigger (plan) →
 * relay → dispatch_sync_run → N × run_sync_unit → finalize_sync_run → post_sync — on two worker
 * processes (BullMQ), the reconciler loop in this process. Timed from the trigger call to the
 * post_sync handler running (it prints `done <runId>`). The run must not be capped, so the
 * scenario sets SYNC_RUN_MAX_UNITS and SYNC_UNIT_CONCURRENCY_PER_BUCKET to N.
 *
 * The database first gets 30,000 historical units and outbox rows (terminal runs), and both
 * systems get one warm-up round before VACUUM ANALYZE; then the measured rounds alternate.
 *
 * Baselines in the same run, alternating with it:
 *   (a) the durable-commit ceiling (see ../lib/ceiling.ts) ÷ the commits a unit needs (2: the
 *       claim CAS and the end transaction);
 *   (b) graphile-worker (a PostgreSQL job queue, LISTEN/NOTIFY, one job per fetch) draining N
 *       no-op jobs on two worker processes with the same concurrency and pool size, timed from
 *       the add_jobs call to the last completion.
 */
import { runMigrations } from 'graphile-worker';
import { Logger as GraphileLogger } from 'graphile-worker';
import { commitsPerSecond, CEILING_CONNECTIONS } from '../lib/ceiling.js';
import { cpuProbe, perItem, type CpuParts } from '../lib/cpu.js';
import { benchSettings, childEnv, openBenchEngine } from '../lib/engine.js';
import { benchPrefix, createBenchDatabase, type BenchDatabase } from '../lib/pg.js';
import { startChildren, stopAll, type ChildProc } from '../lib/procs.js';
import { BENCH_ORG, createBenchIntegration, NOOP_PROVIDER } from '../lib/providers.js';
import { loadHistory } from './history.js';
import { deletePrefix } from '../lib/redis.js';
import { median, ratio, round } from '../lib/stats.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

const PROCESSES = 2;
/** Jobs at once and pool connections per worker process (both systems). */
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const POOL = Number(process.env.BENCH_POOL ?? 8);
/** Durable commits on a unit's hot path: the claim CAS and the end transaction. */
const COMMITS_PER_UNIT = 2;
const UNITS_TARGET = 1000;
const PEER_TARGET = 1.0;
const RSS_LIMIT = 200 * 2 ** 20;
const DAY_MS = 86_400_000;
/** Historical units (and outbox rows) in the database before the measurements. */
const HISTORY_ROWS = 30_000;

interface Measured {
  syncrelay: number[];
  peer: number[];
  ceiling: number[];
  rssPeak: number;
  rssIdle: number;
  peerRssPeak: number;
  /** CPU ms per unit (syncrelay) and per job (peer), one entry per measured round. */
  cpu: (CpuParts & { total: number })[];
  peerCpu: (CpuParts & { total: number })[];
  phases: Phases[];
}

/** Where a syncrelay round's time goes, in ms (wall clock; the engine stamps rows with it too). */
interface Phases {
  /** the trigger call: planning the units, the commit */
  trigger: number;
  /** trigger returned → the first unit starts: relay, dispatch_sync_run, first publish, first claim */
  to_first_unit: number;
  /** first unit started → last unit ended */
  units: number;
  /** last unit ended → the run's terminal CAS (its finalize) */
  finalize: number;
  /** the terminal CAS → the post_sync handler running */
  post_sync: number;
}
const PHASES: readonly (keyof Phases)[] = ['trigger', 'to_first_unit', 'units', 'finalize', 'post_sync'];

async function syncrelayOnce(
  engine: Awaited<ReturnType<typeof openBenchEngine>>,
  workers: ChildProc[],
  integrationId: string,
  n: number,
): Promise<{ rate: number; phases: Phases }> {
  const before = new Date(Date.UTC(2020, 0, 1));
  const since = new Date(before.getTime() - n * DAY_MS);
  let runId = '';
  let doneAt = 0;
  const done = new Promise<void>((resolve) => {
    const offs = workers.map((w) =>
      w.on((words, at) => {
        if (words[0] === 'done' && words[1] === runId) {
          doneAt = at;
          offs.forEach((off) => off());
          resolve();
        }
      }),
    );
  });
  const start = performance.now();
  const wallStart = Date.now();
  const t = await engine.trigger({
    orgId: BENCH_ORG,
    integrationId,
    mode: 'backfill',
    triggeredBy: 'api',
    since,
    before,
    force: true,
  });
  runId = t.syncRunId;
  const triggered = Date.now();
  if (t.units !== n) throw new Error(`planned ${t.units} units, expected ${n}`);
  await withTimeout(done, 300_000, 'the run to reach post_sync');
  const { rows } = await engine.db.query<{ status: string; completed_units: number }>(
    'SELECT status, completed_units FROM syncrelay.sync_runs WHERE id = $1',
    [runId],
  );
  if (rows[0]?.status !== 'success' || rows[0].completed_units !== n)
    throw new Error(`run ended ${JSON.stringify(rows[0])}`);
  const doneWall = wallStart + (doneAt - start);
  const { rows: at } = await engine.db.query<{ first: number; last: number; completed: number }>(
    `SELECT extract(epoch FROM min(u.started_at)) * 1000 AS first, extract(epoch FROM max(u.updated_at)) * 1000 AS last,
            extract(epoch FROM r.completed_at) * 1000 AS completed
       FROM syncrelay.sync_runs r JOIN syncrelay.sync_run_units u ON u.sync_run_id = r.id
      WHERE r.id = $1 GROUP BY r.id`,
    [runId],
  );
  const { first, last, completed } = at[0]!;
  const phases = {
    trigger: triggered - wallStart,
    to_first_unit: first - triggered,
    units: last - first,
    finalize: completed - last,
    post_sync: doneWall - completed,
  };
  return { rate: (n / (doneAt - start)) * 1000, phases };
}

async function peerOnce(b: BenchDatabase, peers: ChildProc[], n: number): Promise<number> {
  let completed = 0;
  let lastAt = 0;
  const done = new Promise<void>((resolve) => {
    const offs = peers.map((p) =>
      p.on((words, at) => {
        if (words[0] !== 'c') return;
        completed += Number(words[1]);
        lastAt = at;
        if (completed >= n) {
          offs.forEach((off) => off());
          resolve();
        }
      }),
    );
  });
  const start = performance.now();
  await b.db.query(
    `SELECT graphile_worker.add_jobs(ARRAY(
       SELECT ROW('noop', json_build_object('i', i), NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
         FROM generate_series(1, $1) i))`,
    [n],
  );
  await withTimeout(done, 300_000, 'the peer to drain its jobs');
  if (completed !== n) throw new Error(`peer completed ${completed} of ${n} jobs`);
  return (n / (lastAt - start)) * 1000;
}

async function measure(opts: BenchOptions, b: BenchDatabase, n: number): Promise<Measured> {
  const prefix = benchPrefix('e2e');
  const env = { SYNC_RUN_MAX_UNITS: String(n), SYNC_UNIT_CONCURRENCY_PER_BUCKET: String(n) };
  const integrationId = await createBenchIntegration(b.db, NOOP_PROVIDER);
  // A database with some history, as a deployed one has (the planner then sees selective run ids).
  await loadHistory(b, integrationId, opts.quick ? 3000 : HISTORY_ROWS);
  await runMigrations({ connectionString: b.url, logger: new GraphileLogger(() => () => undefined) });
  const procEnv = { ...childEnv(b.url, prefix, env), BENCH_CONCURRENCY: String(CONCURRENCY), BENCH_POOL: String(POOL) };
  const workers = await startChildren('worker', PROCESSES, procEnv);
  const peers = await startChildren('peer', PROCESSES, procEnv).catch(async (err) => {
    await stopAll(workers);
    throw err;
  });
  const engine = await openBenchEngine({ db: b.db, settings: benchSettings(b.url, prefix, env) });
  const m: Measured = {
    syncrelay: [],
    peer: [],
    ceiling: [],
    rssPeak: 0,
    rssIdle: 0,
    peerRssPeak: 0,
    cpu: [],
    peerCpu: [],
    phases: [],
  };
  try {
    await engine.startReconciler({ id: 'bench' });
    m.rssIdle = Math.max(...(await Promise.all(workers.map((w) => w.rss()))).map((r) => r.now));
    // Warm-up (connections, prepared statements, JIT) for both, then fresh planner statistics.
    await peerOnce(b, peers, n);
    await syncrelayOnce(engine, workers, integrationId, n);
    await b.db.query('VACUUM ANALYZE');
    const ceilingMs = opts.quick ? 300 : 2000;
    const syncrelayCpu = await cpuProbe(
      b.db,
      b.name,
      workers.map((w) => w.pid),
    );
    const peerCpu = await cpuProbe(
      b.db,
      b.name,
      peers.map((p) => p.pid),
    );
    for (let rep = 0; rep < opts.reps; rep++) {
      m.ceiling.push(await commitsPerSecond(b.url, ceilingMs));
      const p0 = await peerCpu.snapshot();
      m.peer.push(await peerOnce(b, peers, n));
      m.peerCpu.push(perItem(p0, await peerCpu.snapshot(), n));
      const s0 = await syncrelayCpu.snapshot();
      const one = await syncrelayOnce(engine, workers, integrationId, n);
      m.syncrelay.push(one.rate);
      m.phases.push(one.phases);
      m.cpu.push(perItem(s0, await syncrelayCpu.snapshot(), n));
      opts.note(
        `e2e rep ${rep + 1}: ceiling ${round(m.ceiling.at(-1)!)} commits/s, peer ${round(m.peer.at(-1)!)} jobs/s, ` +
          `syncrelay ${round(m.syncrelay.at(-1)!)} units/s; ` +
          `CPU ms per job/unit: peer ${fmtCpu(m.peerCpu.at(-1)!)}, syncrelay ${fmtCpu(m.cpu.at(-1)!)}; ` +
          `phases ms ${PHASES.map((k) => `${k} ${round(one.phases[k])}`).join(', ')}`,
      );
    }
    m.rssPeak = Math.max(...(await Promise.all(workers.map((w) => w.rss()))).map((r) => r.peak));
    m.peerRssPeak = Math.max(...(await Promise.all(peers.map((p) => p.rss()))).map((r) => r.peak));
    return m;
  } finally {
    await engine.close();
    await stopAll([...workers, ...peers]);
    await deletePrefix(prefix);
  }
}

export const e2eScenario: Scenario = {
  name: 'e2e',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const n = opts.quick ? 200 : 2000;
    const b = await createBenchDatabase('e2e');
    let m: Measured;
    try {
      m = await measure(opts, b, n);
    } finally {
      await b.drop();
    }
    const units = median(m.syncrelay);
    const ceilingUnits = median(m.ceiling) / COMMITS_PER_UNIT;
    const peer = median(m.peer);
    const vsPeer = ratio(units, peer);
    return [
      {
        scenario: 'e2e_units',
        units: n,
        reps: opts.reps,
        worker_processes: PROCESSES,
        concurrency_per_process: CONCURRENCY,
        pool_per_process: POOL,
        settings: { SYNC_RUN_MAX_UNITS: n, SYNC_UNIT_CONCURRENCY_PER_BUCKET: n },
        history_rows: opts.quick ? 3000 : HISTORY_ROWS,
        syncrelay_units_per_s: round(units),
        peer: 'graphile-worker 0.16.6',
        peer_jobs_per_s: round(peer),
        ceiling_commits_per_s: round(median(m.ceiling)),
        ceiling_connections: CEILING_CONNECTIONS,
        commits_per_unit: COMMITS_PER_UNIT,
        ceiling_units_per_s: round(ceilingUnits),
        ratio_vs_ceiling: ratio(units, ceilingUnits),
        syncrelay_phases_ms: Object.fromEntries(PHASES.map((k) => [k, round(median(m.phases.map((p) => p[k])))])),
        cpu_ms_per_unit: medianParts(m.cpu),
        peer_cpu_ms_per_job: medianParts(m.peerCpu),
        syncrelay_samples: m.syncrelay.map(round),
        peer_samples: m.peer.map(round),
        ratio: vsPeer,
        target: `>= ${PEER_TARGET} (vs peer) and >= ${UNITS_TARGET} units/s`,
        met: vsPeer >= PEER_TARGET && units >= UNITS_TARGET,
        met_units_per_s: units >= UNITS_TARGET,
        met_vs_peer: vsPeer >= PEER_TARGET,
      },
      {
        scenario: 'worker_memory',
        worker_rss_peak_mb: round(m.rssPeak / 2 ** 20),
        worker_rss_idle_mb: round(m.rssIdle / 2 ** 20),
        peer_rss_peak_mb: round(m.peerRssPeak / 2 ** 20),
        ratio_vs_peer: ratio(m.rssPeak, m.peerRssPeak),
        ratio: ratio(m.rssPeak, RSS_LIMIT),
        target: '<= 1 (peak RSS / 200 MB)',
        met: m.rssPeak < RSS_LIMIT,
      },
    ];
  },
};

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Median of each part over the rounds (CPU ms per unit or job; "bench" holds syncrelay's reconciler). */
function medianParts(rounds: (CpuParts & { total: number })[]): Record<string, number> {
  const keys = ['workers', 'bench', 'postgres', 'redis', 'total'] as const;
  return Object.fromEntries(keys.map((k) => [k, round(median(rounds.map((r) => r[k])))]));
}

function fmtCpu(c: CpuParts & { total: number }): string {
  return (
    `${round(c.total)} (workers ${round(c.workers)}, bench ${round(c.bench)}, ` +
    `pg ${round(c.postgres)}, redis ${round(c.redis)})`
  );
}
