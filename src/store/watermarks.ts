/** sync_watermarks: forward-only per (integration, source, dataset). */
import type { Tx } from '../db/types.js';

/** Watermarks of an integration, keyed `${source_id}/${dataset_key}`. Locks nothing. */
export async function loadWatermarks(tx: Tx, integrationId: string): Promise<Map<string, Date>> {
  const { rows } = await tx.query<{ source_id: string; dataset_key: string; watermark_at: Date }>(
    `SELECT source_id, dataset_key, watermark_at FROM ${tx.schema.sync_watermarks} WHERE integration_id = $1`,
    [integrationId],
  );
  return new Map(rows.map((r) => [`${r.source_id}/${r.dataset_key}`, r.watermark_at]));
}

/**
 * Moves a watermark forward (never back). Locks: the watermark row.
 * Returns whether it moved.
 */
export async function advanceWatermark(
  tx: Tx,
  w: { orgId: string; integrationId: string; sourceId: string; datasetKey: string; at: Date },
  now: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO ${tx.schema.sync_watermarks} (org_id, integration_id, source_id, dataset_key, watermark_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (org_id, integration_id, source_id, dataset_key) DO UPDATE
       SET watermark_at = EXCLUDED.watermark_at, updated_at = EXCLUDED.updated_at
       WHERE sync_watermarks.watermark_at < EXCLUDED.watermark_at`,
    [w.orgId, w.integrationId, w.sourceId, w.datasetKey, w.at, now],
  );
  return rowCount > 0;
}
