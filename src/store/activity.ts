/**
 * Read queries behind the activity charts: what ended per hour (runs, units, their rate-limit
 * deferrals), reconciler passes per hour (system-wide), and the work-item-metrics handler's latest
 * figures per day. Org rows are read through `org_id = $1`. None of them locks anything.
 */
import type { Tx } from '../db/types.js';
import { RUN_OPEN, RUN_TERMINAL, UNIT_TERMINAL } from './sql.js';

/** A count of rows of one status ending in one hour of the window. */
export interface HourStatusCount {
  /** Hours since the window's start. */
  bucket: number;
  status: string;
  n: number;
}

/** The org's runs that ended in [since, until), counted per hour from `since` and terminal status. */
export async function countRunsEndedByHour(
  tx: Tx,
  orgId: string,
  since: Date,
  until: Date,
): Promise<HourStatusCount[]> {
  const { rows } = await tx.query<HourStatusCount>(
    `SELECT floor(extract(epoch FROM completed_at - $2::timestamptz) / 3600)::int AS bucket, status, count(*)::int AS n
       FROM ${tx.schema.sync_runs}
      WHERE org_id = $1 AND completed_at >= $2 AND completed_at < $3 AND status IN ${RUN_TERMINAL}
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [orgId, since, until],
  );
  return rows;
}

export interface UnitHourCount extends HourStatusCount {
  /** The rate-limit deferrals those units took before they ended. */
  deferrals: number;
}

/**
 * The org's units that ended (reached a terminal status; their last update) in [since, until),
 * counted per hour from `since` and status, with the rate-limit deferrals they took. Reads the units
 * of runs open now or ended since `since` only (through the runs' live and completion indexes).
 */
export async function countUnitsEndedByHour(tx: Tx, orgId: string, since: Date, until: Date): Promise<UnitHourCount[]> {
  const s = tx.schema;
  const { rows } = await tx.query<UnitHourCount>(
    `WITH runs AS (
       SELECT id FROM ${s.sync_runs} WHERE org_id = $1 AND completed_at >= $2
       UNION
       SELECT id FROM ${s.sync_runs} WHERE org_id = $1 AND status IN ${RUN_OPEN}
     )
     SELECT floor(extract(epoch FROM u.updated_at - $2::timestamptz) / 3600)::int AS bucket, u.status,
            count(*)::int AS n, coalesce(sum(u.rate_limit_deferrals), 0)::int AS deferrals
       FROM runs r JOIN ${s.sync_run_units} u ON u.sync_run_id = r.id
      WHERE u.org_id = $1 AND u.status IN ${UNIT_TERMINAL} AND u.updated_at >= $2 AND u.updated_at < $3
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [orgId, since, until],
  );
  return rows;
}

export interface PassHour {
  bucket: number;
  passes: number;
  errors: number;
  /** Mean duration of the hour's passes, in ms. */
  avg_ms: number;
}

/** Reconciler passes (every reconciler, every org) started in [since, until), per hour from `since`. */
export async function countPassesByHour(tx: Tx, since: Date, until: Date): Promise<PassHour[]> {
  const { rows } = await tx.query<PassHour>(
    `SELECT floor(extract(epoch FROM started_at - $1::timestamptz) / 3600)::int AS bucket, count(*)::int AS passes,
            count(*) FILTER (WHERE error IS NOT NULL)::int AS errors, round(avg(duration_ms))::int AS avg_ms
       FROM ${tx.schema.reconciler_passes}
      WHERE started_at >= $1 AND started_at < $2
      GROUP BY 1 ORDER BY 1`,
    [since, until],
  );
  return rows;
}

/** One integration's work-item metrics of one UTC day, as its latest generation computed them. */
export interface MetricsDayRow {
  integration_id: string;
  integration_name: string;
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  computed_at: Date;
  items_created: number;
  items_completed: number;
  wip: number;
  cycle_time_p50_hours: number | null;
  cycle_time_p90_hours: number | null;
  prs_merged: number;
  pr_time_to_merge_p50_hours: number | null;
}

/**
 * The latest generation of work_item_metrics_daily per integration of the org and UTC day in
 * [firstDay, lastDay], by day then integration name.
 */
export async function latestMetricsDays(
  tx: Tx,
  orgId: string,
  firstDay: string,
  lastDay: string,
): Promise<MetricsDayRow[]> {
  const s = tx.schema;
  const { rows } = await tx.query<MetricsDayRow>(
    `SELECT * FROM (
       SELECT DISTINCT ON (m.integration_id, m.day)
              m.integration_id, i.name AS integration_name, m.day::text AS day, m.computed_at,
              m.items_created, m.items_completed, m.wip, m.cycle_time_p50_hours, m.cycle_time_p90_hours,
              m.prs_merged, m.pr_time_to_merge_p50_hours
         FROM ${s.table('work_item_metrics_daily')} m
         JOIN ${s.integrations} i ON i.id = m.integration_id AND i.org_id = m.org_id
        WHERE m.org_id = $1 AND m.day >= $2::date AND m.day <= $3::date
        ORDER BY m.integration_id, m.day, m.computed_at DESC
     ) latest ORDER BY day, integration_name, integration_id`,
    [orgId, firstDay, lastDay],
  );
  return rows;
}
