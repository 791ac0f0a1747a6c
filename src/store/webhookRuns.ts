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
 * A non-terminal run of the integration has a unit of source `p` not ended yet (SQL over alias
 * `p.source_id`): the source is being read. Once its units have ended, the run's other sources do
 * not hold it.
 */
const BUSY = (s: Tx['schema']) =>
  `EXISTS (SELECT 1 FROM ${s.sync_runs} r JOIN ${s.sync_run_units} u ON u.sync_run_id = r.id
            WHERE r.integration_id = p.integration_id AND r.status IN ${RUN_OPEN} AND u.source_id = p.source_id
              AND u.status IN ${UNIT_OPEN})`;

/** What a delivery's route is decided from (`readRoutingFacts`). */
export interface RoutingFacts {
  /** The integration as stored now; null when there is none. */
  integration: { id: string; org_id: string; provider: string; enabled: boolean } | null;
  /** The enabled source of the delivery's key; null when none. */
  source: { id: string; external_key: string } | null;
  /** The delivery's datasets the integration has enabled, sorted. */
  datasets: string[];
  /** The planned incremental run (of `triggeredBy`) covering the source and those datasets: locked FOR SHARE. */
  joinable: string | null;
  /** A non-terminal run of the integration has a unit of the source not ended yet. */
  busy: boolean;
  /** The integration's non-terminal runs, of any mode. */
  liveRuns: number;
}

interface RawFacts {
  integration_id: string | null;
  org_id: string | null;
  provider: string | null;
  enabled: boolean | null;
  source_id: string | null;
  source_key: string | null;
  datasets: string[];
  joinable: string | null;
  busy: boolean;
  live_runs: number;
}

/**
 * Everything a webhook delivery's route depends on, in one statement: the integration, the enabled
 * source of `sourceKey` (any case), which of `datasets` are enabled, the planned run of `triggeredBy`
 * it could join, whether the source is busy (BUSY) and how many runs of the integration are live.
 * Locks the joinable run's row FOR SHARE (it stays planned until the caller's transaction ends) and
 * nothing else. Returns the facts.
 */
export async function readRoutingFacts(
  tx: Tx,
  q: { integrationId: string; sourceKey: string; datasets: readonly string[]; triggeredBy: string },
): Promise<RoutingFacts> {
  const s = tx.schema;
  const { rows } = await tx.query<RawFacts>(
    `WITH src AS (
       SELECT id, external_key FROM ${s.integration_sources}
        WHERE integration_id = $1 AND enabled AND lower(external_key) = lower($2)
        ORDER BY external_key LIMIT 1),
     ds AS (
       SELECT coalesce(array_agg(dataset_key ORDER BY dataset_key), '{}'::text[]) AS keys
         FROM ${s.integration_datasets} WHERE integration_id = $1 AND enabled AND dataset_key = ANY($3::text[])),
     joinable AS (
       SELECT r.id FROM ${s.sync_runs} r, src, ds
        WHERE r.integration_id = $1 AND r.status = ${PLANNED} AND r.triggered_by = $4 AND r.mode = $5
          AND cardinality(ds.keys) > 0
          AND r.result->'sources' @> jsonb_build_array(src.id::text) AND r.result->'datasets' @> to_jsonb(ds.keys)
        ORDER BY r.created_at LIMIT 1
        FOR SHARE OF r)
     SELECT i.id AS integration_id, i.org_id, i.provider, i.enabled, src.id AS source_id,
            src.external_key AS source_key, ds.keys AS datasets, (SELECT id FROM joinable) AS joinable,
            coalesce((SELECT ${BUSY(s)} FROM (SELECT $1::uuid AS integration_id, src.id AS source_id) p), false)
              AS busy,
            (SELECT count(*)::int FROM ${s.sync_runs} WHERE integration_id = $1 AND status IN ${RUN_OPEN})
              AS live_runs
       FROM ds LEFT JOIN ${s.integrations} i ON i.id = $1 LEFT JOIN src ON true`,
    [q.integrationId, q.sourceKey, [...q.datasets], q.triggeredBy, 'incremental' satisfies SyncMode],
  );
  const r = rows[0]!;
  return {
    integration:
      r.integration_id === null
        ? null
        : { id: r.integration_id, org_id: r.org_id!, provider: r.provider!, enabled: r.enabled! },
    source: r.source_id === null ? null : { id: r.source_id, external_key: r.source_key! },
    datasets: r.datasets,
    joinable: r.joinable,
    busy: r.busy,
    liveRuns: r.live_runs,
  };
}

export interface PendingRun {
  source_id: string;
  datasets: string[];
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
