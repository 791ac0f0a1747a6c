/**
 * How Linear's answers tell its limits (https://linear.app/developers/rate-limiting): leaky buckets
 * per credential — requests and query complexity, reported on every answer in
 * `X-RateLimit-Requests-{Limit,Remaining,Reset}` and `X-RateLimit-Complexity-{Limit,Remaining,Reset}`
 * — and, for some queries, an endpoint's own bucket in `X-RateLimit-Endpoint-Requests-{Limit,
 * Remaining,Reset}` named by `X-RateLimit-Endpoint-Name`. A reset is the epoch millisecond at which
 * the bucket is full again. A limit is HTTP 429, or a GraphQL error whose `extensions.code` is
 * `RATELIMITED` (Linear answers it with HTTP 400); it may carry `retry-after` (read by Linear's SDK,
 * `RatelimitedLinearError.retryAfter`).
 *
 * A limit lifts no earlier than its `retry-after` and no earlier than the reset of every bucket it
 * shows spent; with neither, LIMIT_FALLBACK_MS from now (never the reset of a bucket that is not
 * spent: a leaky bucket's may be a moment away, and retrying then meets the same limit again).
 */
import type { BudgetObservation } from '../../store/rateBudgets.js';
import type { CallBudget } from '../kit/call.js';
import type { LimitSignal } from '../kit/errors.js';
import { headerOf, numberHeader, type HeaderSource } from '../kit/headers.js';
import type { RateBudget } from '../kit/budget.js';

/** A limit response without a spent bucket or a `retry-after` lasts at least this long. */
export const LIMIT_FALLBACK_MS = 60_000;

/** The shortest a limit lasts, whatever its headers say (a past reset is no reason to call at once). */
export const LIMIT_MIN_MS = 1_000;

/** The budget rows of endpoint buckets: this, then the endpoint's name (`linear:endpoint:issues`). */
export const LINEAR_ENDPOINT_BUDGET_PREFIX = 'linear:endpoint:';

export type BucketKind = 'requests' | 'complexity' | 'endpoint';

export interface GraphqlError {
  message?: string;
  path?: readonly (string | number)[];
  extensions?: { code?: string; type?: string; userPresentableMessage?: string };
}

/** One bucket's figures from an answer's headers. */
interface BucketFigures {
  remaining: number | null;
  limit: number | null;
  resetMs: number | null;
}

const PREFIX: Record<BucketKind, string> = {
  requests: 'x-ratelimit-requests',
  complexity: 'x-ratelimit-complexity',
  endpoint: 'x-ratelimit-endpoint-requests',
};

function figures(h: HeaderSource, kind: BucketKind): BucketFigures {
  return {
    remaining: numberHeader(h, `${PREFIX[kind]}-remaining`),
    limit: numberHeader(h, `${PREFIX[kind]}-limit`),
    resetMs: numberHeader(h, `${PREFIX[kind]}-reset`),
  };
}

/** The endpoint an answer names (`X-RateLimit-Endpoint-Name`), when it is a plain name. */
export function endpointName(h: HeaderSource): string | null {
  const name = headerOf(h, 'x-ratelimit-endpoint-name')?.trim();
  return name && /^[A-Za-z][A-Za-z0-9_.-]{0,59}$/.test(name) ? name : null;
}

/** `retry-after` in milliseconds from now: seconds, or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(h: HeaderSource, now: Date): number | null {
  const raw = headerOf(h, 'retry-after')?.trim();
  if (!raw) return null;
  if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw) * 1000;
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - now.getTime()) : null;
}

export function errorIs(e: GraphqlError, code: string, type: string): boolean {
  return e.extensions?.code === code || e.extensions?.type?.toLowerCase() === type;
}

/** The rate limit an answer signals, if any: 429 or a RATELIMITED error (see the module comment). */
export function linearLimitSignal(
  status: number,
  headers: HeaderSource,
  errors: readonly GraphqlError[],
  now: Date,
): LimitSignal | null {
  const limited = status === 429 || errors.some((e) => errorIs(e, 'RATELIMITED', 'ratelimited'));
  if (!limited) return null;
  const cost = numberHeader(headers, 'x-complexity') ?? 0;
  const need: Record<BucketKind, number> = { requests: 1, complexity: Math.max(1, cost), endpoint: 1 };
  const resets = (['requests', 'complexity', 'endpoint'] as const)
    .map((kind) => ({ f: figures(headers, kind), need: need[kind] }))
    .filter(({ f, need }) => f.remaining !== null && f.remaining < need && f.resetMs !== null)
    .map(({ f }) => f.resetMs!);
  const wait = retryAfterMs(headers, now);
  const t = now.getTime();
  const candidates = [...resets, ...(wait === null ? [] : [t + wait])];
  const lifts = candidates.length > 0 ? Math.max(...candidates) : t + LIMIT_FALLBACK_MS;
  return { kind: 'primary', liftsAt: new Date(Math.max(lifts, t + LIMIT_MIN_MS)) };
}

/** A bucket's observation from an answer (null when its headers are absent and it was no limit). */
export function linearObservation(
  headers: HeaderSource,
  kind: BucketKind,
  now: Date,
  limitedUntil: Date | null,
): BudgetObservation | null {
  const f = figures(headers, kind);
  if (f.remaining === null && limitedUntil === null) return null;
  const resetAt = f.resetMs === null ? null : new Date(f.resetMs);
  return { remaining: f.remaining, limit: f.limit, resetAt, limitedUntil, observedAt: now };
}

/**
 * The endpoint bucket one query meets, once an answer has named it: until then it gates nothing;
 * after, the shared budget of that endpoint (`open(name)`) gates the query's calls and takes its figures.
 */
export class EndpointSlot implements CallBudget {
  private budget: RateBudget | null = null;

  constructor(private readonly open: (name: string) => RateBudget) {}

  /** Takes the endpoint an answer names (the first one named stays). */
  learn(name: string | null): void {
    if (name !== null && this.budget === null) this.budget = this.open(name);
  }

  get known(): boolean {
    return this.budget !== null;
  }

  gate(): Promise<void> {
    return this.budget ? this.budget.gate() : Promise.resolve();
  }

  done(): void {
    this.budget?.done();
  }

  observe(o: BudgetObservation): Promise<void> {
    return this.budget ? this.budget.observe(o) : Promise.resolve();
  }
}
