/**
 * Webhook secrets: generated here (32 random bytes, hex), sealed under the keyring's key like a
 * credential and shown once; after a rotation the previous secret is accepted until its grace ends.
 * A delivery's signature (HMAC-SHA256 of the raw body, in hex) is compared in constant time. A
 * secret the provider generated (Linear's, say) can be stored instead of a generated one.
 * No function here puts a secret in a message or a log line; only `createWebhookSecret` returns one.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Tx } from '../db/types.js';
import {
  getWebhookSecret,
  insertWebhookSecret,
  lockWebhookSecretsNotUnder,
  reencryptWebhookSecret,
  rotateWebhookSecret,
  type WebhookSecretRow,
} from '../store/webhookSecrets.js';
import { open, seal, type Sealed, type SecretBinding } from './cipher.js';
import type { Keyring } from './keyring.js';

/** What GitHub's and Jira's signature headers put before the digest. */
export const SHA256_PREFIX = 'sha256=';

/** A secret the provider generated, as syncrelay stores it: 16 to 256 printable ASCII characters, no space. */
export const PROVIDED_WEBHOOK_SECRET_RE = /^[\x21-\x7e]{16,256}$/;
export const PROVIDED_WEBHOOK_SECRET_RULE = 'must be 16 to 256 printable ASCII characters without spaces';

/** Random bytes of a generated secret. */
export const WEBHOOK_SECRET_BYTES = 32;

/** The signature's 64 hex digits after `prefix` (GitHub's and Jira's `sha256=`, Linear's none). */
function digestOf(header: string | undefined, prefix: string): string | null {
  if (typeof header !== 'string') return null;
  const value = header.trim();
  if (value.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase()) return null;
  const hex = value.slice(prefix.length);
  return /^[0-9a-f]{64}$/i.test(hex) ? hex : null;
}

/**
 * What a webhook secret is sealed to: its org and integration, marked apart from the credential's
 * binding (NUL never occurs in an org id), so neither ciphertext decrypts as the other.
 */
function bindingOf(orgId: string, integrationId: string): SecretBinding {
  return { orgId: `${orgId}\u0000webhook-secret`, integrationId };
}

/** A new secret: 32 random bytes as 64 hex digits. */
export function generateWebhookSecret(): string {
  return randomBytes(WEBHOOK_SECRET_BYTES).toString('hex');
}

export interface CreatedWebhookSecret {
  /** The secret itself: shown to the caller once, never stored in the clear. */
  secret: string;
  version: number;
  /** Until when the replaced secret is still accepted; null when none was replaced. */
  previousExpiresAt: Date | null;
}

/**
 * Generates (or takes `opts.given`, a secret the provider made), seals and stores the integration's
 * webhook secret in `tx`. Without `rotate`, an integration that has one keeps it and null is
 * returned; with it, the one it had stays accepted for `graceMs`.
 */
export async function createWebhookSecret(
  tx: Tx,
  keyring: Keyring,
  target: { orgId: string; integrationId: string },
  opts: { rotate: boolean; graceMs: number; given?: string },
  now: Date,
): Promise<CreatedWebhookSecret | null> {
  const secret = opts.given ?? generateWebhookSecret();
  const sealed = seal(keyring.encryptionKey(), secret, bindingOf(target.orgId, target.integrationId));
  const values = { ...target, sealed };
  const row = opts.rotate
    ? await rotateWebhookSecret(tx, values, new Date(now.getTime() + opts.graceMs), now)
    : await insertWebhookSecret(tx, values, now);
  if (!row) return null;
  return { secret, version: row.version, previousExpiresAt: row.previous_expires_at };
}

function sealedOf(keyId: string, nonce: Uint8Array, ciphertext: Uint8Array, tag: Uint8Array): Sealed {
  return { keyId, nonce: Buffer.from(nonce), ciphertext: Buffer.from(ciphertext), tag: Buffer.from(tag) };
}

/**
 * The secrets a delivery may be signed with at `now`: the current one and, within its grace, the one
 * it replaced. Throws SecretError when one cannot be decrypted (its message names no secret).
 */
export function acceptedWebhookSecrets(keyring: Keyring, row: WebhookSecretRow, now: Date): string[] {
  const binding = bindingOf(row.org_id, row.integration_id);
  const current = sealedOf(row.key_id, row.nonce, row.ciphertext, row.auth_tag);
  const out = [open(keyring.keyFor(row.key_id), current, binding)];
  const { previous_key_id: keyId, previous_nonce: nonce, previous_ciphertext: text, previous_auth_tag: tag } = row;
  const live = row.previous_expires_at !== null && row.previous_expires_at.getTime() > now.getTime();
  if (live && keyId && nonce && text && tag) {
    out.push(open(keyring.keyFor(keyId), sealedOf(keyId, nonce, text, tag), binding));
  }
  return out;
}

/** The integration's accepted secrets at `now` (none when it has no webhook secret). */
export async function loadAcceptedWebhookSecrets(
  tx: Tx,
  keyring: Keyring,
  integrationId: string,
  now: Date,
): Promise<string[]> {
  const row = await getWebhookSecret(tx, integrationId);
  return row ? acceptedWebhookSecrets(keyring, row, now) : [];
}

/** A stand-in secret, so a delivery to an integration without one costs the same HMAC as any other. */
const DECOY = generateWebhookSecret();

/**
 * Whether `header` (`prefix` and 64 hex digits) is the HMAC-SHA256 of `body` under one of
 * `secrets`: every secret is tried, each compared with `timingSafeEqual`. No secrets (an unknown
 * integration): false, after the same work as one secret.
 */
export function verifyWebhookSignature(
  body: Buffer,
  header: string | undefined,
  secrets: readonly string[],
  prefix = SHA256_PREFIX,
): boolean {
  const match = digestOf(header, prefix);
  const given = Buffer.from(match ?? '0'.repeat(64), 'hex');
  let ok = false;
  for (const secret of secrets.length > 0 ? secrets : [DECOY]) {
    const expected = createHmac('sha256', secret).update(body).digest();
    if (timingSafeEqual(expected, given)) ok = true;
  }
  return ok && match !== null && secrets.length > 0;
}

/** The signature header value for `body` under `secret` (what a provider sends; tests and tools sign with it). */
export function signWebhookBody(body: Buffer | string, secret: string, prefix = SHA256_PREFIX): string {
  return `${prefix}${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * Re-encrypts, in `tx`, every webhook secret not yet under the keyring's encryption key (the current
 * one and a previous one still within its grace; one past it is dropped). Returns how many rows
 * changed. Part of a key rotation (credentials.ts `rotateCredentialKeys`): all of them or none.
 */
export async function reencryptWebhookSecrets(tx: Tx, keyring: Keyring, now: Date): Promise<number> {
  const target = keyring.encryptionKey();
  let changed = 0;
  for (const row of await lockWebhookSecretsNotUnder(tx, target.id)) {
    const binding = bindingOf(row.org_id, row.integration_id);
    const [current, previous] = acceptedWebhookSecrets(keyring, row, now);
    const sealedCurrent = seal(target, current!, binding);
    const sealedPrevious = previous === undefined ? null : seal(target, previous, binding);
    const r = {
      integrationId: row.integration_id,
      version: row.version,
      current: sealedCurrent,
      previous: sealedPrevious,
    };
    if (await reencryptWebhookSecret(tx, r)) changed++;
  }
  return changed;
}
