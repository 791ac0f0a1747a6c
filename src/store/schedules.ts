/** scheduled_jobs: cron schedules and the slot each one fires next. */
import type { Tx } from '../db/types.js';

export type ScheduleMode = 'incremental' | 'full_resync' | 'verify';
export type ScheduleOutcome = 'fired' | 'skipped' | 'failed';

export interface ScheduleRow {
  id: string;
  org_id: string;
  integration_id: string;
  cron: string;
  timezone: string;
  mode: ScheduleMode;
  enabled: boolean;
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_outcome: ScheduleOutcome | null;
  last_error: string | null;
  last_job_run_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The fields a create or an update writes. */
export interface ScheduleFields {
  cron: string;
  timezone: string;
  mode: ScheduleMode;
  enabled: boolean;
  nextRunAt: Date | null;
}

/** Inserts a schedule. Locks nothing existing. Returns it. */
export async function insertSchedule(
  tx: Tx,
  s: ScheduleFields & { orgId: string; integrationId: string },
  now: Date,
): Promise<ScheduleRow> {
  const { rows } = await tx.query<ScheduleRow>(
    `INSERT INTO ${tx.schema.scheduled_jobs}
       (org_id, integration_id, cron, timezone, mode, enabled, next_run_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *`,
    [s.orgId, s.integrationId, s.cron, s.timezone, s.mode, s.enabled, s.nextRunAt, now],
  );
  return rows[0]!;
}

/** One schedule (of one org, when given). Locks: the row FOR UPDATE when `lock` (updates take turns with ticks). */
export async function getSchedule(
  tx: Tx,
  id: string,
  opts: { orgId?: string; lock?: boolean } = {},
): Promise<ScheduleRow | null> {
  const { rows } = await tx.query<ScheduleRow>(
    `SELECT * FROM ${tx.schema.scheduled_jobs}
      WHERE id = $1 AND ($2::text IS NULL OR org_id = $2)${opts.lock ? ' FOR UPDATE' : ''}`,
    [id, opts.orgId ?? null],
  );
  return rows[0] ?? null;
}

/** An org's schedules (every org's with null), oldest first. Locks nothing. */
export async function listSchedules(tx: Tx, orgId: string | null): Promise<ScheduleRow[]> {
  const { rows } = await tx.query<ScheduleRow>(
    `SELECT * FROM ${tx.schema.scheduled_jobs} WHERE ($1::text IS NULL OR org_id = $1) ORDER BY created_at, id`,
    [orgId],
  );
  return rows;
}

/** Writes a schedule's settings and next slot. Locks: that row. Returns it, or null if it is gone. */
export async function updateSchedule(tx: Tx, id: string, s: ScheduleFields, now: Date): Promise<ScheduleRow | null> {
  const { rows } = await tx.query<ScheduleRow>(
    `UPDATE ${tx.schema.scheduled_jobs}
        SET cron = $2, timezone = $3, mode = $4, enabled = $5, next_run_at = $6, updated_at = $7
      WHERE id = $1 RETURNING *`,
    [id, s.cron, s.timezone, s.mode, s.enabled, s.nextRunAt, now],
  );
  return rows[0] ?? null;
}

/**
 * Deletes a schedule of an org; its JobRuns stay, with job_id set to null. Locks: the row (waits
 * for a tick firing it). Returns the deleted row, or null when there was none.
 */
export async function deleteSchedule(tx: Tx, id: string, orgId: string | null): Promise<ScheduleRow | null> {
  const { rows } = await tx.query<ScheduleRow>(
    `DELETE FROM ${tx.schema.scheduled_jobs} WHERE id = $1 AND ($2::text IS NULL OR org_id = $2) RETURNING *`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

/**
 * Claims the most overdue enabled schedule whose slot has come (`next_run_at <= now`), skipping
 * rows another scheduler holds and the ids in `exclude`. Locks: that row FOR UPDATE until the
 * transaction ends — the per-job leader lock. Returns it, or null when none is due.
 */
export async function claimDueSchedule(tx: Tx, now: Date, exclude: readonly string[]): Promise<ScheduleRow | null> {
  const { rows } = await tx.query<ScheduleRow>(
    `SELECT * FROM ${tx.schema.scheduled_jobs}
      WHERE enabled AND next_run_at <= $1 AND NOT (id = ANY ($2::uuid[]))
      ORDER BY next_run_at, id LIMIT 1
      FOR UPDATE SKIP LOCKED`,
    [now, exclude],
  );
  return rows[0] ?? null;
}

/** Records how a claimed slot went and moves the schedule to its next slot. Locks: that row (held). */
export async function recordScheduleSlot(
  tx: Tx,
  id: string,
  r: { outcome: ScheduleOutcome; error: string | null; jobRunId: string | null; nextRunAt: Date | null },
  now: Date,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.schema.scheduled_jobs} SET last_run_at = $2, last_outcome = $3, last_error = $4, last_job_run_id = $5,
            next_run_at = $6, updated_at = $2
      WHERE id = $1`,
    [id, now, r.outcome, r.error, r.jobRunId, r.nextRunAt],
  );
}

/** The earliest slot of any enabled schedule (null when there is none). Locks nothing. */
export async function earliestNextRunAt(tx: Tx): Promise<Date | null> {
  const { rows } = await tx.query<{ at: Date | null }>(
    `SELECT min(next_run_at) AS at FROM ${tx.schema.scheduled_jobs} WHERE enabled`,
  );
  return rows[0]?.at ?? null;
}

/**
 * NOTIFY on the schema's schedules channel (a schedule was created or changed: scheduler loops
 * recompute their wait), delivered when the caller's transaction commits. Locks nothing.
 */
export async function notifySchedulesChanged(tx: Tx): Promise<void> {
  await tx.query('SELECT pg_notify($1, $2)', [tx.schema.schedulesChannel, '']);
}
