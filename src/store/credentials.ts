/** integration_credentials: one encrypted secret per integration (ciphertext, nonce, tag, key id). */
import type { Tx } from '../db/types.js';

export interface CredentialRow {
  id: string;
  org_id: string;
  integration_id: string;
  version: number;
  key_id: string;
  nonce: Uint8Array;
  ciphertext: Uint8Array;
  auth_tag: Uint8Array;
  created_at: Date;
  updated_at: Date;
}

/** The encrypted parts, as written. */
export interface SealedColumns {
  keyId: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

/**
 * Stores the integration's credential, replacing any (its version goes up, its id stays).
 * Locks: the credential row. Returns it.
 */
export async function upsertCredential(
  tx: Tx,
  c: { orgId: string; integrationId: string; sealed: SealedColumns },
  now: Date,
): Promise<CredentialRow> {
  const t = tx.schema.integration_credentials;
  const { rows } = await tx.query<CredentialRow>(
    `INSERT INTO ${t} AS c (org_id, integration_id, key_id, nonce, ciphertext, auth_tag, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
     ON CONFLICT (integration_id) DO UPDATE
       SET version = c.version + 1, key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce,
           ciphertext = EXCLUDED.ciphertext, auth_tag = EXCLUDED.auth_tag, updated_at = EXCLUDED.updated_at
     RETURNING *`,
    [c.orgId, c.integrationId, c.sealed.keyId, c.sealed.nonce, c.sealed.ciphertext, c.sealed.tag, now],
  );
  return rows[0]!;
}

/** Removes the integration's credential. Locks: that row. Returns whether there was one. */
export async function deleteCredential(tx: Tx, orgId: string, integrationId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `DELETE FROM ${tx.schema.integration_credentials} WHERE org_id = $1 AND integration_id = $2`,
    [orgId, integrationId],
  );
  return rowCount > 0;
}

/** The integration's credential row, if any. Locks nothing. */
export async function getCredential(tx: Tx, integrationId: string): Promise<CredentialRow | null> {
  const { rows } = await tx.query<CredentialRow>(
    `SELECT * FROM ${tx.schema.integration_credentials} WHERE integration_id = $1`,
    [integrationId],
  );
  return rows[0] ?? null;
}

/** The distinct key ids the stored credentials were encrypted under. Locks nothing. */
export async function listCredentialKeyIds(tx: Tx): Promise<string[]> {
  const { rows } = await tx.query<{ key_id: string }>(
    `SELECT DISTINCT key_id FROM ${tx.schema.integration_credentials} ORDER BY key_id`,
  );
  return rows.map((r) => r.key_id);
}

/**
 * Every credential not encrypted under `keyId`, for re-encryption. Locks: those rows FOR UPDATE
 * (until the caller's transaction ends). Returns them.
 */
export async function lockCredentialsNotUnder(tx: Tx, keyId: string): Promise<CredentialRow[]> {
  const { rows } = await tx.query<CredentialRow>(
    `SELECT * FROM ${tx.schema.integration_credentials} WHERE key_id <> $1 ORDER BY id FOR UPDATE`,
    [keyId],
  );
  return rows;
}

/**
 * Replaces a credential's ciphertext with the same secret under another key (version and
 * updated_at unchanged: the secret did not change). Locks: that row. Returns whether it changed.
 */
export async function reencryptCredential(
  tx: Tx,
  id: string,
  fromKeyId: string,
  sealed: SealedColumns,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.integration_credentials}
        SET key_id = $3, nonce = $4, ciphertext = $5, auth_tag = $6
      WHERE id = $1 AND key_id = $2`,
    [id, fromKeyId, sealed.keyId, sealed.nonce, sealed.ciphertext, sealed.tag],
  );
  return rowCount > 0;
}

/**
 * The integration's credential row, for a change of its secret by the provider (a rotated refresh
 * token). Locks: that row FOR UPDATE until the caller's transaction ends (a second refresher waits
 * here, then reads what the first one stored). Returns it, or null when the integration has none.
 */
export async function lockCredential(tx: Tx, integrationId: string): Promise<CredentialRow | null> {
  const { rows } = await tx.query<CredentialRow>(
    `SELECT * FROM ${tx.schema.integration_credentials} WHERE integration_id = $1 FOR UPDATE`,
    [integrationId],
  );
  return rows[0] ?? null;
}

/**
 * Replaces the secret of the credential `id` at `version` with one the provider issued in its place
 * (a rotated token: the same grant, so the version, which names the grant, stays). Locks: that row.
 * Returns whether it changed (false when the row was replaced or removed meanwhile).
 */
export async function replaceCredentialSecret(
  tx: Tx,
  c: { id: string; version: number; sealed: SealedColumns },
  now: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.integration_credentials}
        SET key_id = $3, nonce = $4, ciphertext = $5, auth_tag = $6, updated_at = $7
      WHERE id = $1 AND version = $2`,
    [c.id, c.version, c.sealed.keyId, c.sealed.nonce, c.sealed.ciphertext, c.sealed.tag, now],
  );
  return rowCount > 0;
}
