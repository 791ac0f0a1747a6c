/**
 * The e2e scenario's shape sweep: worker processes × concurrency per process, the pool each
 * process gets, and how the measured rounds become medians, equal-shape ratios and the best shape
 * of each system. Pure functions; the rounds themselves run in ../scenarios/e2e.ts.
 */
import { median, ratio, round } from './stats.js';

export interface Shape {
  processes: number;
  concurrency: number;
  /** Pool connections per process: min(concurrency, the pool cap). */
  pool: number;
}

export const SYSTEMS = ['syncrelay', 'peer'] as const;
export type System = (typeof SYSTEMS)[number];

/** One round's figures: units (or jobs) per second and CPU ms per unit by part. */
export interface Round {
  rate: number;
  cpu: Record<string, number>;
}

/** Every round of one shape, by system and stage. */
export interface ShapeRounds {
  shape: Shape;
  pre: Record<System, Round[]>;
  final: Record<System, Round[]>;
}

export const FULL_PROCESSES = [1, 2];
export const FULL_CONCURRENCY = [16, 32, 64, 128];
export const QUICK_CONCURRENCY = [16, 64];
/** Pool connections per process at most; lowered when max_connections cannot hold it. */
export const POOL_CAP = 16;
/** Connections a process may hold beyond its pool (graphile-worker's LISTEN client, the engine's). */
const EXTRA_PER_PROCESS = 2;

export function shapeName(s: Shape): string {
  return `${s.processes}x${s.concurrency}/pool${s.pool}`;
}

/**
 * The shapes to sweep. `only` (BENCH_SHAPES, e.g. "1x128,2x16") narrows a development run to some of
 * them; the report then says the sweep was partial and its headline is not best-vs-best.
 */
export function sweepShapes(quick: boolean, poolCap: number, only?: string): Shape[] {
  const concurrency = quick ? QUICK_CONCURRENCY : FULL_CONCURRENCY;
  const all = FULL_PROCESSES.flatMap((processes) =>
    concurrency.map((c) => ({ processes, concurrency: c, pool: Math.min(c, poolCap) })),
  );
  if (only === undefined || only.trim() === '') return all;
  const wanted = only.split(',').map((w) => w.trim());
  const picked = FULL_PROCESSES.flatMap((processes) =>
    FULL_CONCURRENCY.map((c) => ({ processes, concurrency: c, pool: Math.min(c, poolCap) })),
  ).filter((s) => wanted.includes(`${s.processes}x${s.concurrency}`));
  if (picked.length !== wanted.length) {
    throw new Error(`BENCH_SHAPES ${JSON.stringify(only)}: each shape is <processes>x<concurrency> of the sweep`);
  }
  return picked;
}

/**
 * The pool cap that lets both systems' processes of the widest shape hold their pools at once
 * next to the bench's own pool: (max_connections − reserved − in use − bench pool) ÷ (2 systems ×
 * processes) − the extra connections a process keeps, at most POOL_CAP. Throws below 4.
 */
export function poolCapFor(budget: {
  maxConnections: number;
  reserved: number;
  inUse: number;
  benchPool: number;
  maxProcesses: number;
}): number {
  const free = budget.maxConnections - budget.reserved - budget.inUse - budget.benchPool;
  const cap = Math.min(POOL_CAP, Math.floor(free / (SYSTEMS.length * budget.maxProcesses)) - EXTRA_PER_PROCESS);
  if (cap < 4)
    throw new Error(
      `max_connections ${budget.maxConnections} leaves a pool of ${cap} per process (${budget.inUse} in use); ` +
        'raise max_connections or stop other clients',
    );
  return cap;
}

/** The rounds that count for a shape: the final stage's when it had one, else the pre-sweep's. */
function counted(r: ShapeRounds, system: System): Round[] {
  return r.final[system].length > 0 ? r.final[system] : r.pre[system];
}

export function medianRate(rounds: readonly Round[]): number {
  return median(rounds.map((r) => r.rate));
}

/** The `k` shapes with the highest pre-sweep median for `system`, best first. */
export function topShapes(all: readonly ShapeRounds[], system: System, k: number): Shape[] {
  return [...all]
    .sort((a, b) => medianRate(b.pre[system]) - medianRate(a.pre[system]))
    .slice(0, k)
    .map((r) => r.shape);
}

/** The finalists of both systems, each shape once, in sweep order. */
export function finalists(all: readonly ShapeRounds[], k: number): ShapeRounds[] {
  const names = new Set(SYSTEMS.flatMap((s) => topShapes(all, s, k).map(shapeName)));
  return all.filter((r) => names.has(shapeName(r.shape)));
}

/** A system's best shape among those with final rounds (its median there). */
export function bestShape(all: readonly ShapeRounds[], system: System): ShapeRounds {
  const measured = all.filter((r) => r.final[system].length > 0);
  if (measured.length === 0) throw new Error(`no final rounds for ${system}`);
  return measured.reduce((best, r) => (medianRate(r.final[system]) > medianRate(best.final[system]) ? r : best));
}

/** Median of each CPU part over rounds. */
export function medianCpu(rounds: readonly Round[]): Record<string, number> {
  const keys = Object.keys(rounds[0]?.cpu ?? {});
  return Object.fromEntries(keys.map((k) => [k, round(median(rounds.map((r) => r.cpu[k]!)))]));
}

/** The sweep table of the results: one row per shape with both medians and the equal-shape ratio. */
export function sweepTable(all: readonly ShapeRounds[]) {
  return all.map((r) => {
    const s = counted(r, 'syncrelay');
    const p = counted(r, 'peer');
    return {
      shape: shapeName(r.shape),
      processes: r.shape.processes,
      concurrency: r.shape.concurrency,
      pool: r.shape.pool,
      stage: r.final.syncrelay.length > 0 ? 'final' : 'pre-sweep',
      rounds: Math.min(s.length, p.length),
      syncrelay_units_per_s: round(medianRate(s)),
      peer_jobs_per_s: round(medianRate(p)),
      ratio: ratio(medianRate(s), medianRate(p)),
      syncrelay_samples: s.map((x) => round(x.rate)),
      peer_samples: p.map((x) => round(x.rate)),
    };
  });
}
