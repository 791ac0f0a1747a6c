/**
 * webhook_secrets: one encrypted webhook secret per integration, and the one it replaced while that
 * is still accepted. Only ciphertext, nonce, tag and key id are stored (src/secrets/webhookSecrets.ts).
 */
import type { Tx } from '../db/types.js';
import type { SealedColumns } from './credentials.js';

export interface WebhookSecretRow {
  integration_id: string;
  org_id: string;
  version: number;
  key_id: string;
  nonce: Uint8Array;
  ciphertext: Uint8Array;
  auth_tag: Uint8Array;
  previous_key_id: string | null;
  previous_nonce: Uint8Array | null;
  previous_ciphertext: Uint8Array | null;
  previous_auth_tag: Uint8Array | null;
  previous_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewWebhookSecret {
  orgId: string;
  integrationId: string;
  sealed: SealedColumns;
}

/**
 * Stores the integration's first webhook secret; does nothing when it has one.
 * Locks: the inserted row (or waits on a concurrent insert of it). Returns the row, or null when one existed.
 */
export async function insertWebhookSecret(tx: Tx, s: NewWebhookSecret, now: Date): Promise<WebhookSecretRow | null> {
  const { rows } = await tx.query<WebhookSecretRow>(
    `INSERT INTO ${tx.schema.webhook_secrets}
       (integration_id, org_id, key_id, nonce, ciphertext, auth_tag, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
     ON CONFLICT (integration_id) DO NOTHING
     RETURNING *`,
    [s.integrationId, s.orgId, s.sealed.keyId, s.sealed.nonce, s.sealed.ciphertext, s.sealed.tag, now],
  );
  return rows[0] ?? null;
}

/**
 * Replaces the integration's webhook secret (or stores its first): the one it replaces is kept as the
 * previous secret, accepted until `graceUntil`; an older previous one is dropped.
 * Locks: the secret row. Returns it.
 */
export async function rotateWebhookSecret(
  tx: Tx,
  s: NewWebhookSecret,
  graceUntil: Date,
  now: Date,
): Promise<WebhookSecretRow> {
  const { rows } = await tx.query<WebhookSecretRow>(
    `INSERT INTO ${tx.schema.webhook_secrets} AS w
       (integration_id, org_id, key_id, nonce, ciphertext, auth_tag, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
     ON CONFLICT (integration_id) DO UPDATE SET
       version = w.version + 1,
       previous_key_id = w.key_id, previous_nonce = w.nonce,
       previous_ciphertext = w.ciphertext, previous_auth_tag = w.auth_tag, previous_expires_at = $8,
       key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce, ciphertext = EXCLUDED.ciphertext,
       auth_tag = EXCLUDED.auth_tag, updated_at = EXCLUDED.updated_at
     RETURNING *`,
    [s.integrationId, s.orgId, s.sealed.keyId, s.sealed.nonce, s.sealed.ciphertext, s.sealed.tag, now, graceUntil],
  );
  return rows[0]!;
}

/** The integration's webhook secret row, if any. Locks nothing. */
export async function getWebhookSecret(tx: Tx, integrationId: string): Promise<WebhookSecretRow | null> {
  const { rows } = await tx.query<WebhookSecretRow>(
    `SELECT * FROM ${tx.schema.webhook_secrets} WHERE integration_id = $1`,
    [integrationId],
  );
  return rows[0] ?? null;
}

/**
 * Every webhook secret with a ciphertext (current, or a previous one) not under `keyId`, for
 * re-encryption. Locks: those rows FOR UPDATE (until the caller's transaction ends). Returns them.
 */
export async function lockWebhookSecretsNotUnder(tx: Tx, keyId: string): Promise<WebhookSecretRow[]> {
  const { rows } = await tx.query<WebhookSecretRow>(
    `SELECT * FROM ${tx.schema.webhook_secrets}
      WHERE key_id <> $1 OR (previous_key_id IS NOT NULL AND previous_key_id <> $1)
      ORDER BY integration_id FOR UPDATE`,
    [keyId],
  );
  return rows;
}

/**
 * Replaces a webhook secret's ciphertexts with the same secrets under another key (version and
 * grace unchanged); a previous secret given as null is dropped (its grace is over). Locks: that row.
 * Returns whether it changed.
 */
export async function reencryptWebhookSecret(
  tx: Tx,
  r: { integrationId: string; version: number; current: SealedColumns; previous: SealedColumns | null },
): Promise<boolean> {
  const p = r.previous;
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.webhook_secrets}
        SET key_id = $3, nonce = $4, ciphertext = $5, auth_tag = $6,
            previous_key_id = $7, previous_nonce = $8, previous_ciphertext = $9, previous_auth_tag = $10,
            previous_expires_at = CASE WHEN $9::bytea IS NULL THEN NULL ELSE previous_expires_at END
      WHERE integration_id = $1 AND version = $2`,
    [
      r.integrationId,
      r.version,
      r.current.keyId,
      r.current.nonce,
      r.current.ciphertext,
      r.current.tag,
      p?.keyId ?? null,
      p?.nonce ?? null,
      p?.ciphertext ?? null,
      p?.tag ?? null,
    ],
  );
  return rowCount > 0;
}

/** The distinct key ids the stored webhook secrets (current and previous) were encrypted under. Locks nothing. */
export async function listWebhookSecretKeyIds(tx: Tx): Promise<string[]> {
  const { rows } = await tx.query<{ key_id: string }>(
    `SELECT key_id FROM ${tx.schema.webhook_secrets}
     UNION SELECT previous_key_id FROM ${tx.schema.webhook_secrets} WHERE previous_key_id IS NOT NULL
     ORDER BY 1`,
  );
  return rows.map((r) => r.key_id);
}
