/**
 * A GitHub integration's config and sources, validated once.
 *
 * | key           | rule                                                                          |
 * |---------------|-------------------------------------------------------------------------------|
 * | `baseUrl`     | an http(s) URL without credentials, ≤ 2048 characters; @default api.github.com |
 * |               | (GitHub Enterprise Server: `https://host/api/v3`)                             |
 * | `budgetShare` | a number, 0 < x ≤ 1: the share of the credential's rate-limit budget this     |
 * |               | integration may use (the rest is kept for others); @default 1                 |
 *
 * A source is a repository, `owner/repo`.
 */
import { NonRetryableError, ValidationError } from '../../errors.js';

export interface GithubConfig {
  baseUrl: string;
  budgetShare: number;
}

export const GITHUB_DEFAULT_BASE_URL = 'https://api.github.com';
const MAX_URL = 2048;
const KEYS = new Set(['baseUrl', 'budgetShare']);

/** Reads `config`, throwing `ValidationError` naming `config.<key>` for the first problem. */
export function parseGithubConfig(config: unknown): GithubConfig {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new ValidationError('config', 'must be an object');
  }
  const c = config as Record<string, unknown>;
  for (const key of Object.keys(c)) {
    if (!KEYS.has(key))
      throw new ValidationError(`config.${key}`, 'is not a GitHub setting (known: baseUrl, budgetShare)');
  }
  return { baseUrl: baseUrl(c.baseUrl), budgetShare: share(c.budgetShare) };
}

function baseUrl(raw: unknown): string {
  if (raw === undefined) return GITHUB_DEFAULT_BASE_URL;
  const field = 'config.baseUrl';
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_URL) {
    throw new ValidationError(field, `must be a URL of 1–${MAX_URL} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new ValidationError(field, 'is not a URL', { cause });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ValidationError(field, 'must use http or https');
  if (url.username || url.password) throw new ValidationError(field, 'must not carry credentials');
  if (url.search || url.hash) throw new ValidationError(field, 'must not have a query or fragment');
  return raw.replace(/\/+$/, '');
}

function share(raw: unknown): number {
  if (raw === undefined) return 1;
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0 || raw > 1) {
    throw new ValidationError('config.budgetShare', 'must be a number greater than 0 and at most 1');
  }
  return raw;
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
export function sourceProblem(source: string): string | null {
  const parts = source.split('/');
  if (parts.length !== 2) return 'must be owner/repo';
  const [owner, repo] = parts as [string, string];
  if (!OWNER.test(owner)) return 'owner must be 1–39 letters, digits or hyphens';
  if (!REPO.test(repo) || repo === '.' || repo === '..') return 'repo must be 1–100 letters, digits, ., _ or -';
  return null;
}

/** Throws `ValidationError` naming `field` unless `source` is `owner/repo`. */
export function validateSource(source: string, field = 'source'): void {
  const problem = sourceProblem(source);
  if (problem) throw new ValidationError(field, `${problem}, got ${JSON.stringify(source)}`);
}

/** A unit's source as a repository; one that is not `owner/repo` cannot be found. */
export function repoOf(source: string | null, subject: string): RepoRef {
  const problem = source === null ? 'no source' : sourceProblem(source);
  if (problem !== null || source === null) {
    throw new NonRetryableError(
      `${subject}: source ${JSON.stringify(source)} is not a repository (${problem ?? 'no source'})`,
      'not_found',
    );
  }
  const [owner, repo] = source.split('/') as [string, string];
  return { owner, repo, full: source };
}
