/**
 * Integration credentials: validated, sealed under the keyring's key and stored; revealed to a
 * unit on demand; re-encrypted by a key rotation; checked against the configured keys at start.
 * No function here puts a secret in a message, a log line or a return value other than `reveal()`.
 */
import type { Clock } from '../clock.js';
import type { Db, Tx } from '../db/types.js';
import { NonRetryableError, ValidationError } from '../errors.js';
import type { CredentialChange, UnitCredential } from '../sdk/types.js';
import {
  getCredential,
  listCredentialKeyIds,
  lockCredential,
  lockCredentialsNotUnder,
  reencryptCredential,
  replaceCredentialSecret,
  upsertCredential,
  type CredentialRow,
} from '../store/credentials.js';
import type { ClaimedCredential } from '../store/units.js';
import { open, seal, type Sealed, type SecretBinding } from './cipher.js';
import { SecretError } from './errors.js';
import { retireKeyFile } from './keyFile.js';
import { reencryptWebhookSecrets } from './webhookSecrets.js';
import { listWebhookSecretKeyIds } from '../store/webhookSecrets.js';
import { SECRET_KEY_SETTING, PREVIOUS_KEY_SETTING, type Keyring } from './keyring.js';

/** Longest credential accepted, in characters (tokens, JSON service-account keys). */
export const CREDENTIAL_MAX_LENGTH = 8192;
const CONTROL_RE = /\p{Cc}/u;
const LONE_SURROGATE_RE = /\p{Cs}/u;

/**
 * A PEM block (`-----BEGIN …-----` … `-----END …-----`, e.g. a GitHub App's key; one line break may
 * end it, as a PEM file's does): its line breaks removed. Anything else: as it is.
 */
function pemLinesJoined(value: string): string {
  return /^-----BEGIN [A-Z0-9 ]+-----\r?\n[\s\S]*\n-----END [A-Z0-9 ]+-----(?:\r?\n)?$/.test(value)
    ? value.replace(/\r?\n/g, '')
    : value;
}

/** Why `value` is not an acceptable credential, or null. The value itself is never part of the answer. */
export function credentialProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'must be a string';
  if (value.trim() === '') return 'must not be empty';
  if (value.length > CREDENTIAL_MAX_LENGTH) return `must be at most ${CREDENTIAL_MAX_LENGTH} characters`;
  if (CONTROL_RE.test(pemLinesJoined(value))) {
    return 'must not contain control characters (a trailing newline included; a PEM block may span lines)';
  }
  if (LONE_SURROGATE_RE.test(value)) return 'must not contain unpaired surrogates';
  return null;
}

export function validateCredential(value: unknown, field = 'credential'): asserts value is string {
  const problem = credentialProblem(value);
  if (problem) throw new ValidationError(field, problem);
}

/** What revealing a stored credential needs of its row. */
type UnitCredentialRow = Pick<
  CredentialRow,
  'id' | 'org_id' | 'integration_id' | 'version' | 'key_id' | 'nonce' | 'ciphertext' | 'auth_tag'
>;

function sealedOf(row: UnitCredentialRow): Sealed {
  return {
    keyId: row.key_id,
    nonce: Buffer.from(row.nonce),
    ciphertext: Buffer.from(row.ciphertext),
    tag: Buffer.from(row.auth_tag),
  };
}

function bindingOf(row: { org_id: string; integration_id: string }): SecretBinding {
  return { orgId: row.org_id, integrationId: row.integration_id };
}

/** Validates, encrypts and stores (or replaces) the integration's credential in `tx`. */
export async function storeCredential(
  tx: Tx,
  keyring: Keyring,
  c: { orgId: string; integrationId: string; secret: string },
  now: Date,
): Promise<CredentialRow> {
  validateCredential(c.secret);
  const sealed = seal(keyring.encryptionKey(), c.secret, { orgId: c.orgId, integrationId: c.integrationId });
  return upsertCredential(tx, { orgId: c.orgId, integrationId: c.integrationId, sealed }, now);
}

