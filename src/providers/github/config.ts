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
 *
 * A source is a repository, `owner/repo`.
 */
import { budgetShare, checkUrl, parseSettings, sourceKeys } from '../kit/config.js';
import type { OutboundPolicy } from '../kit/outbound.js';

export interface GithubConfig {
  baseUrl: string;
  budgetShare: number;
}

export const GITHUB_DEFAULT_BASE_URL = 'https://api.github.com';
/**
 * Reads `config` (its URL under `outbound`, @default the process's policy), throwing
 * `ValidationError` naming `config.<key>` for the first problem.
 */
export function parseGithubConfig(config: unknown, outbound?: OutboundPolicy): GithubConfig {
  return parseSettings<GithubConfig>(config, 'GitHub', { baseUrl: (raw) => baseUrl(raw, outbound), budgetShare });
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
