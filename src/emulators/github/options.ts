/**
 * The emulator's options and the parsers for their text forms (`--rate-limit 100/10s`,
 * `--scale bench`, `--faults secondary-limit:count=2:retryAfter=3`). A bad value is a
 * ValidationError naming the option.
 */
import type { Clock } from '../../clock.js';
import { ValidationError } from '../../errors.js';

/** How much data the organisation holds; issues and pulls are org-wide totals split over the repos. */
export interface EmulatorScale {
  repos: number;
  issues: number;
  pulls: number;
  /** Most comments one issue or pull request gets (uniform from 0). */
  maxComments: number;
  /** Most reviews one pull request gets (uniform from 0). */
  maxReviews: number;
  /** Commits pushed straight to the default branch per repository (merged pulls add one each). */
  directCommits: number;
  members: number;
  /** Days before `now` the data spreads over. */
  days: number;
}

export const SCALES = {
  small: { repos: 3, issues: 90, pulls: 30, maxComments: 4, maxReviews: 3, directCommits: 20, members: 8, days: 30 },
  medium: {
    repos: 4,
    issues: 2_000,
    pulls: 600,
    maxComments: 5,
    maxReviews: 3,
    directCommits: 200,
    members: 20,
    days: 180,
  },
  bench: {
    repos: 4,
    issues: 20_000,
    pulls: 5_000,
    maxComments: 4,
    maxReviews: 3,
    directCommits: 500,
    members: 40,
    days: 365,
  },
} as const satisfies Record<string, EmulatorScale>;

export type ScaleName = keyof typeof SCALES;

/** A token the emulator accepts. `repos` lists the private repositories it may read (all when absent). */
export interface EmulatorToken {
  /** Shown in the request log instead of the token. */
  id: string;
  token: string;
  repos?: readonly string[];
}

/** The primary rate limit: `limit` requests per token per window of `windowSeconds`. */
export interface RateLimitSpec {
  limit: number;
  windowSeconds: number;
  /** GitHub answers an exhausted primary limit with 403 or 429; default 403. */
  status?: 403 | 429;
}

export const FAULT_KINDS = [
  'primary-limit',
  'secondary-limit',
  'too-many-requests',
  'bad-credentials',
  'forbidden',
  'not-found',
  'server-error',
  'slow',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** An injected fault: applies to matching requests with `probability`, or to the next `count` of them. */
export interface FaultSpec {
  kind: FaultKind;
  probability?: number;
  count?: number;
  /** Only requests whose path contains this text. */
  path?: string;
  /** secondary-limit / too-many-requests: the `retry-after` seconds (no header when absent). */
  retryAfter?: number;
  /** server-error: 500, 502, 503 or 504 (default 502). */
  status?: number;
  /** slow: milliseconds to wait before answering normally. */
  delayMs?: number;
  /** primary-limit: seconds until the drained window resets (default: the window's own reset). */
  resetSeconds?: number;
}

export interface GithubEmulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  seed?: number;
  org?: string;
  /** The instant the data ends at (default: the clock's now at start). */
  now?: Date;
  /** Rate-limit windows, resets and mutation times (default: system clock). */
  clock?: Clock;
  scale?: ScaleName | Partial<EmulatorScale>;
  rateLimit?: RateLimitSpec | string;
  /** Default: one full-access token `demo` and one `public-only` token, derived from the seed. */
  tokens?: EmulatorToken[];
  faults?: FaultSpec[];
  /** Request log entries kept (oldest dropped first); default 100 000. */
  logLimit?: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitSpec = { limit: 5000, windowSeconds: 3600, status: 403 };

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/** `5000/3600s`, `100/10s`, `5000/1h`, `600/5m` (optionally `:429`) → a RateLimitSpec. */
export function parseRateLimit(text: string): RateLimitSpec {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*([smh]?)\s*(?::\s*(403|429))?\s*$/.exec(text);
  if (!m) throw new ValidationError('rateLimit', `expected R/WINDOW such as 5000/3600s or 100/10s, got "${text}"`);
  const limit = Number(m[1]);
  const windowSeconds = Number(m[2]) * UNIT_SECONDS[m[3] || 's']!;
  if (limit < 1 || windowSeconds < 1) throw new ValidationError('rateLimit', 'limit and window must be at least 1');
  return { limit, windowSeconds, status: m[4] === '429' ? 429 : 403 };
}

/** `small`, `medium`, `bench` or `issues=20000,pulls=5000,repos=4` (over the small preset). */
export function parseScale(text: string): EmulatorScale {
  if (text in SCALES) return { ...SCALES[text as ScaleName] };
  const scale: EmulatorScale = { ...SCALES.small };
  for (const part of text.split(',')) {
    const [key, raw] = part.split('=').map((s) => s.trim());
    if (!key || !(key in scale) || raw === undefined) {
      throw new ValidationError('scale', `unknown entry "${part}" (keys: ${Object.keys(scale).join(', ')})`);
    }
    scale[key as keyof EmulatorScale] = Number(raw);
  }
  return validateScale(scale);
}

const SCALE_MAX: EmulatorScale = {
  repos: 200,
  issues: 1_000_000,
  pulls: 500_000,
  maxComments: 100,
  maxReviews: 20,
  directCommits: 100_000,
  members: 5_000,
  days: 3650,
};

/** Every entry an integer within bounds; at least one repository, member and day. */
export function validateScale(scale: EmulatorScale): EmulatorScale {
  for (const key of Object.keys(SCALE_MAX) as (keyof EmulatorScale)[]) {
    const v = scale[key];
    const min = key === 'repos' || key === 'members' || key === 'days' ? 1 : 0;
    if (!Number.isInteger(v) || v < min || v > SCALE_MAX[key]) {
      throw new ValidationError(`scale.${key}`, `expected an integer from ${min} to ${SCALE_MAX[key]}, got ${v}`);
    }
  }
  return scale;
}

/** Resolves the `scale` option. */
export function resolveScale(scale: GithubEmulatorOptions['scale']): EmulatorScale {
  if (scale === undefined) return { ...SCALES.small };
  if (typeof scale === 'string') return parseScale(scale);
  return validateScale({ ...SCALES.small, ...scale });
}

/** A RateLimitSpec given as an object: positive integers and a 403 or 429 status. */
export function validateRateLimit(spec: RateLimitSpec): RateLimitSpec {
  for (const key of ['limit', 'windowSeconds'] as const) {
    if (!Number.isInteger(spec[key]) || spec[key] < 1) {
      throw new ValidationError(`rateLimit.${key}`, `expected a positive integer, got ${spec[key]}`);
    }
  }
  if (spec.status !== undefined && spec.status !== 403 && spec.status !== 429) {
    throw new ValidationError('rateLimit.status', 'expected 403 or 429');
  }
  return { ...spec, status: spec.status ?? 403 };
}

/** Tokens: non-empty, without whitespace, distinct tokens and ids. */
export function validateTokens(tokens: readonly EmulatorToken[]): EmulatorToken[] {
  if (tokens.length === 0) throw new ValidationError('tokens', 'at least one token is needed');
  const seen = new Set<string>();
  tokens.forEach((t, i) => {
    if (!t.id || !/^\S+$/.test(t.token))
      throw new ValidationError(`tokens[${i}]`, 'needs an id and a token without spaces');
    if (seen.has(t.id) || seen.has(`token:${t.token}`))
      throw new ValidationError(`tokens[${i}]`, 'duplicate id or token');
    seen.add(t.id).add(`token:${t.token}`);
  });
  return [...tokens];
}
