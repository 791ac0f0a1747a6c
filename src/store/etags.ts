/**
 * provider_etags: the entity tag a provider's request was last answered with, per (integration,
 * request key), for the conditional request of its next poll (`If-None-Match`; an unchanged answer
 * comes back as a 304). Shared by every worker process; deleted with the integration (ON DELETE
 * CASCADE). What a key names and when a tag may be recorded is the provider's (e.g.
 * src/providers/github/conditional.ts).
 */
import type { Tx } from '../db/types.js';

/** What is stored for one request of an integration that exists. */
export interface StoredEtag {
  /** The ETag last recorded for the request; null when none is. */
  etag: string | null;
}

/**
 * The ETag stored for `requestKey` of the integration, or null when the integration does not exist
 * (deleted under a running unit, or never stored): it keeps no ETags. Locks nothing.
 */
export async function readProviderEtag(tx: Tx, integrationId: string, requestKey: string): Promise<StoredEtag | null> {
  const s = tx.schema;
  const { rows } = await tx.query<{ etag: string | null }>(
    `SELECT e.etag FROM ${s.integrations} i
       LEFT JOIN ${s.provider_etags} e ON e.integration_id = i.id AND e.request_key = $2
      WHERE i.id = $1`,
    [integrationId, requestKey],
  );
  const row = rows[0];
  return row ? { etag: row.etag } : null;
}

/**
 * Records `etag` as the one `requestKey` of the integration was answered with, replacing the one
 * stored; nothing when the integration is gone (a concurrent delete is waited for, then nothing is
 * written). Locks: the integration row (KEY SHARE, as its foreign key would) and the ETag's row.
 * Returns whether it recorded the tag.
 */
export async function recordProviderEtag(
  tx: Tx,
  integrationId: string,
  requestKey: string,
  etag: string,
  at: Date,
): Promise<boolean> {
  const s = tx.schema;
  const { rows } = await tx.query(
    `INSERT INTO ${s.provider_etags} AS e (integration_id, request_key, etag, updated_at)
     SELECT i.id, $2, $3, $4 FROM ${s.integrations} i WHERE i.id = $1 FOR KEY SHARE
     ON CONFLICT (integration_id, request_key) DO UPDATE SET etag = EXCLUDED.etag, updated_at = EXCLUDED.updated_at
     RETURNING 1`,
    [integrationId, requestKey, etag, at],
  );
  return rows.length > 0;
}

/** The integration's ETags by request key. Locks nothing. */
export async function listProviderEtags(tx: Tx, integrationId: string): Promise<Map<string, string>> {
  const { rows } = await tx.query<{ request_key: string; etag: string }>(
    `SELECT request_key, etag FROM ${tx.schema.provider_etags} WHERE integration_id = $1 ORDER BY request_key`,
    [integrationId],
  );
  return new Map(rows.map((r) => [r.request_key, r.etag]));
}
