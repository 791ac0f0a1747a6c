/** job_runs: the admin-visible activity row (an observer, never a lock). */
import type { Tx } from '../db/types.js';
import { jobRunStatusFor } from '../domain/aggregate.js';
import { INITIAL_STATUS, JOB_RUN_TRANSITIONS, TERMINAL_RUN_STATUSES, type TriggeredBy } from '../domain/statuses.js';
import type { JobRunRow } from './rows.js';
import { RUN_TERMINAL, sqlList, sqlLit } from './sql.js';

const J = JOB_RUN_TRANSITIONS;
/** A new JobRun's status. */
const PENDING = sqlLit(INITIAL_STATUS.jobRun);
/** The run started dispatching (pending → running). */
const START = { from: sqlList(J.start.from), to: sqlLit(J.start.to) };
/** The run is terminal: open JobRuns take its outcome. */
const COMPLETE_FROM = sqlList(J.complete.from);
/** A terminal run's JobRun status (jobRunStatusFor), as a CASE over the run's status `r.status`. */
const JOB_STATUS_OF_RUN = `CASE r.status ${TERMINAL_RUN_STATUSES.map(
  (s) => `WHEN ${sqlLit(s)} THEN ${sqlLit(jobRunStatusFor(s))}`,
).join(' ')} END`;

/** Inserts a pending JobRun. Locks nothing existing. Returns it. */
export async function insertJobRun(
  tx: Tx,
  j: { orgId: string; integrationId: string; triggeredBy: TriggeredBy; jobId?: string | null },
  now: Date,
): Promise<JobRunRow> {
  const { rows } = await tx.query<JobRunRow>(
    `INSERT INTO ${tx.schema.job_runs} (org_id, job_id, integration_id, status, triggered_by, created_at)
     VALUES ($1, $2, $3, ${PENDING}, $4, $5) RETURNING *`,
    [j.orgId, j.jobId ?? null, j.integrationId, j.triggeredBy, now],
  );
  return rows[0]!;
}

/** Links the JobRun to its run through result.sync_run_id. Locks: the JobRun row. */
export async function linkJobRun(tx: Tx, jobRunId: string, runId: string): Promise<void> {
  await tx.query(
    `UPDATE ${tx.schema.job_runs} SET result = result || jsonb_build_object('sync_run_id', $2::text) WHERE id = $1`,
    [jobRunId, runId],
  );
}

/** pending → running for the run's JobRun. Locks: that row. */
export async function markJobRunRunning(tx: Tx, runId: string, now: Date): Promise<void> {
  await tx.query(
    `UPDATE ${tx.schema.job_runs} SET status = ${START.to}, started_at = COALESCE(started_at, $2)
      WHERE result ->> 'sync_run_id' = $1 AND status IN ${START.from}`,
    [runId, now],
  );
}

/**
 * Mirrors a terminal run onto its JobRun (status, counts, duration). Locks: that row.
 * Returns how many JobRuns changed.
 */
export async function completeJobRun(
  tx: Tx,
  runId: string,
  status: 'success' | 'failed' | 'cancelled',
  result: Record<string, unknown>,
  error: string | null,
  now: Date,
): Promise<number> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.job_runs} SET status = $2, result = result || $3::jsonb, error = $4, completed_at = $5,
            started_at = COALESCE(started_at, created_at),
            duration_ms = GREATEST(0,
              (extract(epoch FROM ($5::timestamptz - COALESCE(started_at, created_at))) * 1000)::int)
      WHERE result ->> 'sync_run_id' = $1 AND status IN ${COMPLETE_FROM}`,
    [runId, status, JSON.stringify(result), error, now],
  );
  return rowCount;
}

/**
 * Observer repair: open JobRuns whose run is terminal take the run's outcome.
 * Locks: the repaired JobRun rows. Returns how many.
 */
export async function repairJobRuns(tx: Tx, now: Date, batch: number): Promise<number> {
  const s = tx.schema;
  const { rowCount } = await tx.query(
    `UPDATE ${s.job_runs} j
        SET status = ${JOB_STATUS_OF_RUN},
            result = j.result || jsonb_build_object('run_status', r.status, 'total_units', r.total_units,
                       'completed_units', r.completed_units, 'failed_units', r.failed_units),
            error = r.error, completed_at = COALESCE(r.completed_at, $1),
            started_at = COALESCE(j.started_at, r.started_at, j.created_at),
            duration_ms = GREATEST(0, (extract(epoch FROM (COALESCE(r.completed_at, $1)
              - COALESCE(j.started_at, r.started_at, j.created_at))) * 1000)::int)
       FROM (SELECT j2.id AS job_run_id, r2.* FROM ${s.job_runs} j2
               JOIN ${s.sync_runs} r2 ON r2.id = (j2.result ->> 'sync_run_id')::uuid
              WHERE j2.status IN ${COMPLETE_FROM} AND r2.status IN ${RUN_TERMINAL}
              LIMIT $2) r
      WHERE j.id = r.job_run_id`,
    [now, batch],
  );
  return rowCount;
}

export async function getJobRunForRun(tx: Tx, runId: string): Promise<JobRunRow | null> {
  const { rows } = await tx.query<JobRunRow>(
    `SELECT * FROM ${tx.schema.job_runs} WHERE result ->> 'sync_run_id' = $1`,
    [runId],
  );
  return rows[0] ?? null;
}
