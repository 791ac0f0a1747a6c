/**
 * One round of each system in the e2e and backfill scenarios: syncrelay runs a backfill of N
 * one-day units to its post_sync handler; graphile-worker drains N no-op jobs.
 */
import type { BenchDatabase } from './pg.js';
import type { ChildProc } from './procs.js';
import type { openBenchEngine } from './engine.js';
import { BENCH_ORG } from './providers.js';

const DAY_MS = 86_400_000;

/** Where a syncrelay round's time goes, in ms (wall clock; the engine stamps rows with it too). */
export interface Phases {
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
export const PHASES: readonly (keyof Phases)[] = ['trigger', 'to_first_unit', 'units', 'finalize', 'post_sync'];

/**
 * One backfill of `n` one-day units, timed from the trigger call to the post_sync handler running
 * (`rate`); `drainMs` is the part after the trigger returned (planning excluded).
 */
export async function syncrelayOnce(
  engine: Awaited<ReturnType<typeof openBenchEngine>>,
  workers: ChildProc[],
  integrationId: string,
  n: number,
  opts: { timeoutMs?: number } = {},
): Promise<{ rate: number; phases: Phases; drainMs: number }> {
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
    maxWindowDays: Math.max(3660, n),
  });
  runId = t.syncRunId;
  const triggered = Date.now();
  if (t.units !== n) throw new Error(`planned ${t.units} units, expected ${n}`);
  await withTimeout(done, opts.timeoutMs ?? 300_000, 'the run to reach post_sync');
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
  return { rate: (n / (doneAt - start)) * 1000, phases, drainMs: doneWall - triggered };
}

export async function peerOnce(b: BenchDatabase, peers: ChildProc[], n: number): Promise<number> {
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

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
