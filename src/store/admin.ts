/**
 * Read queries behind the admin endpoints. Every org-owned row is read through `org_id = $1`,
 * so a caller of one org never sees another's. None of them locks anything.
 */
import type { DbSchema } from '../db/schema.js';
import { quoteIdent, type Tx } from '../db/types.js';
import { VERIFY_COUNTS, type VerifyCount, type VerifyCounts } from '../domain/verify.js';
import type { IntegrationRow } from './integrations.js';
import type { JobRunRow, RunRow, UnitRow } from './rows.js';
import { OUTBOX_PENDING, sqlLit } from './sql.js';

export interface IntegrationView extends IntegrationRow {
  /** External keys of the enabled sources. */
  sources: string[];
  /** Keys of the enabled datasets. */
  datasets: string[];
  /** When the integration's credential was last set; null when it has none. */
  credential_updated_at: Date | null;
}

function integrationViewSql(s: DbSchema): string {
  return `SELECT i.*,
    ARRAY(SELECT s.external_key FROM ${s.integration_sources} s
           WHERE s.integration_id = i.id AND s.enabled ORDER BY s.external_key) AS sources,
    ARRAY(SELECT d.dataset_key FROM ${s.integration_datasets} d
           WHERE d.integration_id = i.id AND d.enabled ORDER BY d.dataset_key) AS datasets,
    (SELECT c.updated_at FROM ${s.integration_credentials} c WHERE c.integration_id = i.id) AS credential_updated_at
  FROM ${s.integrations} i`;
}

/** The org's integrations with their source and dataset keys, oldest first. */
export async function listIntegrationViews(tx: Tx, orgId: string): Promise<IntegrationView[]> {
  const { rows } = await tx.query<IntegrationView>(
    `${integrationViewSql(tx.schema)} WHERE i.org_id = $1 ORDER BY i.created_at, i.id`,
    [orgId],
  );
  return rows;
}

