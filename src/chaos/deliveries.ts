/**
 * How a chaos run counts the post_sync deliveries of a provider's runs the way it counts the
 * synthetic ones: the engine processes add this handler for every integration that is not
 * synthetic, and each delivery appends one generation row (`computed_at` = the handler's clock)
 * to synthetic_metrics_daily in the handler's own transaction — beside work-item-metrics, so a
 * delivery that rolls back leaves no row. A chaos hook, in the chaos run's own database only.
 */
import type { Tx } from '../db/types.js';
import type { PostSyncHandler, PostSyncPayload } from '../sdk/types.js';

/** One row for one delivery. Takes no row locks; returns nothing. */
async function recordDelivery(tx: Tx, payload: PostSyncPayload, at: Date): Promise<void> {
  const table = tx.schema.table('synthetic_metrics_daily');
  await tx.query(
    `INSERT INTO ${table} (org_id, integration_id, sync_run_id, day, items, computed_at)
     VALUES ($1, $2::uuid, $3::uuid, ($4::timestamptz AT TIME ZONE 'UTC')::date, 0, $4::timestamptz)`,
    [payload.orgId, payload.integrationId, payload.runId, at],
  );
}

export const chaosDeliveryHandler: PostSyncHandler = {
  name: 'chaos-deliveries',
  appliesTo: (integration) => integration.provider !== 'synthetic',
  run: (payload, ctx) => recordDelivery(ctx.tx, payload, ctx.clock.now()),
};
