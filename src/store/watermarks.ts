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
 * Moves the watermarks of a source's `datasetKeys` (a unit's dataset and those it carries) forward,
 * never back, in one statement. Locks: those watermark rows. Returns how many moved.
 */
export async function advanceWatermark(
  tx: Tx,
  w: { orgId: string; integrationId: string; sourceId: string; datasetKeys: readonly string[]; at: Date },
  now: Date,
): Promise<number> {
  const { rowCount } = await tx.query(
    `INSERT INTO ${tx.schema.sync_watermarks} (org_id, integration_id, source_id, dataset_key, watermark_at, updated_at)
     SELECT $1, $2, $3, k, $5, $6 FROM unnest($4::text[]) AS k ORDER BY k
     ON CONFLICT (org_id, integration_id, source_id, dataset_key) DO UPDATE
       SET watermark_at = EXCLUDED.watermark_at, updated_at = EXCLUDED.updated_at
       WHERE sync_watermarks.watermark_at < EXCLUDED.watermark_at`,
    [w.orgId, w.integrationId, w.sourceId, [...new Set(w.datasetKeys)], w.at, now],
  );
  return rowCount;
}
