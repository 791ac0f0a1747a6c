/**
 * A Jira (Cloud or Data Center) integration's config, sources and credential, validated once.
 *
 * | key           | rule                                                                            |
 * |---------------|---------------------------------------------------------------------------------|
 * | `siteUrl`     | required: `https://<site>.atlassian.net` (any https URL without credentials,    |
 * |               | path, query or fragment, ≤ 2048 characters); its host as the outbound policy    |
 * |               | allows (kit/outbound.ts; plain http only to loopback, for an emulator). With    |
 * |               | `deployment: datacenter` it may carry a context path (`https://host/jira`)      |
 * | `deployment`  | `cloud` (REST v3) or `datacenter` (Data Center / Server, REST v2: api.ts);      |
 * |               | @default cloud (then absent from the parsed config)                             |
 * | `budgetShare` | a number, 0 < x ≤ 1: the share of the credential's rate-limit budget this       |
 * |               | integration may use; @default 1                                                 |
 * | `sprintField` | the custom field holding an issue's sprints (`customfield_<n>`);                |
 * |               | @default customfield_10020 (Jira Cloud's)                                       |
 * | `auth`        | `token` (@default: the credential below) or `oauth`: OAuth 2.0 (3LO) on Jira    |
 * |               | Cloud, the credential `{"clientId", "clientSecret", "refreshToken"}` (JSON;     |
 * |               | oauthConfig.ts), the calls through Atlassian's API gateway (oauth.ts)           |
 * | `oauthTokenUrl`, `apiGatewayUrl` | with `auth: oauth`, for an emulator only: loopback URLs      |
 * |               | standing in for `auth.atlassian.com/oauth/token` and `api.atlassian.com`         |
 *
 * A source is a project key: `^[A-Z][A-Z0-9_]{1,19}$` (keys are put into JQL, quoted as well).
 *
 * The credential (`auth: token`): `email:api_token` (it holds a colon) is sent as HTTP basic auth,
 * Jira Cloud's API-token scheme; a bare token (no colon) is sent as `Authorization: Bearer <token>`
 * (a Data Center personal access token).
 */
import { NonRetryableError, ValidationError } from '../../errors.js';
import { budgetShare, checkUrl, keySources, parseSettings } from '../kit/config.js';
import type { OutboundPolicy } from '../kit/outbound.js';
import { ATLASSIAN_API_GATEWAY, ATLASSIAN_TOKEN_URL, jiraAuth, loopbackUrl, type JiraAuth } from './oauthConfig.js';

export interface JiraConfig {
  siteUrl: string;
  /** `datacenter` for Jira Data Center / Server; absent for Cloud, the default (`deploymentOf`). */
  deployment?: 'datacenter';
  budgetShare: number;
  sprintField: string;
  /** `token` (the credential is `email:api_token` or a bearer token) or `oauth` (oauthConfig.ts). */
  auth: JiraAuth;
  /** With `auth: oauth`: Atlassian's token endpoint (settable to an emulator's only). */
  oauthTokenUrl: string;
  /** With `auth: oauth`: Atlassian's API gateway, above `/ex/jira/{cloudId}` (settable to an emulator's only). */
  apiGatewayUrl: string;
}

export const DEFAULT_SPRINT_FIELD = 'customfield_10020';

/**
 * Reads `config` (its URL under `outbound`, @default the process's policy), throwing
 * `ValidationError` naming `config.<key>` for the first problem.
 */
export function parseJiraConfig(config: unknown, outbound?: OutboundPolicy): JiraConfig {
  const given = config !== null && typeof config === 'object' ? (config as Record<string, unknown>) : {};
  const dc = deployment(given.deployment) === 'datacenter';
  const parsed = parseSettings<JiraConfig>(config, 'Jira', {
    siteUrl: (raw) => siteUrl(raw, dc, outbound),
    deployment,
    budgetShare,
    sprintField,
    auth: jiraAuth,
    oauthTokenUrl: loopbackUrl('oauthTokenUrl', ATLASSIAN_TOKEN_URL),
    apiGatewayUrl: loopbackUrl('apiGatewayUrl', ATLASSIAN_API_GATEWAY),
  });
  if (parsed.auth === 'oauth' && dc) {
    throw new ValidationError('config.auth', 'oauth is for Jira Cloud: Data Center takes a personal access token');
  }
  for (const key of ['oauthTokenUrl', 'apiGatewayUrl'] as const) {
    if (parsed.auth !== 'oauth' && given[key] !== undefined) {
      throw new ValidationError(`config.${key}`, 'is only for auth "oauth"');
    }
  }
  return parsed;
}

export type JiraDeployment = 'cloud' | 'datacenter';

/** The deployment a parsed config reads. */
export function deploymentOf(config: Pick<JiraConfig, 'deployment'>): JiraDeployment {
  return config.deployment ?? 'cloud';
}

function deployment(raw: unknown): 'datacenter' | undefined {
  if (raw === undefined || raw === 'cloud') return undefined;
  if (raw === 'datacenter') return raw;
  throw new ValidationError('config.deployment', 'must be cloud or datacenter');
}

/**
 * The site root, the REST and Agile APIs' paths set below it: Cloud's origin (no path), or a Data
 * Center base URL, which may carry a context path (`https://jira.example.com/jira`; no trailing `/`).
 */
function siteUrl(raw: unknown, datacenter: boolean, outbound: OutboundPolicy | undefined): string {
  const example = datacenter ? 'https://jira.example.com or https://host/jira' : 'https://<site>.atlassian.net';
  const { url } = checkUrl(raw, 'config.siteUrl', { path: datacenter, example }, outbound);
  const path = url.pathname.replace(/\/+$/, '');
  if (path !== '' && !/^(\/[A-Za-z0-9._~-]+)+$/.test(path)) {
    throw new ValidationError('config.siteUrl', 'a context path holds only letters, digits and . _ ~ -');
  }
  if (/(^|\/)\.{1,2}(\/|$)|\/rest(\/|$)/.test(path)) {
    throw new ValidationError('config.siteUrl', 'a context path is the site base, without . or .. or /rest');
  }
  return `${url.origin}${path}`;
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
