/**
 * The Jira emulator's options and the parsers of their text forms (`--scale bench`,
 * `--rate-limit 100/60s`, `--faults rate-limit:count=1:retryAfter=30`), and `parseJiraEmulatorArgs`
 * for a CLI's `emulate jira` arguments. A bad value is a ValidationError naming the option.
 */
import { ValidationError } from '../../errors.js';
import { knownTimeZone } from './time.js';
import { commonFlags, flagValues, type CommonEmulatorOptions } from '../core/options.js';
import { type CommonScale, parseScaleText, scaleTable } from '../core/scale.js';
import { parseWindow, validateWindow, type WindowSpec } from '../core/window.js';
import { parseFaults, type FaultSpec } from './faults.js';
import { DEFAULT_ENDPOINT_LIMITS, type EndpointLimitSpec } from './limits.js';
import type { JiraOAuthOptions } from './oauth.js';
import type { WebhookTarget } from '../core/webhooks.js';

/** How much data the site holds; issues are a site-wide total split over the projects. */
export interface JiraScale extends CommonScale {
  projects: number;
  users: number;
  /** Most extra changelog entries (label and assignee changes) an ordinary issue gets. */
  maxHistories: number;
  /** Issues (spread over the projects) with more comments and changelog entries than a search embeds. */
  longLists: number;
  /** Sprints per board with sprints. */
  sprints: number;
  /** Accounts in the user-search pool that cannot be assigned (apps, deactivated users). */
  hiddenUsers: number;
}

/** The presets (`small`, `medium`, `bench`) and each key's maximum, in JiraScale's order. */
export const SCALE_RULES = scaleTable<JiraScale, 'medium' | 'bench'>(
  ['projects', 'issues', 'users', 'maxComments', 'maxHistories', 'longLists', 'sprints', 'days', 'hiddenUsers'],
  {
    small: [2, 120, 8, 4, 3, 2, 4, 30, 250],
    medium: [3, 2_000, 20, 5, 4, 10, 12, 180, 250],
    bench: [4, 20_000, 40, 4, 3, 40, 26, 365, 300],
    max: [50, 1_000_000, 5_000, 100, 100, 10_000, 500, 3650, 100_000],
  },
  ['projects', 'users', 'days'],
);

export const SCALES = SCALE_RULES.presets;

export type ScaleName = keyof typeof SCALES;

/** The enforced budget: `limit` requests per credential per window of `windowSeconds` (ends on a minute). */
export type RateLimitSpec = WindowSpec;

export const DEFAULT_RATE_LIMIT: RateLimitSpec = { limit: 10_000, windowSeconds: 60 };

/**
 * `cloud`: Jira Cloud's REST v3; `datacenter`: Jira Data Center / Server's REST v2 (routesDc.ts,
 * renderDc.ts, serverDc.ts), REST v3 answering 404.
 */
export type JiraFlavor = 'cloud' | 'datacenter';

/** The `flavor` option: `cloud` unless `datacenter`. */
export function resolveFlavor(given: string | undefined): JiraFlavor {
  if (given === undefined || given === 'cloud' || given === 'datacenter') return given ?? 'cloud';
  throw new ValidationError('flavor', `expected cloud or datacenter, got "${given.slice(0, 40)}"`);
}

export interface JiraEmulatorOptions extends CommonEmulatorOptions {
  /** Which Jira the emulator is. @default cloud */
  flavor?: JiraFlavor;
  /** The API token of the site's user (`email:api_token`). @default a fresh random one at every start */
  apiToken?: string;
  /** The site's name (`<site>.atlassian.net` in `self` links is replaced by the emulator's URL). */
  site?: string;
  /** A preset name (`small`, `medium`, `bench`), `key=value,…` text or a partial scale. */
  scale?: Partial<JiraScale> | string;
  rateLimit?: RateLimitSpec | string;
  faults?: FaultSpec[] | string;
  /** The time zone of the emulator's user, in which its JQL dates are read. @default UTC */
  timeZone?: string;
  /**
   * How long a change takes to become visible to search (`/rest/api/3/search/jql` is eventually
   * consistent; searchIndex.ts). `0` makes search current; text such as `30s` or `1500ms`.
   * @default DEFAULT_SEARCH_LAG_MS
   */
  searchLagMs?: number | string;
  /** Per-endpoint burst limits (limits.ts). @default DEFAULT_ENDPOINT_LIMITS */
  endpointLimits?: Partial<EndpointLimitSpec>;
  /**
   * Comments a `comment/list` page holds at most (routesComments.ts). Jira documents no page size
   * for it and the operation takes no paging parameter (clients read one answer's `values`); a
   * smaller one makes a reader page through the answer, as a `PageBean` answer may. @default
   * everything asked
   */
  commentListPage?: number;
  /** Edits per second of the clock while requests come in (churn.ts). @default 0 */
  churn?: number;
  /**
   * Serve OAuth 2.0 (3LO) too (oauth.ts): a token endpoint with rotating refresh tokens,
   * accessible-resources and the API gateway path. `true` for fresh client and tokens. @default off
   */
  oauth?: JiraOAuthOptions | boolean;
  /**
   * Where every edit's webhook delivery is POSTed, signed with its secret (webhooks.ts); the
   * emulator's `setWebhookTarget` sets or replaces it later. @default none
   */
  webhooks?: WebhookTarget;
}

