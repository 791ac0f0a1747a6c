/** api_tokens: bearer tokens of one org, stored only as their SHA-256. */
import type { Tx } from '../db/types.js';

export type ApiScope = 'read' | 'trigger' | 'admin';

/** A token as listed (never with its hash). */
export interface ApiTokenRow {
  id: string;
  org_id: string;
  name: string;
  scopes: ApiScope[];
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const COLUMNS = 'id, org_id, name, scopes, created_at, revoked_at, last_used_at';

/** Inserts a token by its hash. Locks nothing existing. Returns the row. */
export async function insertApiToken(
  tx: Tx,
  t: { orgId: string; name: string; tokenHash: string; scopes: readonly ApiScope[] },
  now: Date,
): Promise<ApiTokenRow> {
  const { rows } = await tx.query<ApiTokenRow>(
    `INSERT INTO ${tx.schema.api_tokens} (org_id, name, token_hash, scopes, created_at)
     VALUES ($1, $2, $3, $4::text[], $5) RETURNING ${COLUMNS}`,
    [t.orgId, t.name, t.tokenHash, t.scopes, now],
  );
  return rows[0]!;
}

/**
 * The live (unrevoked) token with this hash, stamping `last_used_at` when it is older than
 * `touchAfterMs` (so a busy token is written at most once per interval).
 * Locks: the token row, only when it stamps it. Returns the token as it was read, or null.
 */
export async function authenticateTokenHash(
  tx: Tx,
  tokenHash: string,
  now: Date,
  touchAfterMs: number,
): Promise<ApiTokenRow | null> {
  const s = tx.schema;
  const { rows } = await tx.query<ApiTokenRow>(
    `WITH t AS (SELECT ${COLUMNS} FROM ${s.api_tokens} WHERE token_hash = $1 AND revoked_at IS NULL),
          touched AS (
            UPDATE ${s.api_tokens} SET last_used_at = $2
             WHERE id IN (SELECT id FROM t
                           WHERE last_used_at IS NULL
                              OR last_used_at < $2::timestamptz - make_interval(secs => $3::float8 / 1000))
            RETURNING id)
     SELECT t.* FROM t`,
    [tokenHash, now, touchAfterMs],
  );
  return rows[0] ?? null;
}

/** The org's tokens (revoked ones included), oldest first. Locks nothing. */
export async function listApiTokens(tx: Tx, orgId: string): Promise<ApiTokenRow[]> {
  const { rows } = await tx.query<ApiTokenRow>(
    `SELECT ${COLUMNS} FROM ${tx.schema.api_tokens} WHERE org_id = $1 ORDER BY created_at, id`,
    [orgId],
  );
  return rows;
}

/** One token by id (optionally of one org). Locks nothing. */
export async function getApiToken(tx: Tx, id: string, orgId?: string): Promise<ApiTokenRow | null> {
  const { rows } = await tx.query<ApiTokenRow>(
    `SELECT ${COLUMNS} FROM ${tx.schema.api_tokens} WHERE id = $1 AND ($2::text IS NULL OR org_id = $2)`,
    [id, orgId ?? null],
  );
  return rows[0] ?? null;
}

/**
 * Revokes a live token (optionally of one org). Locks: the token row.
 * Returns the revoked token, or null when there is no such live token.
 */
export async function revokeApiToken(tx: Tx, id: string, now: Date, orgId?: string): Promise<ApiTokenRow | null> {
  const { rows } = await tx.query<ApiTokenRow>(
    `UPDATE ${tx.schema.api_tokens} SET revoked_at = $2
      WHERE id = $1 AND revoked_at IS NULL AND ($3::text IS NULL OR org_id = $3)
      RETURNING ${COLUMNS}`,
    [id, now, orgId ?? null],
  );
  return rows[0] ?? null;
}
