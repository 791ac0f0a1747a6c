/**
 * The Linear emulator's options and the parsers of their text forms (`--rate-limit 1500/3600s`,
 * `--complexity-limit 250000/3600s`, `--scale bench`, `--faults ratelimited:count=2`), plus
 * `parseLinearEmulatorArgs` for a command line. A bad value is a ValidationError naming the option.
 */
import { checkScaleBounds, parseScaleText } from '../core/scale.js';
import type { Clock } from '../../clock.js';
import { ValidationError } from '../../errors.js';

/** How much data the workspace holds; issues are workspace totals spread over the teams. */
export interface LinearScale {
  teams: number;
  issues: number;
  users: number;
  projects: number;
  /** Cycles per team (two-week cycles, the last ones current and future). */
  cycles: number;
  /** Most comments one issue gets (uniform from 0). */
  maxComments: number;
  /** Most labels one issue carries. */
  maxLabels: number;
  /** Days before `now` the data spreads over. */
  days: number;
}

export const LINEAR_SCALES = {
  small: { teams: 2, issues: 120, users: 8, projects: 4, cycles: 4, maxComments: 4, maxLabels: 3, days: 30 },
  medium: { teams: 4, issues: 2_000, users: 20, projects: 12, cycles: 8, maxComments: 5, maxLabels: 3, days: 180 },
  bench: { teams: 4, issues: 20_000, users: 40, projects: 24, cycles: 26, maxComments: 4, maxLabels: 3, days: 365 },
} as const satisfies Record<string, LinearScale>;

export type LinearScaleName = keyof typeof LINEAR_SCALES;

/** A fixed-window budget: `limit` units (requests or complexity points) per `windowSeconds`, per key. */
export interface BudgetSpec {
  limit: number;
  windowSeconds: number;
}

/**
 * The enforced budgets. A spent budget answers with `status` (Linear: 400) and a `RATELIMITED`
 * GraphQL error; 429 answers with HTTP 429 and the same body; 200 with the error and `data: null`.
 */
export interface LinearRateLimit {
  requests: BudgetSpec;
  complexity: BudgetSpec;
  /** Most complexity one query may have (more: a QUERY_TOO_COMPLEX error). @default 10000 */
  maxQueryComplexity?: number;
  status?: 200 | 400 | 429;
}

export const DEFAULT_LINEAR_RATE_LIMIT: LinearRateLimit = {
  requests: { limit: 5000, windowSeconds: 3600 },
  complexity: { limit: 3_000_000, windowSeconds: 3600 },
  maxQueryComplexity: 10_000,
  status: 400,
};

export const LINEAR_FAULT_KINDS = [
  'too-many-requests', // HTTP 429 with the RATELIMITED body and the budget headers
  'ratelimited', // a RATELIMITED GraphQL error (status 400, or `status` 200)
  'complexity', // a QUERY_TOO_COMPLEX GraphQL error
  'unauthenticated', // HTTP 401 AUTHENTICATION_ERROR
  'server-error', // 500, 502, 503 or 504
  'slow', // answer normally after `delayMs`
] as const;

export type LinearFaultKind = (typeof LINEAR_FAULT_KINDS)[number];

/** An injected fault: applies to matching requests with `probability`, or to the next `count` of them. */
export interface LinearFaultSpec {
  kind: LinearFaultKind;
  probability?: number;
  count?: number;
  /** Only requests whose operation name contains this text. */
  operation?: string;
  /** server-error: 500, 502, 503 or 504 (default 502); ratelimited: 200 or 400 (default 400). */
  status?: number;
  /** slow: milliseconds to wait before answering. */
  delayMs?: number;
  /** too-many-requests / ratelimited: seconds until the reported reset (default: the window's own). */
  resetSeconds?: number;
}

