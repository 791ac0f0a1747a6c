/**
 * webhook_named_items: the work items webhook deliveries named since they were last read, per
 * (integration, source). A provider whose listing lags (Jira's search) reads them directly.
 */
import type { Tx } from '../db/types.js';

export interface NamedItemKey {
  orgId: string;
  integrationId: string;
  sourceId: string;
  externalId: string;
}

/**
 * Records that a delivery named the item at `now` (a later naming moves `received_at` forward).
 * Locks: that row. Returns nothing.
 */
export async function nameItem(tx: Tx, k: NamedItemKey, now: Date): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.schema.webhook_named_items} AS n (integration_id, source_id, org_id, external_id, received_at)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (integration_id, source_id, external_id) DO UPDATE
       SET received_at = greatest(n.received_at, EXCLUDED.received_at)`,
    [k.integrationId, k.sourceId, k.orgId, k.externalId, now],
  );
}

/**
 * Up to `limit` items of the source named no later than `upTo`, oldest naming first. Locks nothing.
 * Returns their external ids.
 */
export async function listNamedItems(
  tx: Tx,
  scope: { integrationId: string; sourceId: string },
  upTo: Date,
  limit: number,
): Promise<string[]> {
  const { rows } = await tx.query<{ external_id: string }>(
    `SELECT external_id FROM ${tx.schema.webhook_named_items}
      WHERE integration_id = $1 AND source_id = $2 AND received_at <= $3
      ORDER BY received_at, external_id
      LIMIT $4`,
    [scope.integrationId, scope.sourceId, upTo, limit],
  );
  return rows.map((r) => r.external_id);
}

/**
 * Forgets the source's items `ids` named no later than `upTo` (one named again since stays).
 * Locks: those rows. Returns how many were forgotten.
 */
export async function forgetNamedItems(
  tx: Tx,
  scope: { integrationId: string; sourceId: string },
  ids: readonly string[],
  upTo: Date,
): Promise<number> {
  const { rowCount } = await tx.query(
    `DELETE FROM ${tx.schema.webhook_named_items}
      WHERE integration_id = $1 AND source_id = $2 AND external_id = ANY($3::text[]) AND received_at <= $4`,
    [scope.integrationId, scope.sourceId, [...ids], upTo],
  );
  return rowCount;
}

/**
 * Deletes up to `limit` rows named before `cutoff` (sources no run reads any more), oldest first.
 * Locks: those rows. Returns how many.
 */
export async function pruneNamedItems(tx: Tx, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await tx.query(
    `DELETE FROM ${tx.schema.webhook_named_items} WHERE ctid IN (
       SELECT ctid FROM ${tx.schema.webhook_named_items} WHERE received_at < $1 ORDER BY received_at LIMIT $2)`,
    [cutoff, limit],
  );
  return rowCount;
}
