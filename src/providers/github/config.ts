/**
 * A GitHub integration's config and sources, validated once.
 *
 * | key           | rule                                                                          |
 * |---------------|-------------------------------------------------------------------------------|
 * | `baseUrl`     | an https URL without credentials, ≤ 2048 characters; @default api.github.com  |
 * |               | (GitHub Enterprise Server: `https://host/api/v3`); its host as the outbound   |
 * |               | policy allows (kit/outbound.ts: a private one only when the operator allows it) |
 * | `budgetShare` | a number, 0 < x ≤ 1: the share of the credential's rate-limit budget this     |
 * |               | integration may use (the rest is kept for others); @default 1                 |
 * | `auth`        | `token` (the credential is a token: personal, fine-grained or an App's own)   |
 * |               | or `app` (the credential is a GitHub App's private key, PEM); @default token   |
 * | `appId`       | with `auth: app`, required: the App's id, a positive integer                  |
 * | `installationId` | with `auth: app`: the installation's id, a positive integer; absent, the   |
 * |               | installation is found from the owner (installation.ts)                        |
 * | `owner`       | with `auth: app`: the login (user or organisation) the App is installed on;   |
 * |               | absent, the single owner of the integration's sources                         |
 * | `sources`     | with `auth: app`: `installation`, the installation's repositories are the      |
 * |               | integration's sources, found before each run is planned (discovery.ts); then  |
 * |               | `owner` or `installationId` is required                                       |
 *
 * A source is a repository, `owner/repo`.
 */
import { ValidationError } from '../../errors.js';
import { budgetShare, checkUrl, parseSettings, sourceKeys } from '../kit/config.js';
import type { OutboundPolicy } from '../kit/outbound.js';

export interface GithubConfig {
  baseUrl: string;
  budgetShare: number;
  auth: GithubAuth;
  /** With `auth: app`: the App (null otherwise). */
  appId: number | null;
  /**
   * With `auth: app`: the installation whose tokens the units read with; null when not configured
   * (found from `owner`, or the sources' owner) or with another auth.
   */
  installationId: number | null;
  /** With `auth: app`: the login the App is installed on (null: not configured). */
  owner: string | null;
  /** `installation`: the sources are the installation's repositories, found at each plan (null: listed). */
  sources: GithubSources | null;
}

/** `config.sources`: where the integration's sources come from when they are not listed. */
export const INSTALLATION_SOURCES = 'installation';
export type GithubSources = typeof INSTALLATION_SOURCES;

export const GITHUB_AUTHS = ['token', 'app'] as const;
export type GithubAuth = (typeof GITHUB_AUTHS)[number];

export const GITHUB_DEFAULT_BASE_URL = 'https://api.github.com';
/**
 * Reads `config` (its URL under `outbound`, @default the process's policy), throwing
 * `ValidationError` naming `config.<key>` for the first problem.
 */
export function parseGithubConfig(config: unknown, outbound?: OutboundPolicy): GithubConfig {
  const c = parseSettings<GithubConfig>(config, 'GitHub', {
    baseUrl: (raw) => baseUrl(raw, outbound),
    budgetShare,
    auth,
    appId: (raw) => positiveId(raw, 'config.appId'),
    installationId: (raw) => positiveId(raw, 'config.installationId'),
    owner: (raw) => login(raw, 'config.owner'),
    sources: discoveredSources,
  });
  if (c.auth === 'app' && c.appId === null) throw new ValidationError('config.appId', 'is required with auth "app"');
  const appKeys = { appId: c.appId, installationId: c.installationId, owner: c.owner, sources: c.sources };
  for (const [key, value] of Object.entries(appKeys)) {
    if (c.auth !== 'app' && value !== null) throw new ValidationError(`config.${key}`, 'is only for auth "app"');
  }
  if (c.sources !== null && c.installationId === null && c.owner === null) {
    throw new ValidationError(
      'config.owner',
      `is required with config.sources "${INSTALLATION_SOURCES}" unless config.installationId is given ` +
        '(the installation cannot be found from sources it lists itself)',
    );
  }
  return c;
}

