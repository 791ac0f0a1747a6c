/** sync_runs: insert, the run CAS transitions, and reads. */
import type { Tx } from '../db/types.js';
import type { RunOutcome } from '../domain/aggregate.js';
import {
  INITIAL_STATUS,
  RUN_TRANSITIONS,
  UNIT_TRANSITIONS,
  type SyncMode,
  type TriggeredBy,
} from '../domain/statuses.js';
import type { RunRow } from './rows.js';
import { RUN_OPEN, sqlFrom, sqlList, sqlLit } from './sql.js';

const R = RUN_TRANSITIONS;
/** A new run's status. */
const PLANNED = sqlLit(INITIAL_STATUS.run);
/** The run's first dispatch (planned → dispatching). */
const START_DISPATCH = { from: sqlList(R.start_dispatch.from), to: sqlLit(R.start_dispatch.to) };
/** The terminal CAS: finalize, denial or cancellation, whichever its outcome is. */
const END_FROM = sqlFrom(R.finalize, R.deny_all, R.cancel);
/** Run cancellation's unit CAS: any non-terminal unit → cancelled. */
/** Units that hold a slot of their concurrency bucket: published (awaiting a claim) or leased. */
const HOLDS_SLOT = sqlList([UNIT_TRANSITIONS.dispatch.to, UNIT_TRANSITIONS.claim.to]);
const CANCEL_UNIT = { from: sqlList(UNIT_TRANSITIONS.cancel.from), to: sqlLit(UNIT_TRANSITIONS.cancel.to) };

export interface NewRun {
  orgId: string;
  integrationId: string;
  triggeredBy: string;
  mode: SyncMode;
  result?: Record<string, unknown>;
}

/** Inserts a planned run. Locks nothing existing. Returns it. */
export async function insertRun(tx: Tx, r: NewRun, now: Date): Promise<RunRow> {
  const { rows } = await tx.query<RunRow>(
    `INSERT INTO ${tx.schema.sync_runs}
       (org_id, integration_id, triggered_by, mode, status, result, created_at, updated_at)
     VALUES ($1, $2, $3, $4, ${PLANNED}, $5::jsonb, $6, $6) RETURNING *`,
    [r.orgId, r.integrationId, r.triggeredBy, r.mode, JSON.stringify(r.result ?? {}), now],
  );
  return rows[0]!;
}

/** The run's planned units, counted once planning has written them. Locks: the run row. */
export async function setPlannedUnits(tx: Tx, runId: string, n: number): Promise<void> {
  await tx.query(`UPDATE ${tx.schema.sync_runs} SET planned_units = $2 WHERE id = $1`, [runId, n]);
}

export async function getRun(tx: Tx, runId: string): Promise<RunRow | null> {
  const { rows } = await tx.query<RunRow>(`SELECT * FROM ${tx.schema.sync_runs} WHERE id = $1`, [runId]);
  return rows[0] ?? null;
}

/**
 * Locks the run row so dispatchers, finalizers and cancellers of one run take turns. Returns it.
 * FOR NO KEY UPDATE, not FOR UPDATE: the key never changes, and FOR UPDATE would also block the
 * FOR KEY SHARE lock the foreign key takes when another transaction inserts an outbox or ledger
 * row of this run — a wait that closes deadlock cycles with the outbox rows this transaction arms.
 */
export async function lockRun(tx: Tx, runId: string): Promise<RunRow | null> {
  const { rows } = await tx.query<RunRow>(`SELECT * FROM ${tx.schema.sync_runs} WHERE id = $1 FOR NO KEY UPDATE`, [
    runId,
  ]);
  return rows[0] ?? null;
}

/**
 * lockRun, unless another transaction holds the run row (SKIP LOCKED): null then, as for a run that
 * does not exist (tell them apart with getRun). Locks: the run row when it returns it.
 */
export async function lockRunUnlessBusy(tx: Tx, runId: string): Promise<RunRow | null> {
  const { rows } = await tx.query<RunRow>(
    `SELECT * FROM ${tx.schema.sync_runs} WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED`,
    [runId],
  );
  return rows[0] ?? null;
}