export interface LinearEmulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  seed?: number;
  /** The instant the data ends at (default: the clock's now at start). */
  now?: Date;
  /** Budget windows and mutation times (default: system clock). */
  clock?: Clock;
  scale?: LinearScaleName | Partial<LinearScale>;
  /** `{ requests, complexity }`, or only the requests budget (the complexity one stays default). */
  rateLimit?: Partial<LinearRateLimit> | BudgetSpec;
  faults?: LinearFaultSpec[];
  /** Request log entries kept (oldest dropped first); default 100 000. */
  logLimit?: number;
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/** `1500/3600s`, `100/10s`, `5000/1h` → a BudgetSpec (`field` names the option in errors). */
export function parseBudget(text: string, field = 'rateLimit'): BudgetSpec {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*([smh]?)\s*$/.exec(text);
  if (!m) throw new ValidationError(field, `expected N/WINDOW such as 1500/3600s or 100/10s, got "${text}"`);
  return validateBudget({ limit: Number(m[1]), windowSeconds: Number(m[2]) * UNIT_SECONDS[m[3] || 's']! }, field);
}

export function validateBudget(spec: BudgetSpec, field: string): BudgetSpec {
  for (const key of ['limit', 'windowSeconds'] as const) {
    const v = spec[key];
    if (!Number.isInteger(v) || v < 1 || v > 1e9) {
      throw new ValidationError(`${field}.${key}`, `expected a positive integer, got ${v}`);
    }
  }
  return { limit: spec.limit, windowSeconds: spec.windowSeconds };
}

/** The `rateLimit` option resolved over the defaults. */
export function resolveRateLimit(raw: LinearEmulatorOptions['rateLimit']): Required<LinearRateLimit> {
  const d = DEFAULT_LINEAR_RATE_LIMIT;
  const given: Partial<LinearRateLimit> = raw && 'limit' in raw ? { requests: raw } : (raw ?? {});
  const status = given.status ?? d.status!;
  if (![200, 400, 429].includes(status)) throw new ValidationError('rateLimit.status', 'expected 200, 400 or 429');
  const max = given.maxQueryComplexity ?? d.maxQueryComplexity!;
  if (!Number.isInteger(max) || max < 1) throw new ValidationError('rateLimit.maxQueryComplexity', 'expected >= 1');
  return {
    requests: validateBudget(given.requests ?? d.requests, 'rateLimit.requests'),
    complexity: validateBudget(given.complexity ?? d.complexity, 'rateLimit.complexity'),
    maxQueryComplexity: max,
    status,
  };
}

const SCALE_MAX: LinearScale = {
  teams: 50,
  issues: 1_000_000,
  users: 5_000,
  projects: 2_000,
  cycles: 500,
  maxComments: 100,
  maxLabels: 10,
  days: 3650,
};

/** `small`, `medium`, `bench` or `issues=20000,teams=4` (over the small preset). */
export function parseLinearScale(text: string): LinearScale {
  return parseScaleText(text, LINEAR_SCALES, validateLinearScale);
}

export function validateLinearScale(scale: LinearScale): LinearScale {
  return checkScaleBounds(scale, SCALE_MAX, ['teams', 'users', 'days']);
}

export function resolveLinearScale(scale: LinearEmulatorOptions['scale']): LinearScale {
  if (scale === undefined) return { ...LINEAR_SCALES.small };
  if (typeof scale === 'string') return parseLinearScale(scale);
  return validateLinearScale({ ...LINEAR_SCALES.small, ...scale });
}

const FAULT_KEYS: Record<string, keyof LinearFaultSpec> = {
  p: 'probability',
  probability: 'probability',
  count: 'count',
  operation: 'operation',
  op: 'operation',
  status: 'status',
  delay: 'delayMs',
  delayMs: 'delayMs',
  resetSeconds: 'resetSeconds',
};

/** `--faults` text: a JSON array, or comma-separated `kind[:key=value…]` (e.g. `ratelimited:count=2`). */
export function parseLinearFaults(text: string): LinearFaultSpec[] {
  const trimmed = text.trim();
  let specs: LinearFaultSpec[];
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (cause) {
      throw new ValidationError('faults', 'not valid JSON', { cause });
    }
    if (!Array.isArray(parsed)) throw new ValidationError('faults', 'expected a JSON array');
    specs = parsed as LinearFaultSpec[];
  } else {
    specs = trimmed
      .split(',')
      .filter((s) => s.trim() !== '')
      .map((entry, i) => faultEntry(entry.trim(), `faults[${i}]`));
  }
  return specs.map((f, i) => validateLinearFault(f, `faults[${i}]`));
}

