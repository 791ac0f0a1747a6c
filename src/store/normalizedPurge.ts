/** Purging an integration's synced data from the normalized tables and its work-item metrics. */
import type { Tx } from '../db/types.js';

/** Every table that holds an integration's synced data (keyed by org_id, integration_id). */
export const NORMALIZED_DATA_TABLES = [
  'repositories',
  'teams',
  'members',
  'projects',
  'sprints',
  'work_items',
  'work_item_comments',
  'work_item_events',
  'pull_requests',
  'pull_request_reviews',
  'commits',
  'work_item_metrics_daily',
] as const;

export type PurgedRows = Record<(typeof NORMALIZED_DATA_TABLES)[number], number>;

/**
 * One statement: deletes the integration's rows from every normalized table and its daily
 * metrics. Locks the rows it deletes; returns how many went from each table.
 */
export async function purgeNormalizedData(tx: Tx, orgId: string, integrationId: string): Promise<PurgedRows> {
  const s = tx.schema;
  const ctes = NORMALIZED_DATA_TABLES.map(
    (t) => `${t} AS (DELETE FROM ${s.table(t)} WHERE org_id = $1 AND integration_id = $2::uuid RETURNING 1)`,
  );
  const counts = NORMALIZED_DATA_TABLES.map((t) => `(SELECT count(*) FROM ${t})::int AS ${t}`);
  const { rows } = await tx.query<PurgedRows>(`WITH ${ctes.join(',\n')} SELECT ${counts.join(', ')}`, [
    orgId,
    integrationId,
  ]);
  return rows[0]!;
}
