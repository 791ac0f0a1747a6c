/**
 * The Jira emulator's options and the parsers of their text forms (`--scale bench`,
 * `--rate-limit 100/60s`, `--faults rate-limit:count=1:retryAfter=30`), and `parseJiraEmulatorArgs`
 * for a CLI's `emulate jira` arguments. A bad value is a ValidationError naming the option.
 */
import { checkScaleBounds, parseScaleText } from '../core/scale.js';
import type { Clock } from '../../clock.js';
import { ValidationError } from '../../errors.js';
import { isTimeZone } from '../../providers/jira/timeZone.js';

/** How much data the site holds; issues are a site-wide total split over the projects. */
export interface JiraScale {
  projects: number;
  issues: number;
  users: number;
  /** Most comments an ordinary issue gets (uniform from 0). */
  maxComments: number;
  /** Most extra changelog entries (label and assignee changes) an ordinary issue gets. */
  maxHistories: number;
  /** Issues (spread over the projects) with more comments and changelog entries than a search embeds. */
  longLists: number;
  /** Sprints per scrum board. */
  sprints: number;
  /** Days before `now` the data spreads over. */
  days: number;
}

export const SCALES = {
  small: { projects: 2, issues: 120, users: 8, maxComments: 4, maxHistories: 3, longLists: 2, sprints: 4, days: 30 },
  medium: {
    projects: 3,
    issues: 2_000,
    users: 20,
    maxComments: 5,
    maxHistories: 4,
    longLists: 10,
    sprints: 12,
    days: 180,
  },
  bench: {
    projects: 4,
    issues: 20_000,
    users: 40,
    maxComments: 4,
    maxHistories: 3,
    longLists: 40,
    sprints: 26,
    days: 365,
  },
} as const satisfies Record<string, JiraScale>;

export type ScaleName = keyof typeof SCALES;

const SCALE_MAX: JiraScale = {
  projects: 50,
  issues: 1_000_000,
  users: 5_000,
  maxComments: 100,
  maxHistories: 100,
  longLists: 10_000,
  sprints: 500,
  days: 3650,
};

