/**
 * API tokens: `sr_` + 32 random bytes in base64url, shown once and stored only as their SHA-256.
 * A token belongs to one org and carries scopes; `admin` holds every scope.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Tx } from '../db/types.js';
import { ValidationError } from '../errors.js';
import { insertApiToken, type ApiScope, type ApiTokenRow } from '../store/apiTokens.js';

export const API_SCOPES: readonly ApiScope[] = ['read', 'trigger', 'admin'];

const TOKEN_PREFIX = 'sr_';
const TOKEN_RE = /^sr_[A-Za-z0-9_-]{43}$/;
/** Orgs are free text, but printable and short. */
const ORG_RE = /^[^\s\u0000-\u001f\u007f-\u009f]{1,200}$/u;

export function generateToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** Whether `text` has the shape of a token (checked before any database lookup). */
export function looksLikeToken(text: string): boolean {
  return TOKEN_RE.test(text);
}

/** SHA-256 hex: what the database stores and looks tokens up by. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Whether a presented secret equals the expected one, in time independent of where they differ
 * (both are hashed first, so their lengths do not show either).
 */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

export function hasScope(scopes: readonly string[], needed: ApiScope): boolean {
  return scopes.includes('admin') || scopes.includes(needed);
}

/** `read,trigger` → ['read', 'trigger']; unknown or empty scopes throw ValidationError('scopes'). */
export function parseScopes(raw: readonly string[]): ApiScope[] {
  if (raw.length === 0) throw new ValidationError('scopes', `at least one of ${API_SCOPES.join(', ')} is required`);
  for (const s of raw) {
    if (!API_SCOPES.includes(s as ApiScope))
      throw new ValidationError('scopes', `unknown scope "${s}" (known: ${API_SCOPES.join(', ')})`);
  }
  return [...new Set(raw as ApiScope[])];
}

export function validateOrg(org: string): void {
  if (!ORG_RE.test(org)) throw new ValidationError('org', 'must be 1–200 printable characters without spaces');
}

export interface CreatedToken {
  /** The token itself: shown once, never stored. */
  token: string;
  row: ApiTokenRow;
}

/** Creates a token for `orgId`; the caller shows `token` once. */
export async function createApiToken(
  tx: Tx,
  clock: Clock,
  t: { orgId: string; name?: string; scopes: readonly string[] },
): Promise<CreatedToken> {
  validateOrg(t.orgId);
  const scopes = parseScopes(t.scopes);
  const name = t.name ?? '';
  if (name.length > 200 || /[\u0000-\u001f\u007f-\u009f]/.test(name)) {
    throw new ValidationError('name', 'must be at most 200 characters, without control characters');
  }
  const token = generateToken();
  const row = await insertApiToken(tx, { orgId: t.orgId, name, tokenHash: hashToken(token), scopes }, clock.now());
  return { token, row };
}
