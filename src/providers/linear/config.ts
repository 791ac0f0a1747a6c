/**
 * A Linear integration's config and sources, validated once.
 *
 * | key           | rule                                                                          |
 * |---------------|-------------------------------------------------------------------------------|
 * | `apiUrl`      | the GraphQL endpoint: an https URL without credentials, query or fragment,    |
 * |               | ≤ 2048 characters (plain http only for 127.0.0.1 / localhost, e.g. the        |
 * |               | emulator); @default https://api.linear.app/graphql                            |
 * | `budgetShare` | a number, 0 < x ≤ 1: the share of the credential's rate-limit budget this     |
 * |               | integration may use (the rest is kept for others); @default 1                 |
 *
 * A source is a team key (`ENG`): an upper-case letter, then up to 9 upper-case letters or digits.
 */
import { NonRetryableError, ValidationError } from '../../errors.js';

export interface LinearConfig {
  apiUrl: string;
  budgetShare: number;
}

export const LINEAR_DEFAULT_API_URL = 'https://api.linear.app/graphql';
const MAX_URL = 2048;
const KEYS = new Set(['apiUrl', 'budgetShare']);
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Reads `config`, throwing `ValidationError` naming `config.<key>` for the first problem. */
export function parseLinearConfig(config: unknown): LinearConfig {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new ValidationError('config', 'must be an object');
  }
  const c = config as Record<string, unknown>;
  for (const key of Object.keys(c)) {
    if (!KEYS.has(key)) {
      throw new ValidationError(`config.${key}`, 'is not a Linear setting (known: apiUrl, budgetShare)');
    }
  }
  return { apiUrl: apiUrl(c.apiUrl), budgetShare: share(c.budgetShare) };
}

function apiUrl(raw: unknown): string {
  if (raw === undefined) return LINEAR_DEFAULT_API_URL;
  const field = 'config.apiUrl';
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_URL) {
    throw new ValidationError(field, `must be a URL of 1–${MAX_URL} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new ValidationError(field, 'is not a URL', { cause });
  }
  if (url.protocol === 'http:' && !LOCAL_HOSTS.has(url.hostname)) {
    throw new ValidationError(field, 'must use https (plain http only for 127.0.0.1 or localhost)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ValidationError(field, 'must use https');
  if (url.username || url.password) throw new ValidationError(field, 'must not carry credentials');
  if (url.search || url.hash) throw new ValidationError(field, 'must not have a query or fragment');
  return raw;
}

function share(raw: unknown): number {
  if (raw === undefined) return 1;
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0 || raw > 1) {
    throw new ValidationError('config.budgetShare', 'must be a number greater than 0 and at most 1');
  }
  return raw;
}

/** A Linear team key. */
export const TEAM_KEY = /^[A-Z][A-Z0-9]{0,9}$/;

/** Throws `ValidationError` naming `field` unless `source` is a team key. */
export function validateSource(source: string, field = 'source'): void {
  if (typeof source !== 'string' || !TEAM_KEY.test(source)) {
    const shown = typeof source === 'string' ? JSON.stringify(source.slice(0, 40)) : typeof source;
    throw new ValidationError(field, `must be a Linear team key (A–Z then up to 9 of A–Z, 0–9), got ${shown}`);
  }
}

/** A unit's source as a team key; one that is not a team key cannot be found. */
export function teamKeyOf(source: string | null, subject: string): string {
  if (source === null || !TEAM_KEY.test(source)) {
    throw new NonRetryableError(`${subject}: source ${JSON.stringify(source)} is not a Linear team key`, 'not_found');
  }
  return source;
}
