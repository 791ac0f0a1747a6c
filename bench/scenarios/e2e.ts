/**
 * 2. End-to-end, and 6. worker memory (measured during it).
 *
 * syncrelay: one backfill run of N one-day units with the no-op provider — trigger (plan) →
 * relay → dispatch_sync_run → N × run_sync_unit → finalize_sync_run → post_sync — on worker
 * processes (BullMQ), the reconciler loop in this process. Timed from the trigger call to the
 * post_sync handler running (it prints `done <runId>`). The run must not be capped, so the
 * scenario sets SYNC_RUN_MAX_UNITS and SYNC_UNIT_CONCURRENCY_PER_BUCKET to N.
 *
 * Baseline: graphile-worker (a PostgreSQL job queue, LISTEN/NOTIFY) draining N no-op jobs, timed
 * from the add_jobs call to the last completion. Both systems are swept over the same shapes
 * (processes × concurrency, pool = min(concurrency, cap); see ../lib/sweep.ts), in the same run:
 *
 *   pre-sweep  every shape: both systems' processes started, one warm-up round each (discarded),
 *              then 2 rounds (quick: 1) alternating between the systems, which one goes first
 *              alternating too;
 *   final      each system's top 3 (quick: 1) shapes by pre-sweep median (the union, both systems run in
 *              each): processes restarted, one warm-up round each, then `reps` alternating rounds.
 *
 * The headline ratio is best vs best: syncrelay's best final median ÷ the peer's best final
 * median, each at its own shape. Every shape also gets its equal-shape ratio (final rounds where
 * it had them, else pre-sweep rounds). The database first gets 30,000 historical units and outbox
 * rows (terminal runs) and a VACUUM ANALYZE after the first warm-ups. The durable-commit ceiling
 * (../lib/ceiling.ts) is measured before the sweep, with no worker process connected.
 */
import { runMigrations } from 'graphile-worker';
import { Logger as GraphileLogger } from 'graphile-worker';
import { commitsPerSecond, CEILING_CONNECTIONS } from '../lib/ceiling.js';
import { cpuProbe, perItem, type CpuParts } from '../lib/cpu.js';
import { benchSettings, childEnv, openBenchEngine } from '../lib/engine.js';
import { benchPrefix, createBenchDatabase, type BenchDatabase } from '../lib/pg.js';
import { startChildren, stopAll, type ChildProc } from '../lib/procs.js';
import { createBenchIntegration, NOOP_PROVIDER } from '../lib/providers.js';
import { peerOnce, PHASES, syncrelayOnce, type Phases } from '../lib/rounds.js';
import {
  bestShape,
  finalists,
  medianCpu,
  medianRate,
  poolCapFor,
  shapeName,
  sweepShapes,
  sweepTable,
  FULL_PROCESSES,
  type Round,
  type Shape,
  type ShapeRounds,
} from '../lib/sweep.js';
import { loadHistory } from './history.js';
import { deletePrefix } from '../lib/redis.js';
import { median, ratio, round } from '../lib/stats.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

/** Durable commits on a unit's hot path: the claim CAS and the end transaction. */
const COMMITS_PER_UNIT = 2;
const UNITS_TARGET = 1500;
const PEER_TARGET = 1.0;
const RSS_LIMIT = 200 * 2 ** 20;
/** Historical units (and outbox rows) in the database before the measurements. */
const HISTORY_ROWS = 30_000;
/** The bench process's own pool (createBenchDatabase's default). */
const BENCH_POOL = 16;

interface Plan {
  preRounds: number;
  topK: number;
  finalRounds: number;
}

function planFor(opts: BenchOptions): Plan {
  return opts.quick
    ? { preRounds: 1, topK: 1, finalRounds: opts.reps }
    : { preRounds: 2, topK: 3, finalRounds: opts.reps };
}

function method(p: Plan): string {
  return (
    `pre-sweep: every shape, 1 warm-up + ${p.preRounds} round(s) per system alternating; ` +
    `final: each system's top ${p.topK} shape(s) by pre-sweep median, restarted, 1 warm-up + ` +
    `${p.finalRounds} round(s) per system alternating; headline = best final median vs best final median`
  );
}

