/**
 * The runs webhook deliveries arm: the planned run a delivery may join (coalescing), and
 * webhook_pending_runs, the sources whose deliveries came while a live run was reading that source
 * (or the integration had its cap of live runs). A source is *busy* while a non-terminal run of the
 * integration has a unit of it that has not ended.
 */
import type { Tx } from '../db/types.js';
import type { SyncMode } from '../domain/statuses.js';
import { RUN_OPEN, sqlLit, UNIT_OPEN } from './sql.js';

/** The status of a run not dispatched yet: its units have read nothing. */
const PLANNED = sqlLit('planned');

/**
 * The integration's planned incremental run, triggered as `triggeredBy`, whose plan covers the source and every
 * one of `datasets` (its `result.sources` and `result.datasets`), oldest first. Locks its row FOR SHARE, so it
 * stays planned (not dispatched: nothing read yet) until the caller's transaction ends; a run dispatched
 * meanwhile is not returned. Returns its id, or null.
 */
export async function findJoinableRun(
  tx: Tx,
  integrationId: string,
  triggeredBy: string,
  sourceId: string,
  datasets: readonly string[],
): Promise<string | null> {
  const { rows } = await tx.query<{ id: string }>(
    `SELECT id FROM ${tx.schema.sync_runs}
      WHERE integration_id = $1 AND status = ${PLANNED} AND triggered_by = $2 AND mode = $5
        AND result->'sources' @> jsonb_build_array($3::text) AND result->'datasets' @> $4::jsonb
      ORDER BY created_at LIMIT 1
      FOR SHARE`,
    [integrationId, triggeredBy, sourceId, JSON.stringify(datasets), 'incremental' satisfies SyncMode],
  );
  return rows[0]?.id ?? null;
}

export interface PendingRun {
  source_id: string;
  datasets: string[];
}

/**
 * A non-terminal run of the integration has a unit of source `p` not ended yet (SQL over alias
 * `p.source_id`): the source is being read. Once its units have ended, the run's other sources do
 * not hold it.
 */
const BUSY = (s: Tx['schema']) =>
  `EXISTS (SELECT 1 FROM ${s.sync_runs} r JOIN ${s.sync_run_units} u ON u.sync_run_id = r.id
            WHERE r.integration_id = p.integration_id AND r.status IN ${RUN_OPEN} AND u.source_id = p.source_id
              AND u.status IN ${UNIT_OPEN})`;

/** Whether a non-terminal run of the integration has a unit of the source not ended yet. Locks nothing. */
export async function isSourceBusy(tx: Tx, integrationId: string, sourceId: string): Promise<boolean> {
  const { rows } = await tx.query<{ busy: boolean }>(
    `SELECT ${BUSY(tx.schema)} AS busy FROM (SELECT $1::uuid AS integration_id, $2::uuid AS source_id) p`,
    [integrationId, sourceId],
  );
  return rows[0]!.busy;
}

/**
 * Remembers that the source's `datasets` are to be read once it is no longer busy: one row per
 * source, the datasets of every remembered delivery merged.
 * Locks: that row. Returns nothing.
 */
export async function rememberPendingRun(
  tx: Tx,
  p: { orgId: string; integrationId: string; sourceId: string; datasets: readonly string[] },
  now: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.schema.webhook_pending_runs} AS p
       (integration_id, source_id, org_id, datasets, first_at, updated_at)
     VALUES ($1, $2, $3, $4::text[], $5, $5)
     ON CONFLICT (integration_id, source_id) DO UPDATE SET
       datasets = ARRAY(SELECT DISTINCT d FROM unnest(p.datasets || EXCLUDED.datasets) AS d ORDER BY d),
       updated_at = EXCLUDED.updated_at`,
    [p.integrationId, p.sourceId, p.orgId, [...p.datasets], now],
  );
}

/**
 * Integrations with a remembered run of a source no longer busy, oldest remembered first, at most
 * `limit`. Locks nothing. Returns their ids and orgs.
 */
export async function integrationsWithPendingRuns(
  tx: Tx,
  limit: number,
): Promise<{ integration_id: string; org_id: string }[]> {
  const s = tx.schema;
  const { rows } = await tx.query<{ integration_id: string; org_id: string }>(
    `SELECT p.integration_id, min(p.org_id) AS org_id FROM ${s.webhook_pending_runs} p
      WHERE NOT ${BUSY(s)}
      GROUP BY p.integration_id
      ORDER BY min(p.first_at), p.integration_id
      LIMIT $1`,
    [limit],
  );
  return rows;
}

/**
 * Takes (deletes) the integration's remembered runs of sources not busy. Locks those rows. Returns
 * each source and its datasets.
 */
export async function takeFreePendingRuns(tx: Tx, integrationId: string): Promise<PendingRun[]> {
  const { rows } = await tx.query<PendingRun>(
    `DELETE FROM ${tx.schema.webhook_pending_runs} p WHERE p.integration_id = $1 AND NOT ${BUSY(tx.schema)}
     RETURNING p.source_id, p.datasets`,
    [integrationId],
  );
  return rows;
}

/** Takes (deletes) all the integration's remembered runs. Locks those rows. Returns each source and its datasets. */
export async function takePendingRuns(tx: Tx, integrationId: string): Promise<PendingRun[]> {
  const { rows } = await tx.query<PendingRun>(
    `DELETE FROM ${tx.schema.webhook_pending_runs} WHERE integration_id = $1 RETURNING source_id, datasets`,
    [integrationId],
  );
  return rows;
}
