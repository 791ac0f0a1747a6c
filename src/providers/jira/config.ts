/**
 * A Jira Cloud integration's config, sources and credential, validated once.
 *
 * | key           | rule                                                                            |
 * |---------------|---------------------------------------------------------------------------------|
 * | `siteUrl`     | required: `https://<site>.atlassian.net` (any https URL without credentials,    |
 * |               | path, query or fragment, ≤ 2048 characters); its host as the outbound policy    |
 * |               | allows (kit/outbound.ts; plain http only to loopback, for an emulator)          |
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
import { budgetShare, checkUrl, keySources, parseSettings } from '../kit/config.js';
import type { OutboundPolicy } from '../kit/outbound.js';

export interface JiraConfig {
  siteUrl: string;
  budgetShare: number;
  sprintField: string;
}

export const DEFAULT_SPRINT_FIELD = 'customfield_10020';

/**
 * Reads `config` (its URL under `outbound`, @default the process's policy), throwing
 * `ValidationError` naming `config.<key>` for the first problem.
 */
export function parseJiraConfig(config: unknown, outbound?: OutboundPolicy): JiraConfig {
  return parseSettings<JiraConfig>(config, 'Jira', {
    siteUrl: (raw) => siteUrl(raw, outbound),
    budgetShare,
    sprintField,
  });
}

/** The site root (no path): the REST and Agile APIs' paths are set below it. */
function siteUrl(raw: unknown, outbound: OutboundPolicy | undefined): string {
  const rule = { path: false, example: 'https://<site>.atlassian.net' };
  return checkUrl(raw, 'config.siteUrl', rule, outbound).url.origin;
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

const PROJECTS = keySources('a Jira project key', PROJECT_KEY, 'A–Z, then 1–19 of A–Z, 0–9, _');

/** Throws `ValidationError` naming `field` unless `source` is a project key. */
export const validateSource = PROJECTS.validate;

/** A unit's source as a project key; anything else cannot be found. */
export const projectOf = PROJECTS.of;

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
