/**
 * A Jira Cloud integration's config, sources and credential, validated once.
 *
 * | key           | rule                                                                            |
 * |---------------|---------------------------------------------------------------------------------|
 * | `siteUrl`     | required: `https://<site>.atlassian.net` (any https URL without credentials,    |
 * |               | path, query or fragment, ≤ 2048 characters); plain http only for 127.0.0.1 or   |
 * |               | localhost (an emulator)                                                         |
 * | `budgetShare` | a number, 0 < x ≤ 1: the share of the credential's rate-limit budget this       |
 * |               | integration may use; @default 1                                                 |
 * | `sprintField` | the custom field holding an issue's sprints (`customfield_<n>`);                |
 * |               | @default customfield_10020 (Jira Cloud's)                                       |
 *
 * A source is a project key: `^[A-Z][A-Z0-9_]{1,19}$` (keys are put into JQL, quoted as well).
 *
 * The credential: `email:api_token` (it holds a colon) is sent as HTTP basic auth, Jira Cloud's
 * API-token scheme; a bare token (no colon) is sent as `Authorization: Bearer <token>` (a personal
 * access token or an OAuth access token).
 */
import { NonRetryableError, ValidationError } from '../../errors.js';

export interface JiraConfig {
  siteUrl: string;
  budgetShare: number;
  sprintField: string;
}

const MAX_URL = 2048;
const KEYS = new Set(['siteUrl', 'budgetShare', 'sprintField']);
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
export const DEFAULT_SPRINT_FIELD = 'customfield_10020';

/** Reads `config`, throwing `ValidationError` naming `config.<key>` for the first problem. */
export function parseJiraConfig(config: unknown): JiraConfig {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new ValidationError('config', 'must be an object');
  }
  const c = config as Record<string, unknown>;
  for (const key of Object.keys(c)) {
    if (!KEYS.has(key)) {
      throw new ValidationError(`config.${key}`, 'is not a Jira setting (known: siteUrl, budgetShare, sprintField)');
    }
  }
  return { siteUrl: siteUrl(c.siteUrl), budgetShare: share(c.budgetShare), sprintField: sprintField(c.sprintField) };
}

function siteUrl(raw: unknown): string {
  const field = 'config.siteUrl';
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_URL) {
    throw new ValidationError(field, `must be a URL of 1–${MAX_URL} characters (https://<site>.atlassian.net)`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new ValidationError(field, 'is not a URL', { cause });
  }
  const local = LOCAL_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) {
    throw new ValidationError(field, 'must use https (plain http only for 127.0.0.1 or localhost)');
  }
  if (url.username || url.password) throw new ValidationError(field, 'must not carry credentials');
  if (url.search || url.hash) throw new ValidationError(field, 'must not have a query or fragment');
  if (url.pathname !== '/' && url.pathname !== '') throw new ValidationError(field, 'must be the site root, no path');
  return url.origin;
}

function share(raw: unknown): number {
  if (raw === undefined) return 1;
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0 || raw > 1) {
    throw new ValidationError('config.budgetShare', 'must be a number greater than 0 and at most 1');
  }
  return raw;
}

function sprintField(raw: unknown): string {
  if (raw === undefined) return DEFAULT_SPRINT_FIELD;
  if (typeof raw !== 'string' || !/^customfield_\d{1,12}$/.test(raw)) {
    throw new ValidationError('config.sprintField', 'must be customfield_<number>');
  }
  return raw;
}

/** A Jira project key as it may be put into JQL. */
export const PROJECT_KEY = /^[A-Z][A-Z0-9_]{1,19}$/;

/** Throws `ValidationError` naming `field` unless `source` is a project key. */
export function validateSource(source: string, field = 'source'): void {
  if (typeof source !== 'string' || !PROJECT_KEY.test(source)) {
    const shown = typeof source === 'string' ? JSON.stringify(source.slice(0, 40)) : typeof source;
    throw new ValidationError(field, `must be a Jira project key (A–Z, then 1–19 of A–Z, 0–9, _), got ${shown}`);
  }
}

/** A unit's source as a project key; anything else cannot be found. */
export function projectOf(source: string | null, subject: string): string {
  if (source === null || !PROJECT_KEY.test(source)) {
    const shown = source === null ? 'no source' : JSON.stringify(source.slice(0, 40));
    throw new NonRetryableError(`${subject}: source ${shown} is not a Jira project key`, 'not_found');
  }
  return source;
}

/**
 * The Authorization header for a credential: `email:api_token` → `Basic base64(email:api_token)`;
 * a bare token → `Bearer <token>`. Throws (naming nothing secret) for an empty or multi-line one.
 */
export function authorizationFor(credential: string, subject: string): string {
  const secret = credential.trim();
  if (secret === '' || /[\r\n]/.test(secret)) {
    throw new NonRetryableError(`${subject}: the credential is empty or spans lines`, 'auth');
  }
  if (!secret.includes(':')) return `Bearer ${secret}`;
  return `Basic ${Buffer.from(secret, 'utf8').toString('base64')}`;
}