/** The enforced budget: `limit` requests per credential per window of `windowSeconds` (ends on a minute). */
export interface RateLimitSpec {
  limit: number;
  windowSeconds: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitSpec = { limit: 10_000, windowSeconds: 60 };

export const FAULT_KINDS = ['rate-limit', 'unauthorized', 'forbidden', 'server-error', 'slow'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * An injected fault, for requests whose path contains `path` (all when absent): the next `count`,
 * each with `probability`, or every one. `rate-limit`: 429 with `Retry-After: retryAfter` (default
 * 30) and `X-RateLimit-Reset`; `unauthorized`: 401; `forbidden`: 403 without rate-limit headers;
 * `server-error`: `status` (500, 502, 503 or 504; default 503); `slow`: answers `delayMs` later.
 */
export interface FaultSpec {
  kind: FaultKind;
  count?: number;
  probability?: number;
  path?: string;
  retryAfter?: number;
  status?: number;
  delayMs?: number;
}

export interface JiraEmulatorOptions {
  port?: number;
  host?: string;
  seed?: number;
  /** The site's name (`<site>.atlassian.net` in `self` links is replaced by the emulator's URL). */
  site?: string;
  /** The instant the data ends at (default: the clock's now at start). */
  now?: Date;
  /** Rate-limit windows, mutation times (default: system clock). */
  clock?: Clock;
  /** A preset name (`small`, `medium`, `bench`), `key=value,…` text or a partial scale. */
  scale?: Partial<JiraScale> | string;
  rateLimit?: RateLimitSpec | string;
  faults?: FaultSpec[] | string;
  /** The time zone of the emulator's user, in which its JQL dates are read. @default UTC */
  timeZone?: string;
  /** Request log entries kept (oldest dropped first). @default 100 000 */
  logLimit?: number;
}

/** `small`, `medium`, `bench` or `issues=20000,projects=4` (over the small preset). */
export function parseScale(text: string): JiraScale {
  return parseScaleText(text, SCALES, validateScale);
}

export function validateScale(scale: JiraScale): JiraScale {
  return checkScaleBounds(scale, SCALE_MAX, ['projects', 'users', 'days']);
}

export function resolveScale(scale: JiraEmulatorOptions['scale']): JiraScale {
  if (scale === undefined) return { ...SCALES.small };
  if (typeof scale === 'string') return parseScale(scale);
  return validateScale({ ...SCALES.small, ...scale });
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/** `100/60s`, `500/5m`, `1000/1h` → a RateLimitSpec. */
export function parseRateLimit(text: string): RateLimitSpec {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*([smh]?)\s*$/.exec(text);
  if (!m) throw new ValidationError('rateLimit', `expected R/WINDOW such as 100/60s or 500/5m, got "${text}"`);
  return validateRateLimit({ limit: Number(m[1]), windowSeconds: Number(m[2]) * UNIT_SECONDS[m[3] || 's']! });
}

export function validateRateLimit(spec: RateLimitSpec): RateLimitSpec {
  for (const key of ['limit', 'windowSeconds'] as const) {
    if (!Number.isInteger(spec[key]) || spec[key] < 1) {
      throw new ValidationError(`rateLimit.${key}`, `expected a positive integer, got ${spec[key]}`);
    }
  }
  return { limit: spec.limit, windowSeconds: spec.windowSeconds };
}

const SERVER_STATUSES = [500, 502, 503, 504];

export function validateFault(f: FaultSpec, field: string): FaultSpec {
  if (!(FAULT_KINDS as readonly string[]).includes(f.kind)) {
    throw new ValidationError(`${field}.kind`, `unknown fault "${String(f.kind)}" (one of ${FAULT_KINDS.join(', ')})`);
  }
  const num = (key: 'probability' | 'count' | 'retryAfter' | 'delayMs', min: number, max: number) => {
    const v = f[key];
    if (v === undefined) return;
    if (typeof v !== 'number' || !(v >= min && v <= max) || (key !== 'probability' && !Number.isInteger(v))) {
      throw new ValidationError(`${field}.${key}`, `expected a number from ${min} to ${max}`);
    }
  };
  num('probability', 0, 1);
  num('count', 1, 1_000_000);
  num('retryAfter', 0, 86_400);
  num('delayMs', 0, 120_000);
  if (f.status !== undefined && !SERVER_STATUSES.includes(f.status)) {
    throw new ValidationError(`${field}.status`, 'expected 500, 502, 503 or 504');
  }
  if (f.probability !== undefined && f.count !== undefined) {
    throw new ValidationError(field, 'give probability or count, not both');
  }
  return { ...f };
}

const FAULT_KEYS: Record<string, keyof FaultSpec> = {
  p: 'probability',
  probability: 'probability',
  count: 'count',
  path: 'path',
  retryAfter: 'retryAfter',
  status: 'status',
  delay: 'delayMs',
  delayMs: 'delayMs',
};

/** A JSON array of FaultSpec, or `kind[:key=value…]` entries separated by commas. */
export function parseFaults(text: string): FaultSpec[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (cause) {
      throw new ValidationError('faults', 'not valid JSON', { cause });
    }
    if (!Array.isArray(parsed)) throw new ValidationError('faults', 'expected a JSON array');
    return parsed.map((f, i) => validateFault(f as FaultSpec, `faults[${i}]`));
  }
  return trimmed
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((entry, i) => {
      const [kind, ...pairs] = entry.trim().split(':');
      const spec: FaultSpec = { kind: kind as FaultKind };
      for (const pair of pairs) {
        const eq = pair.indexOf('=');
        const key = FAULT_KEYS[pair.slice(0, eq)];
        if (eq < 1 || !key) throw new ValidationError(`faults[${i}]`, `unknown setting "${pair}"`);
        const raw = pair.slice(eq + 1);
        if (key === 'path') spec.path = raw;
        else if (key !== 'kind') spec[key] = raw.trim() === '' ? Number.NaN : Number(raw);
      }
      return validateFault(spec, `faults[${i}]`);
    });
}

export function validateTimeZone(tz: string | undefined): string {
  if (tz === undefined) return 'UTC';
  if (!isTimeZone(tz)) throw new ValidationError('timeZone', `unknown IANA time zone "${tz}"`);
  return tz;
}

const FLAGS: Record<string, keyof JiraEmulatorOptions> = {
  '--port': 'port',
  '--host': 'host',
  '--seed': 'seed',
  '--site': 'site',
  '--scale': 'scale',
  '--rate-limit': 'rateLimit',
  '--faults': 'faults',
  '--time-zone': 'timeZone',
  '--log-limit': 'logLimit',
  '--now': 'now',
};

const NUMERIC = new Set<keyof JiraEmulatorOptions>(['port', 'seed', 'logLimit']);

/**
 * CLI-style arguments (`--port 8080 --scale bench --rate-limit 100/60s --faults … --seed 7
 * --time-zone Europe/Berlin --site acme --log-limit 1000 --now 2026-03-02T12:00Z`, also
 * `--flag=value`) → options, each value validated (a ValidationError names the flag's option).
 */
export function parseJiraEmulatorArgs(argv: readonly string[]): JiraEmulatorOptions {
  const out: JiraEmulatorOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const key = FLAGS[flag];
    if (!key) throw new ValidationError('args', `unknown option "${flag}" (${Object.keys(FLAGS).join(', ')})`);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new ValidationError(key, `${flag} needs a value`);
    setOption(out, key, value);
  }
  return out;
}

function setOption(out: JiraEmulatorOptions, key: keyof JiraEmulatorOptions, value: string): void {
  if (NUMERIC.has(key)) {
    const n = Number(value);
    const max = key === 'port' ? 65_535 : Number.MAX_SAFE_INTEGER;
    if (!Number.isInteger(n) || n < 0 || n > max) throw new ValidationError(key, `expected an integer, got "${value}"`);
    (out as Record<string, unknown>)[key] = n;
    return;
  }
  if (key === 'scale') out.scale = parseScale(value);
  else if (key === 'rateLimit') out.rateLimit = parseRateLimit(value);
  else if (key === 'faults') out.faults = parseFaults(value);
  else if (key === 'timeZone') out.timeZone = validateTimeZone(value);
  else if (key === 'now') {
    const ms = Date.parse(value);
    if (!Number.isFinite(ms) || !/(Z|[+-]\d{2}:?\d{2})$/.test(value)) {
      throw new ValidationError('now', `expected an ISO-8601 time with a zone, got "${value}"`);
    }
    out.now = new Date(ms);
  } else if (key === 'site') {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(value))
      throw new ValidationError('site', 'expected a site name (a-z, 0-9, -)');
    out.site = value;
  } else if (key === 'host') out.host = value;
}