function faultEntry(entry: string, field: string): LinearFaultSpec {
  const [kind, ...pairs] = entry.split(':');
  const spec: LinearFaultSpec = { kind: kind as LinearFaultKind };
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = FAULT_KEYS[pair.slice(0, eq)];
    if (eq < 1 || !key) throw new ValidationError(field, `unknown setting "${pair}"`);
    const raw = pair.slice(eq + 1);
    if (key === 'operation') spec.operation = raw;
    else if (key !== 'kind') spec[key] = raw.trim() === '' ? Number.NaN : Number(raw);
  }
  return spec;
}

export function validateLinearFault(f: LinearFaultSpec, field: string): LinearFaultSpec {
  if (!(LINEAR_FAULT_KINDS as readonly string[]).includes(f.kind)) {
    throw new ValidationError(`${field}.kind`, `unknown fault "${String(f.kind)}" (${LINEAR_FAULT_KINDS.join(', ')})`);
  }
  const num = (key: 'probability' | 'count' | 'delayMs' | 'resetSeconds', max: number, integer: boolean) => {
    const v = f[key];
    if (v === undefined) return;
    if (typeof v !== 'number' || !(v >= 0 && v <= max) || (integer && !Number.isInteger(v))) {
      throw new ValidationError(`${field}.${key}`, `expected ${integer ? 'an integer' : 'a number'} from 0 to ${max}`);
    }
  };
  num('probability', 1, false);
  num('count', 1_000_000, true);
  num('delayMs', 120_000, true);
  num('resetSeconds', 86_400, true);
  if (f.status !== undefined && ![200, 400, 500, 502, 503, 504].includes(f.status)) {
    throw new ValidationError(`${field}.status`, 'expected 200 or 400 (ratelimited), or 500, 502, 503, 504');
  }
  if (f.probability !== undefined && f.count !== undefined) {
    throw new ValidationError(field, 'give probability or count, not both');
  }
  return { ...f };
}

/** A command line's emulator flags: `--port`, `--host`, `--seed`, `--now`, `--scale`, `--rate-limit`, … */
export interface LinearEmulatorFlags {
  port?: string;
  host?: string;
  seed?: string;
  now?: string;
  scale?: string;
  rateLimit?: string;
  complexityLimit?: string;
  maxComplexity?: string;
  limitStatus?: string;
  faults?: string;
}

function intFlag(raw: string, field: string, max: number): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n > max) throw new ValidationError(field, `expected an integer from 0 to ${max}`);
  return n;
}

/**
 * Emulator options from command-line flag text (what `syncrelay emulate linear` passes on). Each
 * flag is optional; a bad one throws a ValidationError naming it.
 */
export function parseLinearEmulatorArgs(flags: LinearEmulatorFlags): LinearEmulatorOptions {
  const o: LinearEmulatorOptions = {};
  if (flags.port !== undefined) o.port = intFlag(flags.port, 'port', 65535);
  if (flags.host !== undefined) o.host = flags.host;
  if (flags.seed !== undefined) o.seed = intFlag(flags.seed, 'seed', 2 ** 31 - 1);
  if (flags.now !== undefined) {
    const t = Date.parse(flags.now);
    if (!Number.isFinite(t)) throw new ValidationError('now', 'expected an ISO-8601 time');
    o.now = new Date(t);
  }
  if (flags.scale !== undefined) o.scale = parseLinearScale(flags.scale);
  const rate: Partial<LinearRateLimit> = {};
  if (flags.rateLimit !== undefined) rate.requests = parseBudget(flags.rateLimit, 'rateLimit');
  if (flags.complexityLimit !== undefined) rate.complexity = parseBudget(flags.complexityLimit, 'complexityLimit');
  if (flags.maxComplexity !== undefined) rate.maxQueryComplexity = intFlag(flags.maxComplexity, 'maxComplexity', 1e9);
  if (flags.limitStatus !== undefined) rate.status = intFlag(flags.limitStatus, 'limitStatus', 999) as 200;
  if (Object.keys(rate).length > 0) o.rateLimit = resolveRateLimit(rate);
  if (flags.faults !== undefined) o.faults = parseLinearFaults(flags.faults);
  return o;
}