interface Ctx {
  opts: BenchOptions;
  b: BenchDatabase;
  n: number;
  env: Record<string, string>;
  prefix: string;
  integrationId: string;
  engine: Awaited<ReturnType<typeof openBenchEngine>>;
  /** VACUUM ANALYZE once, after the first warm-ups. */
  analyzed: boolean;
  /** A worker's RSS before its first round (the first shape's). */
  rssIdle: number;
  phases: Map<string, Phases[]>;
  rss: Map<string, { syncrelay: number; peer: number }>;
}

type Cpu = CpuParts & { total: number };

function cpuRecord(c: Cpu): Record<string, number> {
  return { workers: c.workers, bench: c.bench, postgres: c.postgres, redis: c.redis, total: c.total };
}

/** Both systems' processes for `shape`, started side by side. */
async function startShape(c: Ctx, shape: Shape): Promise<{ workers: ChildProc[]; peers: ChildProc[] }> {
  const procEnv = {
    ...childEnv(c.b.url, c.prefix, c.env),
    BENCH_CONCURRENCY: String(shape.concurrency),
    BENCH_POOL: String(shape.pool),
  };
  const started = await Promise.allSettled([
    startChildren('worker', shape.processes, procEnv),
    startChildren('peer', shape.processes, procEnv),
  ]);
  const workers = started[0].status === 'fulfilled' ? started[0].value : [];
  const peers = started[1].status === 'fulfilled' ? started[1].value : [];
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) {
    await stopAll([...workers, ...peers]);
    throw failed.reason;
  }
  return { workers, peers };
}

/** `rounds` rounds of each system, alternating, which one goes first alternating too. */
async function alternateRounds(c: Ctx, shape: Shape, workers: ChildProc[], peers: ChildProc[], rounds: number) {
  const probe = (ps: ChildProc[]) =>
    cpuProbe(
      c.b.db,
      c.b.name,
      ps.map((p) => p.pid),
    );
  const [sProbe, pProbe] = [await probe(workers), await probe(peers)];
  const out = { syncrelay: [] as Round[], peer: [] as Round[] };
  const phases: Phases[] = [];
  const peerRound = async () => {
    const p0 = await pProbe.snapshot();
    const rate = await peerOnce(c.b, peers, c.n);
    out.peer.push({ rate, cpu: cpuRecord(perItem(p0, await pProbe.snapshot(), c.n)) });
  };
  const syncrelayRound = async () => {
    const s0 = await sProbe.snapshot();
    const one = await syncrelayOnce(c.engine, workers, c.integrationId, c.n);
    out.syncrelay.push({ rate: one.rate, cpu: cpuRecord(perItem(s0, await sProbe.snapshot(), c.n)) });
    phases.push(one.phases);
  };
  for (let rep = 0; rep < rounds; rep++) {
    for (const step of rep % 2 === 0 ? [peerRound, syncrelayRound] : [syncrelayRound, peerRound]) await step();
    const [s, p] = [out.syncrelay.at(-1)!, out.peer.at(-1)!];
    c.opts.note(
      `e2e ${shapeName(shape)} round ${rep + 1}/${rounds}: peer ${round(p.rate)} jobs/s, ` +
        `syncrelay ${round(s.rate)} units/s; CPU ms per unit ${round(s.cpu.total!)}, per job ${round(p.cpu.total!)}`,
    );
  }
  c.phases.set(shapeName(shape), phases);
  return out;
}

async function peakRss(ps: ChildProc[]): Promise<number> {
  return Math.max(...(await Promise.all(ps.map((p) => p.rss()))).map((r) => r.peak));
}