/** Search sees a change this long after it was made, unless told otherwise. */
export const DEFAULT_SEARCH_LAG_MS = 30_000;

const LAG_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000 };

/** `30s`, `1500ms`, `2m` (a bare number is milliseconds) → ms, at most an hour. */
export function parseSearchLag(text: string): number {
  const m = /^\s*(\d+)\s*(ms|s|m)?\s*$/.exec(text);
  if (!m) throw new ValidationError('searchLagMs', `expected a duration such as 30s or 1500ms, got "${text}"`);
  return validateSearchLag(Number(m[1]) * LAG_UNITS[m[2] ?? 'ms']!);
}

/** The `searchLagMs` option: text parsed, a number checked, the default when absent. */
export function resolveSearchLag(given: JiraEmulatorOptions['searchLagMs']): number {
  if (given === undefined) return DEFAULT_SEARCH_LAG_MS;
  return typeof given === 'string' ? parseSearchLag(given) : validateSearchLag(given);
}

function validateSearchLag(ms: number): number {
  if (!Number.isInteger(ms) || ms < 0 || ms > 3_600_000) {
    throw new ValidationError('searchLagMs', `expected whole milliseconds from 0 to 3600000, got ${ms}`);
  }
  return ms;
}

/** The `endpointLimits` option over the defaults; every limit a whole number from 1. */
export function resolveEndpointLimits(given: JiraEmulatorOptions['endpointLimits']): EndpointLimitSpec {
  const spec = {
    ...DEFAULT_ENDPOINT_LIMITS,
    ...given,
    routes: { ...DEFAULT_ENDPOINT_LIMITS.routes, ...given?.routes },
  };
  for (const [name, v] of [
    ['limit', spec.limit],
    ['windowSeconds', spec.windowSeconds],
    ...Object.entries(spec.routes),
  ]) {
    if (!Number.isInteger(v) || (v as number) < 1) {
      throw new ValidationError(`endpointLimits.${String(name)}`, `expected a whole number from 1, got ${String(v)}`);
    }
  }
  return spec;
}

/** `small`, `medium`, `bench` or `issues=20000,projects=4` (over the small preset). */
export function parseScale(text: string): JiraScale {
  return parseScaleText(text, SCALE_RULES);
}

/** `100/60s`, `500/5m`, `1000/1h` → a RateLimitSpec. */
export function parseRateLimit(text: string): RateLimitSpec {
  return parseWindow(text, 'rateLimit', '100/60s or 500/5m');
}

/** The `rateLimit` option: text parsed, an object checked, the default when absent. */
export function resolveRateLimit(given: JiraEmulatorOptions['rateLimit']): RateLimitSpec {
  return typeof given === 'string' ? parseRateLimit(given) : validateWindow(given ?? DEFAULT_RATE_LIMIT, 'rateLimit');
}

/** The `faults` option: text parsed, a list kept as it is (the fault deck checks it). */
export function resolveFaults(given: JiraEmulatorOptions['faults']): FaultSpec[] {
  return typeof given === 'string' ? parseFaults(given) : (given ?? []);
}

export function validateTimeZone(tz: string | undefined): string {
  if (tz === undefined) return 'UTC';
  if (!knownTimeZone(tz)) throw new ValidationError('timeZone', `unknown IANA time zone "${tz}"`);
  return tz;
}

const FLAGS: Readonly<Record<string, keyof JiraEmulatorOptions>> = {
  '--port': 'port',
  '--host': 'host',
  '--seed': 'seed',
  '--site': 'site',
  '--scale': 'scale',
  '--rate-limit': 'rateLimit',
  '--faults': 'faults',
  '--time-zone': 'timeZone',
  '--search-lag': 'searchLagMs',
  '--log-limit': 'logLimit',
  '--now': 'now',
  '--flavor': 'flavor',
};

/**
 * CLI-style arguments (`--port 8080 --scale bench --rate-limit 100/60s --faults … --seed 7
 * --time-zone Europe/Berlin --site acme --log-limit 1000 --now 2026-03-02T12:00Z`, also
 * `--flag=value`) → options, each value validated (a ValidationError names the flag's option).
 */
export function parseJiraEmulatorArgs(argv: readonly string[]): JiraEmulatorOptions {
  const v = flagValues(argv, FLAGS);
  const out: JiraEmulatorOptions = commonFlags(v, { seedMax: Number.MAX_SAFE_INTEGER, zonedNow: true });
  if (v.site !== undefined) out.site = siteName(v.site);
  if (v.scale !== undefined) out.scale = parseScale(v.scale);
  if (v.rateLimit !== undefined) out.rateLimit = parseRateLimit(v.rateLimit);
  if (v.faults !== undefined) out.faults = parseFaults(v.faults);
  if (v.timeZone !== undefined) out.timeZone = validateTimeZone(v.timeZone);
  if (v.searchLagMs !== undefined) out.searchLagMs = parseSearchLag(v.searchLagMs);
  if (v.flavor !== undefined) out.flavor = resolveFlavor(v.flavor);
  return out;
}

function siteName(text: string): string {
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(text)) throw new ValidationError('site', 'expected a site name (a-z, 0-9, -)');
  return text;
}
