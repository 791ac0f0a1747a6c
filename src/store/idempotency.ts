/** idempotency_keys: the first answer to a request carrying an Idempotency-Key. */
import type { Tx } from '../db/types.js';

export interface IdempotencyRecord {
  org_id: string;
  key: string;
  request_hash: string;
  status_code: number;
  response: unknown;
  created_at: Date;
}

/**
 * Serialises requests carrying the same key of one org until the caller's transaction ends.
 * Locks: a transaction-scoped advisory lock on (org, key). Returns nothing.
 */
export async function lockIdempotencyKey(tx: Tx, orgId: string, key: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    JSON.stringify([tx.schema.lockKey('idempotency'), orgId, key]),
  ]);
}

/** The recorded answer for (org, key), if any. Locks nothing. */
export async function getIdempotencyRecord(tx: Tx, orgId: string, key: string): Promise<IdempotencyRecord | null> {
  const { rows } = await tx.query<IdempotencyRecord>(
    `SELECT * FROM ${tx.schema.idempotency_keys} WHERE org_id = $1 AND key = $2`,
    [orgId, key],
  );
  return rows[0] ?? null;
}

/**
 * Records the answer, in the transaction that produced its effect; an existing record wins.
 * Locks: the new row. Returns whether it was inserted.
 */
export async function insertIdempotencyRecord(
  tx: Tx,
  r: { orgId: string; key: string; requestHash: string; statusCode: number; response: unknown },
  now: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO ${tx.schema.idempotency_keys} (org_id, key, request_hash, status_code, response, created_at)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6) ON CONFLICT (org_id, key) DO NOTHING`,
    [r.orgId, r.key, r.requestHash, r.statusCode, JSON.stringify(r.response), now],
  );
  return rowCount > 0;
}

/** Deletes records older than `before`, at most `batch`. Locks: those rows. Returns how many. */
export async function pruneIdempotencyRecords(tx: Tx, before: Date, batch: number): Promise<number> {
  const s = tx.schema;
  const { rowCount } = await tx.query(
    `DELETE FROM ${s.idempotency_keys} WHERE (org_id, key) IN (
       SELECT org_id, key FROM ${s.idempotency_keys} WHERE created_at < $1 ORDER BY created_at LIMIT $2)`,
    [before, batch],
  );
  return rowCount;
}
