/**
 * work_items.started_at derived from stored work_item_events: the statements the normalized sink
 * runs around a write of work items or of their events, whichever arrives first.
 */
import type { Tx } from '../db/types.js';

/** A work item of one integration: (org_id, integration_id, external_id). */
export interface WorkItemKey {
  orgId: string;
  integrationId: string;
  externalId: string;
}

/** What counts as a start: events of `provider` and `kind` whose `to_value` (lower case, trimmed) is in `values`. */
export interface StartRule {
  provider: string;
  kind: string;
  values: readonly string[];
}

/**
 * Serialises the writers of these items' rows and of their events until the caller's transaction
 * ends, so that of two concurrent writes (items, events) the later one sees the other's rows.
 * Locks: one transaction-scoped advisory lock per item, taken in the order of their hashes (no
 * deadlock between writers). Returns nothing.
 */
export async function lockWorkItemStarts(tx: Tx, keys: readonly WorkItemKey[]): Promise<void> {
  if (keys.length === 0) return;
  const names = keys.map((k) =>
    JSON.stringify([tx.schema.lockKey('work-item-start'), k.orgId, k.integrationId, k.externalId]),
  );
  // pg_advisory_xact_lock is volatile: PostgreSQL evaluates it after the sort, in `h` order.
  await tx.query(
    `SELECT pg_advisory_xact_lock(h)
       FROM (SELECT DISTINCT hashtextextended(name, 0) AS h FROM unnest($1::text[]) AS name) AS locks
      ORDER BY h`,
    [names],
  );
}

/**
 * Moves each item's started_at to its first stored start event (by `rule`) when that is earlier
 * than the stored value or there is none; never later, never to null, and only on rows of
 * `rule.provider`. Items not stored yet are left to their own write. Locks: the work_items rows
 * it updates. Returns how many it updated.
 */
export async function advanceWorkItemStarts(tx: Tx, keys: readonly WorkItemKey[], rule: StartRule): Promise<number> {
  if (keys.length === 0) return 0;
  const s = tx.schema;
  const res = await tx.query(
    `WITH keys AS (
       SELECT DISTINCT k.org_id, k.integration_id, k.external_id
         FROM unnest($1::text[], $2::uuid[], $3::text[]) AS k(org_id, integration_id, external_id)
     ),
     firsts AS (
       SELECT k.org_id, k.integration_id, k.external_id, min(e.occurred_at) AS first_at
         FROM keys k
         JOIN ${s.table('work_item_events')} e
           ON e.org_id = k.org_id AND e.integration_id = k.integration_id AND e.provider = $4
          AND e.work_item_external_id = k.external_id
        WHERE e.kind = $5 AND lower(btrim(e.to_value)) = ANY($6::text[]) AND e.occurred_at IS NOT NULL
        GROUP BY k.org_id, k.integration_id, k.external_id
     )
     UPDATE ${s.table('work_items')} w
        SET started_at = f.first_at
       FROM firsts f
      WHERE w.org_id = f.org_id AND w.integration_id = f.integration_id AND w.provider = $4
        AND w.external_id = f.external_id
        AND (w.started_at IS NULL OR f.first_at < w.started_at)`,
    [
      keys.map((k) => k.orgId),
      keys.map((k) => k.integrationId),
      keys.map((k) => k.externalId),
      rule.provider,
      rule.kind,
      rule.values,
    ],
  );
  return res.rowCount;
}
