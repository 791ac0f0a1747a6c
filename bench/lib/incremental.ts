/**
 * An incremental run in a provider benchmark, after its backfill: the first one reads its initial
 * depth (a backfill writes no watermark); the next one, over data nothing changed since, reads only
 * what its window's overlap with the one before re-reads — the overlap's cost, reported as
 * `incremental_unchanged`.
 */
import type { Db } from '../../src/db/types.js';
import type { Engine } from '../../src/engine.js';
import { round } from './stats.js';
import { runTerminal } from './terminal.js';

export interface IncrementalTarget {
  engine: Engine;
  db: Db;
  orgId: string;
  integrationId: string;
  /** The emulator's answered (2xx) requests so far. */
  answered: () => number;
  note: (line: string) => void;
}

export interface IncrementalPhase {
  status: string;
  requests: number;
  units: number;
  /** Items the run's units read (their results' `items`). */
  items: number;
  wallMs: number;
}

/** A run of `mode` over every dataset of the integration, to its end: status, requests (by `count`), wall time. */
export async function timedRun(
  t: Omit<IncrementalTarget, 'answered'> & { datasets?: readonly string[] },
  mode: 'incremental' | 'verify',
  label: string,
  count: () => number,
) {
  const before = count();
  const started = performance.now();
  const datasets = t.datasets ? { datasets: t.datasets } : {};
  const run = await t.engine.trigger({
    orgId: t.orgId,
    integrationId: t.integrationId,
    mode,
    triggeredBy: 'api',
    ...datasets,
  });
  const status = await runTerminal(t.db, run.syncRunId, {
    label,
    timeoutMs: 1_800_000,
    noteEveryMs: 10_000,
    note: t.note,
  });
  return { run, status, requests: count() - before, wallMs: performance.now() - started };
}

/** One incremental run of every dataset of the integration, to its end. */
export async function incrementalRun(t: IncrementalTarget, label: string): Promise<IncrementalPhase> {
  const { run, status, requests, wallMs } = await timedRun(t, 'incremental', label, t.answered);
  const { rows } = await t.db.query<{ items: number }>(
    `SELECT coalesce(sum((result ->> 'items')::int), 0)::int AS items
       FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1`,
    [run.syncRunId],
  );
  return { status, requests, units: run.units, items: rows[0]!.items, wallMs };
}

/** The first incremental (its initial depth), then the one over unchanged data, as reported. */
export async function overlapCost(t: IncrementalTarget, label: string) {
  const first = await incrementalRun(t, `${label}: first incremental (its initial depth)`);
  const unchanged = await incrementalRun(t, `${label}: incremental over unchanged data`);
  return {
    first_incremental: { status: first.status, requests: first.requests, items_read: first.items },
    incremental_unchanged: {
      status: unchanged.status,
      requests: unchanged.requests,
      units: unchanged.units,
      items_read: unchanged.items,
      wall_s: round(unchanged.wallMs / 1000),
    },
  };
}
