/**
 * The Linear emulator's options and the parsers of their text forms (`--rate-limit 1500/3600s`,
 * `--complexity-limit 250000/3600s`, `--scale bench`, `--faults ratelimited:count=2`), plus
 * `parseLinearEmulatorArgs` for a command line. A bad value is a ValidationError naming the option.
 */
import { ValidationError } from '../../errors.js';
import { commonFlags, intFlag, type CommonEmulatorFlags, type CommonEmulatorOptions } from '../core/options.js';
import { type CommonScale, parseScaleText, scaleTable } from '../core/scale.js';
import { parseWindow, validateWindow, type WindowSpec } from '../core/window.js';
import type { WebhookTarget } from '../core/webhooks.js';
import { parseLinearFaults, type LinearFaultSpec } from './faults.js';

/** How much data the workspace holds; issues are workspace totals spread over the teams. */
export interface LinearScale extends CommonScale {
  teams: number;
  users: number;
  projects: number;
  /** Cycles per team (two-week cycles, the last ones current and future). */
  cycles: number;
  /** Most labels one issue carries. */
  maxLabels: number;
}

/** The presets (`small`, `medium`, `bench`) and each key's maximum, in LinearScale's order. */
export const SCALE_RULES = scaleTable<LinearScale, 'medium' | 'bench'>(
  ['teams', 'issues', 'users', 'projects', 'cycles', 'maxComments', 'maxLabels', 'days'],
  {
    small: [2, 120, 8, 4, 4, 4, 3, 30],
    medium: [4, 2_000, 20, 12, 8, 5, 3, 180],
    bench: [4, 20_000, 40, 24, 26, 4, 3, 365],
    max: [50, 1_000_000, 5_000, 2_000, 500, 100, 10, 3650],
  },
  ['teams', 'users', 'days'],
);

export const LINEAR_SCALES = SCALE_RULES.presets;

export type LinearScaleName = keyof typeof LINEAR_SCALES;

/**
 * A leaky bucket, per key: `limit` units (requests or complexity points), refilled at the constant
 * rate `limit / windowSeconds` (ratelimit.ts).
 */
export type BudgetSpec = WindowSpec;

/**
 * The enforced budgets. A spent budget answers with `status` (Linear: 400) and a `RATELIMITED`
 * GraphQL error; 429 answers with HTTP 429, the same body and `retry-after`; 200 with the error and
 * `data: null`.
 */
export interface LinearRateLimit {
  requests: BudgetSpec;
  complexity: BudgetSpec;
  /**
   * Endpoint limits: a root field (`issues`, `issue`, …) with a request bucket of its own, reported
   * in `X-RateLimit-Endpoint-*` headers. @default none
   */
  endpoints?: Record<string, BudgetSpec>;
  /** Most complexity one query may have (more: a QUERY_TOO_COMPLEX error). @default 10000 */
  maxQueryComplexity?: number;
  status?: 200 | 400 | 429;
}

export const DEFAULT_LINEAR_RATE_LIMIT: LinearRateLimit = {
  requests: { limit: 5000, windowSeconds: 3600 },
  complexity: { limit: 3_000_000, windowSeconds: 3600 },
  maxQueryComplexity: 10_000,
  status: 400,
  endpoints: {},
};

/**
 * Issues changing while a listing is read. Edits are stamped at the clock's now (each moves its issue
 * to the front of `orderBy: updatedAt`); archived and deleted issues leave the listings.
 */
export interface LinearChurn {
  /** Issue edits per second of the emulator's clock, made as requests arrive. @default 0 */
  editsPerSecond?: number;
  /**
   * Called after each page of `issues` is answered (its operation, the page's issue ids), before the
   * next request: the place to edit, archive or delete issues between two given pages.
   */
  afterIssuesPage?: (page: { operation: string | null; ids: string[]; seq: number }) => void;
  /** Called after each page of the root `comments` connection is answered, like `afterIssuesPage`. */
  afterCommentsPage?: (page: { operation: string | null; ids: string[]; seq: number }) => void;
}

export interface LinearEmulatorOptions extends CommonEmulatorOptions {
  /** The personal API key (id `demo`). @default a fresh random `lin_api_…` key at every start */
  token?: string;
  /** The OAuth access token (id `oauth`). @default a fresh random `lin_oauth_…` token at every start */
  oauthToken?: string;
  scale?: LinearScaleName | Partial<LinearScale>;
  /** `{ requests, complexity }`, or only the requests budget (the complexity one stays default). */
  rateLimit?: Partial<LinearRateLimit> | BudgetSpec;
  faults?: LinearFaultSpec[];
  churn?: LinearChurn;
  /**
   * Where every edit's webhook delivery is POSTed, signed with its secret (webhooks.ts); the
   * emulator's `setWebhookTarget` sets or replaces it later. @default none
   */
  webhooks?: WebhookTarget;
}