/** Decrypts a stored credential with whichever configured key it was encrypted under. */
export function revealCredential(keyring: Keyring, row: UnitCredentialRow): string {
  return open(keyring.keyFor(row.key_id), sealedOf(row), bindingOf(row));
}

/** Decrypts `row`; a failure is a NonRetryableError of category `auth` whose cause carries the stable code. */
function revealed(keyring: Keyring, row: UnitCredentialRow, id: string): string {
  try {
    return revealCredential(keyring, row);
  } catch (cause) {
    const code = cause instanceof SecretError ? cause.code : 'secret_decrypt_failed';
    throw new NonRetryableError(`the integration's credential ${id} cannot be decrypted (${code})`, 'auth', { cause });
  }
}

/** Where a unit's credential may be changed (`UnitCredential.change`): the engine's database and clock. */
export interface CredentialStore {
  db: Db;
  clock: Clock;
}

/**
 * The credential as a unit sees it: `id` is the row's id and version (it changes when the
 * credential is replaced); `reveal()` decrypts on first call and caches. A failure to decrypt is
 * a NonRetryableError of category `auth` whose cause carries the stable code. With `store`, the
 * unit may change the stored secret (`change`, see `changeCredential`).
 */
export function unitCredential(keyring: Keyring, row: UnitCredentialRow, store?: CredentialStore): UnitCredential {
  let cached: string | undefined;
  const id = `${row.id}.v${row.version}`;
  const reveal = (): string => (cached ??= revealed(keyring, row, id));
  const change = store
    ? <T>(fn: (current: string) => Promise<CredentialChange<T>>) =>
        changeCredential(store, keyring, row.integration_id, fn)
    : undefined;
  return Object.freeze({ id, reveal, ...(change ? { change } : {}), toJSON: () => ({ id }) });
}

/**
 * Runs `fn` on the integration's stored secret under its row lock and stores, encrypted under the
 * current key, the secret `fn` hands back, in the same transaction: a rotated secret is never held
 * by a process alone, and a second process changing it waits for the first and sees its result.
 * A credential removed meanwhile fails with category `auth`. Returns `fn`'s value.
 */
export async function changeCredential<T>(
  store: CredentialStore,
  keyring: Keyring,
  integrationId: string,
  fn: (current: string) => Promise<CredentialChange<T>>,
): Promise<T> {
  return store.db.transaction(async (tx) => {
    const row = await lockCredential(tx, integrationId);
    if (!row) throw new NonRetryableError(`the integration's credential was removed`, 'auth');
    const current = revealed(keyring, row, `${row.id}.v${row.version}`);
    const { secret, value } = await fn(current);
    if (secret === undefined || secret === current) return value;
    validateCredential(secret);
    const sealed = seal(keyring.encryptionKey(), secret, bindingOf(row));
    await replaceCredentialSecret(tx, { id: row.id, version: row.version, sealed }, store.clock.now());
    return value;
  });
}

/** The credential the claim read with the unit (still encrypted), as the unit sees it; null when none is set. */
export function claimedUnitCredential(
  keyring: Keyring,
  c: ClaimedCredential | null,
  store?: CredentialStore,
): UnitCredential | null {
  if (c === null) return null;
  const bytes = (b64: string) => Buffer.from(b64, 'base64');
  const row = { ...c, nonce: bytes(c.nonce), ciphertext: bytes(c.ciphertext), auth_tag: bytes(c.auth_tag) };
  return unitCredential(keyring, row, store);
}

/** The integration's credential for a unit, or null when none is set. One statement, no decryption. */
export async function loadUnitCredential(db: Tx, keyring: Keyring, integrationId: string) {
  const row = await getCredential(db, integrationId);
  return row ? unitCredential(keyring, row) : null;
}

export interface RotationResult {
  /** The key every credential is now encrypted under. */
  keyId: string;
  /** Credentials re-encrypted by this call. */
  reencrypted: number;
  /** Webhook secrets re-encrypted by this call (webhookSecrets.ts). */
  reencryptedWebhookSecrets: number;
  /** The embedded key file this call removed (its path), once no credential was left under it. */
  retiredKeyFile?: string;
}