/** Starts both systems' processes for `shape`, warms each up once, runs `rounds` alternating rounds. */
async function runShape(c: Ctx, shape: Shape, rounds: number): Promise<Record<'syncrelay' | 'peer', Round[]>> {
  const { workers, peers } = await startShape(c, shape);
  try {
    if (c.rssIdle === 0) c.rssIdle = Math.max(...(await Promise.all(workers.map((w) => w.rss()))).map((r) => r.now));
    await peerOnce(c.b, peers, c.n);
    await syncrelayOnce(c.engine, workers, c.integrationId, c.n);
    if (!c.analyzed) {
      await c.b.db.query('VACUUM ANALYZE');
      c.analyzed = true;
    }
    const out = await alternateRounds(c, shape, workers, peers, rounds);
    const prev = c.rss.get(shapeName(shape)) ?? { syncrelay: 0, peer: 0 };
    c.rss.set(shapeName(shape), {
      syncrelay: Math.max(prev.syncrelay, await peakRss(workers)),
      peer: Math.max(prev.peer, await peakRss(peers)),
    });
    return out;
  } finally {
    await stopAll([...workers, ...peers]);
  }
}

/** The pool cap from the server's max_connections and the connections in use now. */
async function poolCap(b: BenchDatabase): Promise<{ cap: number; maxConnections: number; inUse: number }> {
  const { rows } = await b.db.query<{ max: string; reserved: string; used: string }>(
    `SELECT current_setting('max_connections') AS max,
            current_setting('superuser_reserved_connections') AS reserved,
            (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend') AS used`,
  );
  const maxConnections = Number(rows[0]!.max);
  const inUse = Number(rows[0]!.used);
  const cap = poolCapFor({
    maxConnections,
    reserved: Number(rows[0]!.reserved),
    inUse,
    benchPool: BENCH_POOL,
    maxProcesses: Math.max(...FULL_PROCESSES),
  });
  return { cap, maxConnections, inUse };
}

interface Sweep {
  shapes: ShapeRounds[];
  ceiling: number[];
  plan: Plan;
  pool: { cap: number; maxConnections: number; inUse: number };
  phases: Map<string, Phases[]>;
  rss: Map<string, { syncrelay: number; peer: number }>;
  rssIdle: number;
}

async function measure(opts: BenchOptions, b: BenchDatabase, n: number): Promise<Sweep> {
  const prefix = benchPrefix('e2e');
  const env = { SYNC_RUN_MAX_UNITS: String(n), SYNC_UNIT_CONCURRENCY_PER_BUCKET: String(n) };
  const integrationId = await createBenchIntegration(b.db, NOOP_PROVIDER);
  // A database with some history, as a deployed one has (the planner then sees selective run ids).
  await loadHistory(b, integrationId, opts.quick ? 3000 : HISTORY_ROWS);
  await runMigrations({ connectionString: b.url, logger: new GraphileLogger(() => () => undefined) });
  const plan = planFor(opts);
  const pool = await poolCap(b);
  const ceiling: number[] = [];
  for (let rep = 0; rep < opts.reps; rep++) ceiling.push(await commitsPerSecond(b.url, opts.quick ? 300 : 2000));
  const engine = await openBenchEngine({ db: b.db, settings: benchSettings(b.url, prefix, env) });
  const c: Ctx = {
    opts,
    b,
    n,
    env,
    prefix,
    integrationId,
    engine,
    analyzed: false,
    rssIdle: 0,
    phases: new Map(),
    rss: new Map(),
  };
  try {
    await engine.startReconciler({ id: 'bench' });
    const shapes: ShapeRounds[] = [];
    for (const shape of sweepShapes(opts.quick, pool.cap, process.env.BENCH_SHAPES)) {
      const pre = await runShape(c, shape, plan.preRounds);
      shapes.push({ shape, pre, final: { syncrelay: [], peer: [] } });
    }
    for (const r of finalists(shapes, plan.topK)) {
      opts.note(`e2e final: ${shapeName(r.shape)}`);
      r.final = await runShape(c, r.shape, plan.finalRounds);
    }
    return { shapes, ceiling, plan, pool, phases: c.phases, rss: c.rss, rssIdle: c.rssIdle };
  } finally {
    await engine.close();
    await deletePrefix(prefix);
  }
}

function shapeFigures(r: ShapeRounds) {
  return { processes: r.shape.processes, concurrency: r.shape.concurrency, pool: r.shape.pool };
}