/** One integration of the org with its source and dataset keys. */
export async function getIntegrationView(tx: Tx, orgId: string, id: string): Promise<IntegrationView | null> {
  const { rows } = await tx.query<IntegrationView>(
    `${integrationViewSql(tx.schema)} WHERE i.org_id = $1 AND i.id = $2`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

/** A position in a newest-first listing: the last row's creation time (µs since epoch) and id. */
export interface TimeCursor {
  createdUs: string;
  id: string;
}

export interface JobRunFilter {
  orgId: string;
  status?: string;
  integrationId?: string;
  triggeredBy?: string;
  /** created_at ≥ this */
  createdAfter?: Date;
  /** created_at < this */
  createdBefore?: Date;
  after?: TimeCursor;
  limit: number;
}

/** A JobRun with its run's mode and progress (null until linked). */
export interface JobRunView extends JobRunRow {
  sync_run_id: string | null;
  mode: string | null;
  run_status: string | null;
  total_units: number | null;
  completed_units: number | null;
  failed_units: number | null;
  /** created_at in µs since the epoch, for the next page's cursor. */
  cursor_us: string;
}

/** The org's JobRuns matching the filter, newest first, after the cursor. */
export async function listJobRunViews(tx: Tx, f: JobRunFilter): Promise<JobRunView[]> {
  const s = tx.schema;
  const { rows } = await tx.query<JobRunView>(
    `SELECT j.*, r.id AS sync_run_id, r.mode, r.status AS run_status, r.total_units, r.completed_units, r.failed_units,
            (extract(epoch FROM j.created_at) * 1000000)::bigint::text AS cursor_us
       FROM ${s.job_runs} j
       LEFT JOIN ${s.sync_runs} r ON r.id = (j.result ->> 'sync_run_id')::uuid AND r.org_id = j.org_id
      WHERE j.org_id = $1
        AND ($2::text IS NULL OR j.status = $2)
        AND ($3::uuid IS NULL OR j.integration_id = $3)
        AND ($4::text IS NULL OR j.triggered_by = $4)
        AND ($5::timestamptz IS NULL OR j.created_at >= $5)
        AND ($6::timestamptz IS NULL OR j.created_at < $6)
        AND ($7::bigint IS NULL
             OR (j.created_at, j.id) < ('epoch'::timestamptz + $7::bigint * interval '1 microsecond', $8::uuid))
      ORDER BY j.created_at DESC, j.id DESC
      LIMIT $9`,
    [
      f.orgId,
      f.status ?? null,
      f.integrationId ?? null,
      f.triggeredBy ?? null,
      f.createdAfter ?? null,
      f.createdBefore ?? null,
      f.after?.createdUs ?? null,
      f.after?.id ?? null,
      f.limit,
    ],
  );
  return rows;
}

/** One run of the org. */
export async function getRunOfOrg(tx: Tx, orgId: string, runId: string): Promise<RunRow | null> {
  const { rows } = await tx.query<RunRow>(`SELECT * FROM ${tx.schema.sync_runs} WHERE org_id = $1 AND id = $2`, [
    orgId,
    runId,
  ]);
  return rows[0] ?? null;
}

/** The run's unit counts by status. */
export async function countRunUnitsByStatus(tx: Tx, orgId: string, runId: string): Promise<Record<string, number>> {
  const { rows } = await tx.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM ${tx.schema.sync_run_units} WHERE org_id = $1 AND sync_run_id = $2
      GROUP BY status`,
    [orgId, runId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/**
 * What the run's successful verify units counted (their results' `verify`), summed: checked,
 * missing, stale, restored and deleted. One SELECT; takes no locks. All zero for a run without any.
 */
export async function sumRunVerifyCounts(tx: Tx, orgId: string, runId: string): Promise<VerifyCounts> {
  // Only numbers are summed: a result written by another release cannot fail the read.
  const sums = VERIFY_COUNTS.map((k, i) => {
    const v = `result -> 'verify' -> $${i + 3}::text`;
    const n = `CASE WHEN jsonb_typeof(${v}) = 'number' THEN (${v})::text::numeric END`;
    return `COALESCE(sum(${n}), 0) AS ${quoteIdent(k)}`;
  });
  const { rows } = await tx.query<Record<VerifyCount, string | number>>(
    `SELECT ${sums.join(', ')} FROM ${tx.schema.sync_run_units}
      WHERE org_id = $1 AND sync_run_id = $2 AND status = ${sqlLit('success')}
        AND jsonb_typeof(result -> 'verify') = 'object'`,
    [orgId, runId, ...VERIFY_COUNTS],
  );
  const row = rows[0]!;
  return Object.fromEntries(VERIFY_COUNTS.map((k) => [k, Number(row[k])])) as VerifyCounts;
}

/** The JobRun linked to the run, if any. */
export async function getJobRunOfRun(tx: Tx, orgId: string, runId: string): Promise<JobRunRow | null> {
  const { rows } = await tx.query<JobRunRow>(
    `SELECT * FROM ${tx.schema.job_runs} WHERE org_id = $1 AND result ->> 'sync_run_id' = $2
      ORDER BY created_at LIMIT 1`,
    [orgId, runId],
  );
  return rows[0] ?? null;
}

/** A unit with its source's external key. */
export interface UnitView extends UnitRow {
  source_key: string | null;
}

/** The run's units (optionally of one status) in id order, after `afterId`. */
export async function listRunUnitViews(
  tx: Tx,
  f: { orgId: string; runId: string; status?: string; afterId?: string; limit: number },
): Promise<UnitView[]> {
  const s = tx.schema;
  const { rows } = await tx.query<UnitView>(
    `SELECT u.*, s.external_key AS source_key
       FROM ${s.sync_run_units} u LEFT JOIN ${s.integration_sources} s ON s.id = u.source_id
      WHERE u.org_id = $1 AND u.sync_run_id = $2
        AND ($3::text IS NULL OR u.status = $3)
        AND ($4::uuid IS NULL OR u.id > $4)
      ORDER BY u.id LIMIT $5`,
    [f.orgId, f.runId, f.status ?? null, f.afterId ?? null, f.limit],
  );
  return rows;
}

export interface OutboxCount {
  kind: string;
  status: string;
  count: number;
}

/** The org's outbox rows counted per kind × status. */
export async function countOutboxByKindStatus(tx: Tx, orgId: string): Promise<OutboxCount[]> {
  const { rows } = await tx.query<OutboxCount>(
    `SELECT kind, status, count(*)::int AS count FROM ${tx.schema.sync_dispatch_outbox} WHERE org_id = $1
      GROUP BY kind, status ORDER BY kind, status`,
    [orgId],
  );
  return rows;
}

export interface OutboxPendingSummary {
  /** Pending rows under a claim that has not expired. */
  live_claims: number;
  /** Pending rows that are due now. */
  due: number;
  /** Seconds since the longest-due pending row came due (null when none is due). */
  oldest_pending_age_seconds: number | null;
}

/** Claims and lateness of the org's pending rows (reads the partial index on pending rows). */
export async function summarizePendingOutbox(tx: Tx, orgId: string, now: Date): Promise<OutboxPendingSummary> {
  const { rows } = await tx.query<OutboxPendingSummary>(
    `SELECT count(*) FILTER (WHERE claim_expires_at > $2)::int AS live_claims,
            count(*) FILTER (WHERE available_at <= $2)::int AS due,
            round(extract(epoch FROM ($2::timestamptz - min(available_at) FILTER (WHERE available_at <= $2))),
                  3)::float8
              AS oldest_pending_age_seconds
       FROM ${tx.schema.sync_dispatch_outbox} WHERE org_id = $1 AND status = ${OUTBOX_PENDING}`,
    [orgId, now],
  );
  return rows[0] ?? { live_claims: 0, due: 0, oldest_pending_age_seconds: null };
}

export interface OutboxErrorRow {
  id: string;
  sync_run_id: string;
  kind: string;
  status: string;
  attempts: number;
  last_error: string;
  available_at: Date;
  updated_at: Date;
}

/**
 * The org's most recently touched pending rows that carry a publish error (marking a row
 * dispatched clears its error, so only pending rows can carry one; reads the pending index).
 */
export async function listRecentOutboxErrors(tx: Tx, orgId: string, limit: number): Promise<OutboxErrorRow[]> {
  const { rows } = await tx.query<OutboxErrorRow>(
    `SELECT id, sync_run_id, kind, status, attempts, last_error, available_at, updated_at
       FROM ${tx.schema.sync_dispatch_outbox}
      WHERE org_id = $1 AND status = ${OUTBOX_PENDING} AND last_error IS NOT NULL
      ORDER BY updated_at DESC, id LIMIT $2`,
    [orgId, limit],
  );
  return rows;
}

export interface ReconcilerPassRow {
  id: string;
  reconciler: string;
  started_at: Date;
  finished_at: Date;
  duration_ms: number;
  counters: Record<string, number>;
  error: string | null;
}

/** The most recent reconciler passes (system-wide: passes carry counters, no org rows). */
export async function listReconcilerPasses(tx: Tx, limit: number): Promise<ReconcilerPassRow[]> {
  const { rows } = await tx.query<ReconcilerPassRow>(
    `SELECT id::text AS id, reconciler, started_at, finished_at, duration_ms, counters, error
       FROM ${tx.schema.reconciler_passes} ORDER BY started_at DESC, id DESC LIMIT $1`,
    [limit],
  );
  return rows;
}