/** `1500/3600s`, `100/10s`, `5000/1h` → a BudgetSpec (`field` names the option in errors). */
export function parseBudget(text: string, field = 'rateLimit'): BudgetSpec {
  return parseWindow(text, field, '1500/3600s or 100/10s');
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
    requests: validateWindow(given.requests ?? d.requests, 'rateLimit.requests'),
    complexity: validateWindow(given.complexity ?? d.complexity, 'rateLimit.complexity'),
    maxQueryComplexity: max,
    status,
    endpoints: endpointsOf(given.endpoints ?? d.endpoints!),
  };
}

function endpointsOf(raw: Record<string, BudgetSpec>): Record<string, BudgetSpec> {
  const out: Record<string, BudgetSpec> = {};
  for (const [name, spec] of Object.entries(raw)) {
    if (!/^[A-Za-z][A-Za-z0-9]{0,59}$/.test(name))
      throw new ValidationError('rateLimit.endpoints', 'expected field names');
    out[name] = validateWindow(spec, `rateLimit.endpoints.${name}`);
  }
  return out;
}

/** `small`, `medium`, `bench` or `issues=20000,teams=4` (over the small preset). */
export function parseLinearScale(text: string): LinearScale {
  return parseScaleText(text, SCALE_RULES);
}

/** A command line's emulator flags: `--port`, `--host`, `--seed`, `--now`, `--scale`, `--rate-limit`, … */
export interface LinearEmulatorFlags extends Omit<CommonEmulatorFlags, 'logLimit'> {
  scale?: string;
  rateLimit?: string;
  complexityLimit?: string;
  maxComplexity?: string;
  limitStatus?: string;
  faults?: string;
  /** `issues=30/60s,…`: endpoint limits. */
  endpointLimit?: string;
  /** Share of issue reads answered with partial data (a `partial` fault). */
  partialRate?: string;
  /** Issue edits per second while serving. */
  churn?: string;
}

/**
 * Emulator options from command-line flag text (what `syncrelay emulate linear` passes on). Each
 * flag is optional; a bad one throws a ValidationError naming it.
 */
export function parseLinearEmulatorArgs(flags: LinearEmulatorFlags): LinearEmulatorOptions {
  const o: LinearEmulatorOptions = commonFlags(flags, { seedMax: 2 ** 31 - 1, zonedNow: false });
  if (flags.scale !== undefined) o.scale = parseLinearScale(flags.scale);
  const rate: Partial<LinearRateLimit> = {};
  if (flags.rateLimit !== undefined) rate.requests = parseBudget(flags.rateLimit, 'rateLimit');
  if (flags.complexityLimit !== undefined) rate.complexity = parseBudget(flags.complexityLimit, 'complexityLimit');
  if (flags.maxComplexity !== undefined) rate.maxQueryComplexity = intFlag(flags.maxComplexity, 'maxComplexity', 1e9);
  if (flags.limitStatus !== undefined) rate.status = intFlag(flags.limitStatus, 'limitStatus', 999) as 200;
  if (flags.endpointLimit !== undefined) rate.endpoints = parseEndpoints(flags.endpointLimit);
  if (Object.keys(rate).length > 0) o.rateLimit = resolveRateLimit(rate);
  if (flags.faults !== undefined) o.faults = parseLinearFaults(flags.faults);
  const partial = flags.partialRate === undefined ? 0 : rateFlag(flags.partialRate, 'partialRate', 1);
  if (partial > 0) o.faults = [...(o.faults ?? []), { kind: 'partial', operation: 'Issue', probability: partial }];
  if (flags.churn !== undefined) o.churn = { editsPerSecond: rateFlag(flags.churn, 'churn', 1000) };
  return o;
}

function rateFlag(text: string, field: string, max: number): number {
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v) || v < 0 || v > max) {
    throw new ValidationError(field, `expected a number from 0 to ${max}`);
  }
  return v;
}

/** `issues=30/60s,issue=100/60s` → endpoint limits. */
export function parseEndpoints(text: string): Record<string, BudgetSpec> {
  const out: Record<string, BudgetSpec> = {};
  for (const part of text.split(',').filter((p) => p.trim() !== '')) {
    const [name, spec] = part.split('=');
    if (!name || !spec) throw new ValidationError('endpointLimit', `expected field=N/WINDOW, got "${part}"`);
    out[name.trim()] = parseBudget(spec, `endpointLimit.${name.trim()}`);
  }
  return out;
}