function results(opts: BenchOptions, n: number, m: Sweep): ScenarioResult[] {
  const sBest = bestShape(m.shapes, 'syncrelay');
  const pBest = bestShape(m.shapes, 'peer');
  const units = medianRate(sBest.final.syncrelay);
  const peer = medianRate(pBest.final.peer);
  const vsPeer = ratio(units, peer);
  const ceilingUnits = median(m.ceiling) / COMMITS_PER_UNIT;
  const table = sweepTable(m.shapes);
  const phases = m.phases.get(shapeName(sBest.shape)) ?? [];
  const rssWorst = [...m.rss.entries()].reduce((a, b) => (b[1].syncrelay > a[1].syncrelay ? b : a));
  const peerRssWorst = Math.max(...[...m.rss.values()].map((v) => v.peer));
  return [
    {
      scenario: 'e2e_units',
      units: n,
      method: method(m.plan),
      ...(process.env.BENCH_SHAPES
        ? { partial_sweep: `BENCH_SHAPES=${process.env.BENCH_SHAPES}: not best-vs-best` }
        : {}),
      pool_rule:
        `pool per process = min(concurrency, ${m.pool.cap}); cap from max_connections ${m.pool.maxConnections} ` +
        `with ${m.pool.inUse} connections in use at the start`,
      settings: { SYNC_RUN_MAX_UNITS: n, SYNC_UNIT_CONCURRENCY_PER_BUCKET: n },
      history_rows: opts.quick ? 3000 : HISTORY_ROWS,
      peer: 'graphile-worker 0.16.6',
      syncrelay_best_shape: shapeName(sBest.shape),
      syncrelay_best: shapeFigures(sBest),
      syncrelay_units_per_s: round(units),
      peer_best_shape: shapeName(pBest.shape),
      peer_best: shapeFigures(pBest),
      peer_jobs_per_s: round(peer),
      ratio_best_vs_best: vsPeer,
      equal_shape_ratios: Object.fromEntries(table.map((t) => [t.shape, t.ratio])),
      sweep: table,
      ceiling_commits_per_s: round(median(m.ceiling)),
      ceiling_connections: CEILING_CONNECTIONS,
      commits_per_unit: COMMITS_PER_UNIT,
      ceiling_units_per_s: round(ceilingUnits),
      ratio_vs_ceiling: ratio(units, ceilingUnits),
      syncrelay_phases_ms: Object.fromEntries(PHASES.map((k) => [k, round(median(phases.map((p) => p[k])))])),
      cpu_ms_per_unit: medianCpu(sBest.final.syncrelay),
      peer_cpu_ms_per_job: medianCpu(pBest.final.peer),
      syncrelay_samples: sBest.final.syncrelay.map((r) => round(r.rate)),
      peer_samples: pBest.final.peer.map((r) => round(r.rate)),
      ratio: vsPeer,
      chart_note: `best vs best: syncrelay ${shapeName(sBest.shape)}, peer ${shapeName(pBest.shape)}`,
      target: `>= ${PEER_TARGET} (best vs best) and >= ${UNITS_TARGET} units/s`,
      met: vsPeer >= PEER_TARGET && units >= UNITS_TARGET,
      met_units_per_s: units >= UNITS_TARGET,
      met_vs_peer: vsPeer >= PEER_TARGET,
    },
    {
      scenario: 'worker_memory',
      worker_rss_peak_mb: round(rssWorst[1].syncrelay / 2 ** 20),
      worker_rss_peak_shape: rssWorst[0],
      worker_rss_idle_mb: round(m.rssIdle / 2 ** 20),
      peer_rss_peak_mb: round(peerRssWorst / 2 ** 20),
      ratio_vs_peer: ratio(rssWorst[1].syncrelay, peerRssWorst),
      ratio: ratio(rssWorst[1].syncrelay, RSS_LIMIT),
      target: '<= 1 (peak RSS over the sweep / 200 MB)',
      met: rssWorst[1].syncrelay < RSS_LIMIT,
    },
  ];
}

export const e2eScenario: Scenario = {
  name: 'e2e',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const n = opts.quick ? 200 : 2000;
    const b = await createBenchDatabase('e2e', BENCH_POOL);
    try {
      return results(opts, n, await measure(opts, b, n));
    } finally {
      await b.drop();
    }
  },
};