/**
 * Re-encrypts every credential and webhook secret not yet under the keyring's encryption key, in one
 * transaction: all of them or none (`now` decides which previous webhook secrets are still in grace).
 * Rows already under it are skipped, so running it again is harmless. In the embedded mode with
 * SYNCRELAY_SECRET_KEY set, the key file it supersedes is removed afterwards, once every stored
 * secret is under the new key, so it is never read (or used) again.
 */
export async function rotateCredentialKeys(db: Db, keyring: Keyring, now = new Date()): Promise<RotationResult> {
  const target = keyring.encryptionKey();
  const result = await db.transaction(async (tx) => {
    const rows = await lockCredentialsNotUnder(tx, target.id);
    let reencrypted = 0;
    for (const row of rows) {
      const sealed = seal(target, revealCredential(keyring, row), bindingOf(row));
      if (await reencryptCredential(tx, row.id, row.key_id, sealed)) reencrypted++;
    }
    const webhookSecrets = await reencryptWebhookSecrets(tx, keyring, now);
    return { keyId: target.id, reencrypted, reencryptedWebhookSecrets: webhookSecrets };
  });
  const retired = await retireSupersededKeyFile(db, keyring, target.id);
  return retired ? { ...result, retiredKeyFile: retired } : result;
}

/** Removes the key file SYNCRELAY_SECRET_KEY supersedes when no stored credential is under another key. */
async function retireSupersededKeyFile(db: Db, keyring: Keyring, keepId: string): Promise<string | null> {
  const path = keyring.keyFilePath();
  if (!path || !keyring.keyFileSuperseded()) return null;
  const left = await storedKeyIds(db);
  if (left.some((id) => id !== keepId)) return null;
  return retireKeyFile(path, keepId) ? path : null;
}

/**
 * The start-up check: when credentials are stored, a configured key must match at least one of
 * them. Throws a SecretError naming where each key came from — SYNCRELAY_SECRET_KEY, the key
 * file's path, SYNCRELAY_SECRET_KEY_PREVIOUS — and key ids, never key material.
 */
export async function checkCredentialKeys(db: Tx, keyring: Keyring): Promise<void> {
  const stored = await storedKeyIds(db);
  if (stored.length === 0) return;
  const sources = keyring.sources();
  if (sources.length === 0) {
    const file = keyring.keyFilePath();
    throw new SecretError(
      'secret_key_missing',
      `credentials are stored (under key ${stored.join(', ')}) but ${SECRET_KEY_SETTING} is not set` +
        `${file ? ` (and there is no key file ${file})` : ''}; set it to the key they were stored under`,
    );
  }
  if (!stored.some((id) => sources.some((s) => s.id === id))) {
    const named = sources.map((s) => `${s.name} (key ${s.id})`).join(' and ');
    throw new SecretError(
      'secret_key_unknown',
      `${named} ${sources.length > 1 ? 'match' : 'matches'} none of the stored credentials ` +
        `(under key ${stored.join(', ')}); set ${SECRET_KEY_SETTING} to the key they were stored under, ` +
        `or that key as ${PREVIOUS_KEY_SETTING} and run \`syncrelay credentials rotate-key\``,
    );
  }
}

/** The key ids of every stored secret: credentials and webhook secrets. */
async function storedKeyIds(db: Tx): Promise<string[]> {
  const [credentials, webhooks] = await Promise.all([
    undefinedTableAsNone(() => listCredentialKeyIds(db)),
    undefinedTableAsNone(() => listWebhookSecretKeyIds(db)),
  ]);
  return [...new Set([...credentials, ...webhooks])].sort();
}

/** A database not migrated far enough has no such table, so stores no such secret. */
async function undefinedTableAsNone(list: () => Promise<string[]>): Promise<string[]> {
  try {
    return await list();
  } catch (err) {
    if ((err as { code?: unknown }).code === '42P01') return [];
    throw err;
  }
}
