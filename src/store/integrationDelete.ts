/** Deleting an integration: its row and the records that name it (runs, schedules, watermarks). */
import type { Tx } from '../db/types.js';
import type { IntegrationRow } from './integrations.js';

/**
 * The integration (of `orgId`, or of any org when null), locked FOR UPDATE until the transaction
 * ends: a run being created for it (whose foreign key takes a KEY SHARE lock) waits. Null if absent.
 */
export async function lockIntegration(tx: Tx, id: string, orgId: string | null): Promise<IntegrationRow | null> {
  const { rows } = await tx.query<IntegrationRow>(
    `SELECT * FROM ${tx.schema.integrations} WHERE id = $1 AND ($2::text IS NULL OR org_id = $2) FOR UPDATE`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

export interface DeletedRecords {
  runs: number;
  schedules: number;
}

/**
 * One statement: the integration's runs with their units, outbox rows, post dispatches and
 * receipts; its JobRuns, schedules and watermarks; its sources and datasets (ON DELETE CASCADE);
 * and the integration itself. Foreign keys are checked at the end of the statement, when every
 * referencing row is gone. Locks the rows it deletes; returns how many runs and schedules went.
 * The normalized tables are not touched (see purgeNormalizedData).
 */
export async function deleteIntegrationRecords(tx: Tx, id: string): Promise<DeletedRecords> {
  const s = tx.schema;
  const { rows } = await tx.query<DeletedRecords>(
    `WITH runs AS (SELECT id FROM ${s.sync_runs} WHERE integration_id = $1),
          receipts AS (DELETE FROM ${s.post_sync_receipts} WHERE sync_run_id IN (SELECT id FROM runs)),
          posts AS (DELETE FROM ${s.sync_run_post_dispatches} WHERE sync_run_id IN (SELECT id FROM runs)),
          outbox AS (DELETE FROM ${s.sync_dispatch_outbox} WHERE sync_run_id IN (SELECT id FROM runs)),
          units AS (DELETE FROM ${s.sync_run_units} WHERE sync_run_id IN (SELECT id FROM runs)),
          gone_runs AS (DELETE FROM ${s.sync_runs} WHERE id IN (SELECT id FROM runs) RETURNING 1),
          job_runs AS (DELETE FROM ${s.job_runs} WHERE integration_id = $1),
          schedules AS (DELETE FROM ${s.scheduled_jobs} WHERE integration_id = $1 RETURNING 1),
          watermarks AS (DELETE FROM ${s.sync_watermarks} WHERE integration_id = $1),
          integration AS (DELETE FROM ${s.integrations} WHERE id = $1)
     SELECT (SELECT count(*) FROM gone_runs)::int AS runs, (SELECT count(*) FROM schedules)::int AS schedules`,
    [id],
  );
  return rows[0]!;
}
