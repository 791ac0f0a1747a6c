/**
 * The read-only queries behind the scrape-time gauges. Each reads an index-bounded set — never
 * the whole history of runs or units — and locks nothing. They cross orgs on purpose: metrics are
 * aggregates for the operator and carry no org, run or unit ids.
 */
import type { Tx } from '../db/types.js';
import { UNIT_OPEN_SQL, UNIT_TERMINAL_SQL } from '../store/rows.js';

export interface OutboxGroup {
  kind: string;
  status: string;
  n: number;
  /** min(available_at) over the group's pending rows (null for dispatched groups). */
  oldest_pending_at: Date | null;
}

export interface StatusCount {
  status: string;
  n: number;
}

/**
 * Outbox rows by kind × status with the oldest pending row's time, in one GROUP BY. The table
 * holds pending rows plus dispatched rows within the retention (the reconciler prunes the rest).
 */
export async function outboxGroups(tx: Tx): Promise<OutboxGroup[]> {
  const { rows } = await tx.query<OutboxGroup>(
    `SELECT kind, status, count(*)::int AS n, min(available_at) FILTER (WHERE status = 'pending') AS oldest_pending_at
       FROM ${tx.schema.sync_dispatch_outbox} GROUP BY kind, status`,
  );
  return rows;
}

/** Non-terminal units by status: reads the partial index of open units (sync_run_units_bucket_id_idx). */
export async function openUnitCounts(tx: Tx): Promise<StatusCount[]> {
  const { rows } = await tx.query<StatusCount>(
    `SELECT status, count(*)::int AS n FROM ${tx.schema.sync_run_units}
      WHERE status IN ${UNIT_OPEN_SQL} GROUP BY status`,
  );
  return rows;
}

/** Live runs by status: reads the live-run partial index (sync_runs_live_idx). */
export async function liveRunCounts(tx: Tx): Promise<StatusCount[]> {
  const { rows } = await tx.query<StatusCount>(
    `SELECT status, count(*)::int AS n FROM ${tx.schema.sync_runs}
      WHERE status IN ('planned', 'dispatching') GROUP BY status`,
  );
  return rows;
}

/**
 * Terminal units of live runs and of runs completed since `since`: at most `maxRuns` of each,
 * found through the live-run and completed_at indexes, their units through (sync_run_id, status).
 */
export async function recentTerminalUnitCounts(tx: Tx, since: Date, maxRuns: number): Promise<StatusCount[]> {
  const s = tx.schema;
  const { rows } = await tx.query<StatusCount>(
    `SELECT u.status, count(*)::int AS n
       FROM ((SELECT id FROM ${s.sync_runs} WHERE status IN ('planned', 'dispatching') LIMIT $2)
             UNION ALL
             (SELECT id FROM ${s.sync_runs} WHERE completed_at >= $1 ORDER BY completed_at DESC LIMIT $2)) r
       JOIN ${s.sync_run_units} u ON u.sync_run_id = r.id
      WHERE u.status IN ${UNIT_TERMINAL_SQL}
      GROUP BY u.status`,
    [since, maxRuns],
  );
  return rows;
}
