/** work_item_metrics_daily: the work-item-metrics handler's reads of the normalized tables and its inserts. */
import type { Tx } from '../db/types.js';
import type { WorkItemStatus } from '../sdk/normalized.js';

/**
 * Whether the integration (of `orgId`) still exists, locking its row FOR KEY SHARE until the
 * transaction ends: a deletion of the integration (FOR UPDATE) waits for this transaction, or this
 * one waits for it and finds the row gone. Returns true when it exists.
 */
export async function holdIntegration(tx: Tx, orgId: string, integrationId: string): Promise<boolean> {
  const { rows } = await tx.query(
    `SELECT 1 FROM ${tx.schema.integrations} WHERE id = $1::uuid AND org_id = $2 FOR KEY SHARE`,
    [integrationId, orgId],
  );
  return rows.length > 0;
}

/**
 * When the integration's first work item or pull request was created (null when it has none);
 * deleted ones (deleted_at set) are not counted.
 * Takes no locks; returns one timestamp.
 */
export async function firstItemAt(tx: Tx, orgId: string, integrationId: string): Promise<Date | null> {
  const s = tx.schema;
  const { rows } = await tx.query<{ at: Date | null }>(
    `SELECT least(
              (SELECT min(created_at) FROM ${s.table('work_items')}
                WHERE org_id = $1 AND integration_id = $2::uuid AND deleted_at IS NULL),
              (SELECT min(created_at) FROM ${s.table('pull_requests')}
                WHERE org_id = $1 AND integration_id = $2::uuid AND deleted_at IS NULL)
            ) AS at`,
    [orgId, integrationId],
  );
  return rows[0]?.at ?? null;
}

export interface MetricsGeneration {
  orgId: string;
  integrationId: string;
  /** First and last UTC day (`YYYY-MM-DD`), both included. */
  firstDay: string;
  lastDay: string;
  computedAt: Date;
}

/** Work-item statuses (the normalized store's, not the engine's) an item has ended in. */
const ENDED_STATUSES: readonly WorkItemStatus[] = ['done', 'cancelled'];
const DONE_STATUS: WorkItemStatus = 'done';

/**
 * One INSERT … SELECT: a row per UTC day of [firstDay, lastDay], all with `computedAt`, computed
 * from the integration's work_items and pull_requests that are not deleted (see
 * docs/normalized-store.md for each figure). An item's end is its completed_at when done or
 * cancelled (updated_at, then created_at, when completed_at is missing); todo / in_progress items
 * have not ended. A generation another handler wrote at the same instant (two runs of the
 * integration ending side by side) takes these figures: locks those rows. Returns rows written.
 */
export async function insertMetricsGeneration(tx: Tx, g: MetricsGeneration): Promise<number> {
  const s = tx.schema;
  const res = await tx.query(
    `WITH items AS (
       SELECT (created_at AT TIME ZONE 'UTC')::date AS created_day,
              CASE WHEN status = ANY($6::text[])
                   THEN (coalesce(completed_at, updated_at, created_at) AT TIME ZONE 'UTC')::date END AS ended_day,
              CASE WHEN status = $7 THEN (completed_at AT TIME ZONE 'UTC')::date END AS done_day,
              greatest(0, extract(epoch FROM completed_at - coalesce(started_at, created_at)))::float8 / 3600
                AS cycle_hours
         FROM ${s.table('work_items')}
        WHERE org_id = $1 AND integration_id = $2::uuid AND deleted_at IS NULL
     ),
     days AS (
       SELECT gs::date AS day FROM generate_series($3::date, $4::date, interval '1 day') AS gs
     ),
     -- An item is open at the end of the days [created_day, ended_day): +1 on the first, −1 on the last.
     wip_deltas AS (
       SELECT created_day AS day, count(*) AS delta FROM items
        WHERE created_day <= $4::date AND (ended_day IS NULL OR ended_day > created_day) GROUP BY 1
       UNION ALL
       SELECT ended_day, -count(*) FROM items
        WHERE ended_day > created_day AND ended_day <= $4::date GROUP BY 1
     ),
     completed AS (
       SELECT done_day AS day, count(*) AS n,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY cycle_hours) AS p50,
              percentile_cont(0.9) WITHIN GROUP (ORDER BY cycle_hours) AS p90
         FROM items WHERE done_day BETWEEN $3::date AND $4::date GROUP BY 1
     ),
     merged AS (
       SELECT (merged_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n,
              percentile_cont(0.5) WITHIN GROUP (
                ORDER BY greatest(0, extract(epoch FROM merged_at - created_at))::float8 / 3600) AS p50
         FROM ${s.table('pull_requests')}
        WHERE org_id = $1 AND integration_id = $2::uuid AND deleted_at IS NULL
          AND merged_at >= $3::date::timestamp AT TIME ZONE 'UTC'
          AND merged_at < ($4::date + 1)::timestamp AT TIME ZONE 'UTC'
        GROUP BY 1
     )
     INSERT INTO ${s.table('work_item_metrics_daily')}
       (org_id, integration_id, day, computed_at, items_created, items_completed, wip,
        cycle_time_p50_hours, cycle_time_p90_hours, prs_merged, pr_time_to_merge_p50_hours)
     SELECT $1, $2::uuid, d.day, $5::timestamptz,
            (SELECT count(*) FROM items i WHERE i.created_day = d.day)::int,
            coalesce(c.n, 0)::int,
            (SELECT coalesce(sum(w.delta), 0) FROM wip_deltas w WHERE w.day <= d.day)::int,
            c.p50, c.p90,
            coalesce(m.n, 0)::int, m.p50
       FROM days d
       LEFT JOIN completed c ON c.day = d.day
       LEFT JOIN merged m ON m.day = d.day
      ORDER BY d.day
     ON CONFLICT (org_id, integration_id, day, computed_at) DO UPDATE SET
       items_created = EXCLUDED.items_created, items_completed = EXCLUDED.items_completed, wip = EXCLUDED.wip,
       cycle_time_p50_hours = EXCLUDED.cycle_time_p50_hours, cycle_time_p90_hours = EXCLUDED.cycle_time_p90_hours,
       prs_merged = EXCLUDED.prs_merged, pr_time_to_merge_p50_hours = EXCLUDED.pr_time_to_merge_p50_hours`,
    [g.orgId, g.integrationId, g.firstDay, g.lastDay, g.computedAt, ENDED_STATUSES, DONE_STATUS],
  );
  return res.rowCount;
}
