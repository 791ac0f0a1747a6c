/** The synthetic provider's built-in post-sync handler: a daily item-count roll-up. */
import type { Tx } from '../../db/types.js';
import type { PostSyncHandler, PostSyncPayload } from '../../sdk/types.js';

export const METRICS_ROLLUP = 'metrics-rollup';

/**
 * Appends one generation of daily counts: a row per day of the payload window (per day present in
 * synthetic_items when the window is unbounded), all with one `computed_at`. Readers that sum every
 * generation see exactly the deliveries that ran — which is what post_sync delivery modes control.
 */
export const metricsRollupHandler: PostSyncHandler = {
  name: METRICS_ROLLUP,
  appliesTo: (integration) => integration.provider === 'synthetic',
  async run(payload, ctx) {
    await insertDailyMetrics(ctx.tx, payload, ctx.clock.now());
  },
};

/**
 * One INSERT … SELECT: days come from the window (UTC, partial days count) or, for a NULL window,
 * from the integration's items; counts read synthetic_items. Takes no row locks; returns rows inserted.
 */
export async function insertDailyMetrics(tx: Tx, payload: PostSyncPayload, computedAt: Date): Promise<number> {
  const { from, to } = payload.window;
  const bounded = from !== null && to !== null;
  const s = tx.schema;
  const items = s.table('synthetic_items');
  const res = await tx.query(
    `INSERT INTO ${s.table('synthetic_metrics_daily')} (org_id, integration_id, sync_run_id, day, items, computed_at)
     SELECT $1, $2::uuid, $3::uuid, d.day,
            (SELECT count(*) FROM ${items} i
              WHERE i.org_id = $1 AND i.integration_id = $2::uuid AND i.item_day = d.day)::int,
            $6::timestamptz
       FROM (
         SELECT gs::date AS day
           FROM generate_series(date_trunc('day', $4::timestamptz AT TIME ZONE 'UTC'),
                                ($5::timestamptz - interval '1 microsecond') AT TIME ZONE 'UTC',
                                interval '1 day') AS gs
          WHERE $7::boolean
         UNION
         SELECT DISTINCT s.item_day FROM ${items} s
          WHERE NOT $7::boolean AND s.org_id = $1 AND s.integration_id = $2::uuid
       ) AS d
      ORDER BY d.day`,
    [payload.orgId, payload.integrationId, payload.runId, from, to, computedAt, bounded],
  );
  return res.rowCount;
}
