/** sync_run_post_dispatches (the once-only ledger) and post_sync_receipts. */
import type { Tx } from '../db/types.js';

/** Records that the run's post-sync was armed. Locks: the new row. Returns true only the first time. */
export async function insertLedgerRow(tx: Tx, orgId: string, runId: string, kind: string, now: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO ${tx.schema.sync_run_post_dispatches} (org_id, sync_run_id, kind, dispatched_at)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (sync_run_id, kind) DO NOTHING`,
    [orgId, runId, kind, now],
  );
  return rowCount > 0;
}

/**
 * Claims the right to run `handler` for the run. Locks: the receipt row until commit.
 * Returns true for the first caller only; a duplicate delivery gets false and does nothing.
 */
export async function insertReceipt(
  tx: Tx,
  orgId: string,
  runId: string,
  handler: string,
  delivery: string,
  now: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO ${tx.schema.post_sync_receipts} (org_id, sync_run_id, handler, delivery, created_at)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (sync_run_id, handler) DO NOTHING`,
    [orgId, runId, handler, delivery, now],
  );
  return rowCount > 0;
}