/** planned → dispatching (sets started_at). Locks: the run row. Returns whether it moved. */
export async function markRunDispatching(tx: Tx, runId: string, now: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.sync_runs}
        SET status = ${START_DISPATCH.to}, started_at = COALESCE(started_at, $2), updated_at = $2
      WHERE id = $1 AND status IN ${START_DISPATCH.from}`,
    [runId, now],
  );
  return rowCount > 0;
}

/** A run the terminal CAS ended, and whether its integration has remembered webhook deliveries. */
export type FinishedRun = RunRow & { webhook_pending: boolean };

/**
 * The terminal CAS: a non-terminal run takes its outcome and unit counts, once.
 * Locks: the run row. Returns the run — with whether webhook deliveries of its integration are
 * remembered (webhook_pending_runs, at the statement's snapshot: the run's end frees a live-run
 * slot for them) — or null if it was already terminal.
 */
export async function finishRun(
  tx: Tx,
  runId: string,
  o: RunOutcome,
  extra: Record<string, unknown>,
  now: Date,
): Promise<FinishedRun | null> {
  const s = tx.schema;
  const { rows } = await tx.query<FinishedRun>(
    `UPDATE ${s.sync_runs} r SET status = $2, total_units = $3, completed_units = $4, failed_units = $5,
            error = $6, result = result || $7::jsonb, completed_at = $8, updated_at = $8
      WHERE id = $1 AND status IN ${END_FROM}
      RETURNING r.*,
        EXISTS (SELECT 1 FROM ${s.webhook_pending_runs} p WHERE p.integration_id = r.integration_id)
          AS webhook_pending`,
    [
      runId,
      o.status,
      o.total,
      o.completed,
      o.failed,
      o.error,
      JSON.stringify({ ...extra, cancelled_units: o.cancelled }),
      now,
    ],
  );
  return rows[0] ?? null;
}

/** What a run armed by webhook deliveries records as its trigger (targeted: a few sources, a family). */
const WEBHOOK_TRIGGER: TriggeredBy = 'webhook';

/**
 * A non-terminal run of this integration and mode that a trigger of that mode would conflict with,
 * if any: a run armed by webhook deliveries does not count — it reads only the sources the
 * deliveries named, and a schedule (the backstop) or an API trigger must not be skipped for as long
 * as deliveries keep coming. Two runs reading one source are safe: upserts, and watermarks that
 * only move forward. Locks nothing.
 */
export async function findLiveRun(tx: Tx, integrationId: string, mode: SyncMode): Promise<RunRow | null> {
  const { rows } = await tx.query<RunRow>(
    `SELECT * FROM ${tx.schema.sync_runs} WHERE integration_id = $1 AND mode = $2 AND status IN ${RUN_OPEN}
        AND triggered_by <> $3
      ORDER BY created_at LIMIT 1`,
    [integrationId, mode, WEBHOOK_TRIGGER],
  );
  return rows[0] ?? null;
}

/** How many non-terminal runs the integration has, of any mode. Locks nothing. Returns the count. */
export async function countLiveRuns(tx: Tx, integrationId: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${tx.schema.sync_runs} WHERE integration_id = $1 AND status IN ${RUN_OPEN}`,
    [integrationId],
  );
  return rows[0]!.n;
}

/**
 * Every non-terminal unit of the run → cancelled (none is planned any more; checkpoints cleared). Locks: those unit
 * rows and the run row. Returns the ids of the
 * units that held a slot of their bucket (dispatching or running): the capacity the cancel frees.
 */
export async function cancelOpenUnits(tx: Tx, runId: string, now: Date): Promise<string[]> {
  const s = tx.schema;
  const { rows } = await tx.query<{ id: string; held_slot: boolean }>(
    `WITH open AS (
       SELECT id, status FROM ${s.sync_run_units} WHERE sync_run_id = $1 AND status IN ${CANCEL_UNIT.from} FOR UPDATE),
     counted AS (
       UPDATE ${s.sync_runs} SET planned_units = 0 WHERE id = $1 AND planned_units IS NOT NULL)
     UPDATE ${s.sync_run_units} u SET status = ${CANCEL_UNIT.to}, lease_expires_at = NULL, resume_checkpoint = NULL,
            result = COALESCE(u.result, '{}'::jsonb) || '{"error_category":"cancelled"}'::jsonb, updated_at = $2
       FROM open
      WHERE u.id = open.id
      RETURNING u.id, open.status IN ${HOLDS_SLOT} AS held_slot`,
    [runId, now],
  );
  return rows.filter((r) => r.held_slot).map((r) => r.id);
}

export interface RunListFilter {
  orgId?: string;
  integrationId?: string;
  status?: string;
  limit: number;
}

/** Recent runs, newest first. Locks nothing. */
export async function listRuns(tx: Tx, f: RunListFilter): Promise<RunRow[]> {
  const { rows } = await tx.query<RunRow>(
    `SELECT * FROM ${tx.schema.sync_runs}
      WHERE ($1::text IS NULL OR org_id = $1) AND ($2::uuid IS NULL OR integration_id = $2)
        AND ($3::text IS NULL OR status = $3)
      ORDER BY created_at DESC, id DESC LIMIT $4`,
    [f.orgId ?? null, f.integrationId ?? null, f.status ?? null, f.limit],
  );
  return rows;
}