/**
 * Throws `ValidationError` unless an integration of `config` (parsed) can tell its installation
 * from `sources` (listed): with `auth: app` and neither `installationId` nor `owner`, the sources
 * must have one owner. With `config.sources` "installation" the sources are found, not listed.
 */
export function checkListedSources(c: GithubConfig, sources: readonly string[]): void {
  if (c.sources !== null && sources.length > 0) {
    throw new ValidationError(
      'sources',
      `are the installation's repositories (config.sources "${INSTALLATION_SOURCES}"): give "all", or none`,
    );
  }
  if (c.auth !== 'app' || c.installationId !== null || c.owner !== null || c.sources !== null) return;
  const owners = [...new Set(sources.map((s) => s.split('/')[0]!.toLowerCase()))];
  if (owners.length === 1) return;
  const why = owners.length === 0 ? 'no sources are listed' : `the sources have ${owners.length} owners`;
  throw new ValidationError(
    'config.owner',
    `is required with auth "app" when config.installationId is not given and ${why} ` +
      '(the installation is found from the owner)',
  );
}

/** The one owner of `sources` (case as first listed), or null when they have none or several. */
export function ownerOfSources(sources: readonly string[]): string | null {
  const owners = new Map<string, string>();
  for (const source of sources) {
    const owner = source.split('/')[0]!;
    if (!owners.has(owner.toLowerCase())) owners.set(owner.toLowerCase(), owner);
  }
  return owners.size === 1 ? [...owners.values()][0]! : null;
}

function discoveredSources(raw: unknown): GithubSources | null {
  if (raw === undefined) return null;
  if (raw === INSTALLATION_SOURCES) return raw;
  throw new ValidationError(
    'config.sources',
    `must be "${INSTALLATION_SOURCES}" (the App installation's repositories), or left out to list the sources`,
  );
}

/** A GitHub login: 1–39 letters, digits or hyphens, not starting with a hyphen; absent: null. */
function login(raw: unknown, field: string): string | null {
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || !OWNER.test(raw)) {
    throw new ValidationError(field, 'must be a GitHub login: 1–39 letters, digits or hyphens');
  }
  return raw;
}

function auth(raw: unknown): GithubAuth {
  if (raw === undefined) return 'token';
  if (typeof raw === 'string' && (GITHUB_AUTHS as readonly string[]).includes(raw)) return raw as GithubAuth;
  throw new ValidationError('config.auth', `must be one of ${GITHUB_AUTHS.join(', ')}`);
}

/** A GitHub id: a positive safe integer (a string of digits is read as one); absent: null. */
function positiveId(raw: unknown, field: string): number | null {
  if (raw === undefined) return null;
  const n = typeof raw === 'string' && /^[1-9]\d{0,15}$/.test(raw) ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0) {
    throw new ValidationError(field, 'must be a positive integer');
  }
  return n;
}

/** GitHub Enterprise Server's API lives under a path. */
function baseUrl(raw: unknown, outbound: OutboundPolicy | undefined): string {
  if (raw === undefined) return GITHUB_DEFAULT_BASE_URL;
  return checkUrl(raw, 'config.baseUrl', { path: true }, outbound).text.replace(/\/+$/, '');
}

export interface RepoRef {
  owner: string;
  repo: string;
  /** `owner/repo` */
  full: string;
}

const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;

/** Whether `source` names a repository (`owner/repo`); the reason when it does not. */
function sourceProblem(source: string): string | null {
  const parts = source.split('/');
  if (parts.length !== 2) return 'must be owner/repo';
  const [owner, repo] = parts as [string, string];
  if (!OWNER.test(owner)) return 'owner must be 1–39 letters, digits or hyphens';
  if (!REPO.test(repo) || repo === '.' || repo === '..') return 'repo must be 1–100 letters, digits, ., _ or -';
  return null;
}

const REPOS = sourceKeys<RepoRef>({
  what: 'a repository (owner/repo)',
  problem: sourceProblem,
  parse: (source) => {
    const [owner, repo] = source.split('/') as [string, string];
    return { owner, repo, full: source };
  },
});

/** Throws `ValidationError` naming `field` unless `source` is `owner/repo`. */
export const validateSource = REPOS.validate;

/** A unit's source as a repository; one that is not `owner/repo` cannot be found. */
export const repoOf = REPOS.of;
