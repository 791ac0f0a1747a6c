/**
 * Freshness facts of an integration per (enabled source, enabled dataset): its watermark and what
 * its newest units say (src/domain/freshness.ts turns them into states). Units of a source are
 * found newest first through sync_run_units_source_idx (migration 0024); a unit of a dataset family
 * counts for each dataset it carries.
 */
import type { Tx } from '../db/types.js';
import { DRAIN_SAMPLE_UNITS, type FreshnessFacts } from '../domain/freshness.js';
import { UNIT_TRANSITIONS } from '../domain/statuses.js';
import { sqlList, sqlLit, UNIT_OPEN } from './sql.js';

const SUCCESS = sqlLit(UNIT_TRANSITIONS.succeed.to);
/** A unit's end by its worker: success or failed (a cancelled unit says nothing about the source). */
const FINISHED = sqlList([UNIT_TRANSITIONS.succeed.to, UNIT_TRANSITIONS.fail.to]);
/** A unit deferred by its lease holder (rate limit or soft timeout: last_retry_reason tells). */
const DEFERRED = sqlLit(UNIT_TRANSITIONS.defer.to);
/** The retry reason a rate-limit deferral records (src/store/units.ts retryOwnUnit). */
const RATE_LIMIT_REASON = 'rate_limit';

export interface FreshnessQuery {
  orgId: string;
  integrationId: string;
  /** Only these datasets (the provider's work-item datasets); null: every enabled dataset. */
  datasetKeys: readonly string[] | null;
}

/**
 * Per enabled source × enabled dataset of the org's integration (sorted by source key, dataset):
 * the watermark, the newest successful unit, the newest finished unit (its error category), the
 * newest open unit (until when a rate limit defers it) and the window and time of the recent timed
 * successful units (the drain rate). Locks nothing. Returns no row for another org's integration.
 */
export async function readFreshnessFacts(tx: Tx, q: FreshnessQuery): Promise<FreshnessFacts[]> {
  const s = tx.schema;
  const ofRow = `u.integration_id = s.integration_id AND u.source_id = s.id
                 AND (u.dataset_key = d.dataset_key OR d.dataset_key = ANY (u.carried_datasets))`;
  const { rows } = await tx.query<FreshnessFacts>(
    `SELECT s.id AS source_id, s.external_key AS source_key, s.name AS source_name, d.dataset_key,
            w.watermark_at,
            ok.sync_run_id AS last_success_run_id, ok.updated_at AS last_success_at,
            ok.before_at AS last_success_before,
            fin.status AS last_end_status, fin.sync_run_id AS last_end_run_id, fin.updated_at AS last_end_at,
            fin.result ->> 'error_category' AS last_error_category,
            op.sync_run_id AS open_run_id,
            CASE WHEN op.status = ${DEFERRED} AND op.last_retry_reason = $4 THEN op.available_at END AS deferred_until,
            rate.window_ms AS drain_window_ms, rate.busy_ms AS drain_busy_ms
       FROM ${s.integration_sources} s
       JOIN ${s.integration_datasets} d
         ON d.integration_id = s.integration_id AND d.enabled AND ($3::text[] IS NULL OR d.dataset_key = ANY ($3))
       LEFT JOIN ${s.sync_watermarks} w
         ON w.org_id = s.org_id AND w.integration_id = s.integration_id AND w.source_id = s.id
            AND w.dataset_key = d.dataset_key
       LEFT JOIN LATERAL (SELECT u.sync_run_id, u.updated_at, u.before_at FROM ${s.sync_run_units} u
                           WHERE ${ofRow} AND u.status = ${SUCCESS} ORDER BY u.id DESC LIMIT 1) ok ON true
       LEFT JOIN LATERAL (SELECT u.status, u.sync_run_id, u.updated_at, u.result FROM ${s.sync_run_units} u
                           WHERE ${ofRow} AND u.status IN ${FINISHED} ORDER BY u.id DESC LIMIT 1) fin ON true
       LEFT JOIN LATERAL (SELECT u.status, u.sync_run_id, u.last_retry_reason, u.available_at
                            FROM ${s.sync_run_units} u
                           WHERE ${ofRow} AND u.status IN ${UNIT_OPEN} ORDER BY u.id DESC LIMIT 1) op ON true
       LEFT JOIN LATERAL (SELECT sum(extract(epoch FROM t.before_at - t.since_at) * 1000)::float8 AS window_ms,
                                 sum(t.duration_ms)::float8 AS busy_ms
                            FROM (SELECT u.since_at, u.before_at, u.duration_ms FROM ${s.sync_run_units} u
                                   WHERE ${ofRow} AND u.status = ${SUCCESS} AND u.since_at IS NOT NULL
                                     AND u.before_at IS NOT NULL AND u.duration_ms > 0
                                   ORDER BY u.id DESC LIMIT $5) t) rate ON true
      WHERE s.org_id = $1 AND s.integration_id = $2 AND s.enabled
      ORDER BY s.external_key, d.dataset_key`,
    [q.orgId, q.integrationId, q.datasetKeys, RATE_LIMIT_REASON, DRAIN_SAMPLE_UNITS],
  );
  return rows;
}
