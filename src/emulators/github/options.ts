/**
 * The emulator's options and the parsers for their text forms (`--rate-limit 100/10s`,
 * `--scale bench`; `--faults` in faults.ts). A bad value is a ValidationError naming the option.
 */
import { ValidationError } from '../../errors.js';
import type { CommonEmulatorOptions } from '../core/options.js';
import { type CommonScale, parseScaleText, scaleTable } from '../core/scale.js';
import { parseWindow, validateWindow, type WindowSpec } from '../core/window.js';
import type { WebhookTarget } from '../core/webhooks.js';
import type { FaultSpec } from './faults.js';

/** How much data the organisation holds; issues and pulls are org-wide totals split over the repos. */
export interface EmulatorScale extends CommonScale {
  repos: number;
  pulls: number;
  /** Most reviews one pull request gets (uniform from 0). */
  maxReviews: number;
  /** Commits pushed straight to the default branch per repository (merged pulls add one each). */
  directCommits: number;
  members: number;
}

/** The presets (`small`, `medium`, `bench`) and each key's maximum, in EmulatorScale's order. */
export const SCALE_RULES = scaleTable<EmulatorScale, 'medium' | 'bench'>(
  ['repos', 'issues', 'pulls', 'maxComments', 'maxReviews', 'directCommits', 'members', 'days'],
  {
    small: [3, 90, 30, 4, 3, 20, 8, 30],
    medium: [4, 2_000, 600, 5, 3, 200, 20, 180],
    bench: [4, 20_000, 5_000, 4, 3, 500, 40, 365],
    max: [200, 1_000_000, 500_000, 100, 20, 100_000, 5_000, 3650],
  },
  ['repos', 'members', 'days'],
);

export const SCALES = SCALE_RULES.presets;

export type ScaleName = keyof typeof SCALES;

/** A token the emulator accepts. `repos` lists the private repositories it may read (all when absent). */
export interface EmulatorToken {
  /** Shown in the request log instead of the token. */
  id: string;
  token: string;
  repos?: readonly string[];
}

/** The primary rate limit: `limit` requests per token per window of `windowSeconds`. */
export interface RateLimitSpec extends WindowSpec {
  /** GitHub answers an exhausted primary limit with 403 or 429; default 403. */
  status?: 403 | 429;
}

/** The `app` option: an App with one installation on the organisation (appAuth.ts; absent: no App). */
export interface GithubAppOptions {
  /** @default 1000001 */
  appId?: number;
  /** @default 2000001 */
  installationId?: number;
  /** How long an installation access token lasts. @default 3600 (GitHub's one hour) */
  tokenTtlSeconds?: number;
  /** The repositories (names) the installation is given. @default all of the organisation's */
  repositories?: readonly string[];
}

export interface GithubEmulatorOptions extends CommonEmulatorOptions {
  /** The organisation's login. @default emulated-org */
  org?: string;
  scale?: ScaleName | Partial<EmulatorScale>;
  rateLimit?: RateLimitSpec | string;
  /** The full-access token (id `demo`). @default a fresh random one at every start */
  token?: string;
  /** Every token, instead of `token`. Default: `demo` (see `token`) and a fresh `public-only` token. */
  tokens?: EmulatorToken[];
  faults?: FaultSpec[];
  /**
   * Concurrent edits per second of the clock while lists are read (churn.ts): 0 for none.
   * @default 0 (`syncrelay emulate github`: 1); tests set edits between given pages with `onPage`
   */
  churn?: number;
  /** Indexes of the repositories without any commit (409 on their commit lists). @default every fourth: 3, 7, … */
  emptyRepos?: readonly number[];
  /**
   * Serve a GitHub App with one installation on the organisation (appAuth.ts): its key pair is made
   * at start. @default none (no App endpoints; JWTs and `ghs_` tokens are not accepted)
   */
  app?: GithubAppOptions;
  /**
   * Where every edit's webhook delivery is POSTed, signed with its secret (webhooks.ts); the
   * emulator's `setWebhookTarget` sets or replaces it later. @default none
   */
  webhooks?: WebhookTarget;
}

/** The edits per second `syncrelay emulate github` makes unless `--churn` says otherwise. */
export const CLI_CHURN = 1;

export const DEFAULT_RATE_LIMIT: RateLimitSpec = { limit: 5000, windowSeconds: 3600, status: 403 };

/** `5000/3600s`, `100/10s`, `5000/1h`, `600/5m` (optionally `:429`) → a RateLimitSpec. */
export function parseRateLimit(text: string): RateLimitSpec {
  const [window, status, ...rest] = text.split(':');
  if (rest.length > 0 || (status !== undefined && !/^\s*(403|429)\s*$/.test(status))) {
    throw new ValidationError('rateLimit', `expected R/WINDOW[:429] such as 5000/3600s or 100/10s, got "${text}"`);
  }
  const spec = parseWindow(window!, 'rateLimit', '5000/3600s or 100/10s');
  return { ...spec, status: status?.trim() === '429' ? 429 : 403 };
}

/** `small`, `medium`, `bench` or `issues=20000,pulls=5000,repos=4` (over the small preset). */
export function parseScale(text: string): EmulatorScale {
  return parseScaleText(text, SCALE_RULES);
}

/** The `rateLimit` option: text parsed; an object with positive integers and a 403 or 429 status. */
export function resolveRateLimit(given: GithubEmulatorOptions['rateLimit']): RateLimitSpec {
  if (typeof given === 'string') return parseRateLimit(given);
  const spec = given ?? DEFAULT_RATE_LIMIT;
  if (spec.status !== undefined && spec.status !== 403 && spec.status !== 429) {
    throw new ValidationError('rateLimit.status', 'expected 403 or 429');
  }
  return { ...validateWindow(spec, 'rateLimit'), status: spec.status ?? 403 };
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
