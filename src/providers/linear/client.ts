/**
 * The Linear GraphQL client of one unit: a plain `fetch` POST of our own queries (queries.ts),
 * every call gated by the credential's shared budgets, its rate-limit headers recorded, and every
 * failure classified by the shared HTTP layer (../http/errors.ts).
 *
 * Credential: a personal API key (`lin_api_…`) is sent as `Authorization: <key>`; an OAuth access
 * token — one given as `Bearer <token>`, or starting `lin_oauth_` — is sent as
 * `Authorization: Bearer <token>`. Anything else is sent as a personal API key.
 *
 * Linear's limits (https://linear.app/developers/rate-limiting): two budgets per credential —
 * requests and query complexity — reported on every response in `X-RateLimit-Requests-{Limit,
 * Remaining,Reset}` and `X-RateLimit-Complexity-{Limit,Remaining,Reset}` (resets are epoch
 * milliseconds). A limit is HTTP 429, or a GraphQL error whose `extensions.code` is `RATELIMITED`
 * (or `extensions.type` `ratelimited`); it lifts at the reset of the exhausted budget.
 * A query-complexity error (`extensions.code` `QUERY_TOO_COMPLEX`) means our query asks too much:
 * non-retryable, naming the query. 401, 403 or an `AUTHENTICATION_ERROR` / `FORBIDDEN` error is
 * `auth`; 5xx and network failures are retried in place, then `provider_error`.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import { NonRetryableError } from '../../errors.js';
import type { BudgetObservation } from '../../store/rateBudgets.js';
import type { RateBudget } from '../kit/budget.js';
import { classifyFailure, failureError, type CallSubject, type LimitSignal } from '../kit/errors.js';
import { withRetries, type RetryOptions } from '../kit/retry.js';
import { abortReason } from '../kit/sleep.js';

/** A limit response without a usable reset header lasts at least this long. */
export const LIMIT_FALLBACK_MS = 60_000;

/** The `extensions.code` of a query whose complexity exceeds Linear's per-query maximum. */
export const COMPLEXITY_ERROR_CODE = 'QUERY_TOO_COMPLEX';

/** The credential's two budgets: requests and query complexity points. */
export interface LinearBudgets {
  requests: RateBudget;
  complexity: RateBudget;
}

export interface LinearClientOptions {
  apiUrl: string;
  /** The credential's secret; it goes into the Authorization header and nowhere else. */
  credential: string;
  /** Named in every error, e.g. `linear integration "acme"`. */
  subject: string;
  clock: Clock;
  signal: AbortSignal;
  logger: Logger;
  budgets: LinearBudgets | null;
  retry?: RetryOptions;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

export interface LinearClient {
  /** Runs query `name` (`text`) with `variables`; returns its `data`, or throws a classified error. */
  query<T>(name: string, text: string, variables: Record<string, unknown>): Promise<T>;
}

/** The Authorization header value for a credential (see the module comment). */
export function authorizationHeader(credential: string): string {
  const c = credential.trim();
  const bearer = /^bearer\s+(\S+)$/i.exec(c);
  if (bearer) return `Bearer ${bearer[1] ?? ''}`;
  if (c.startsWith('lin_oauth_')) return `Bearer ${c}`;
  return c;
}

export interface GraphqlError {
  message?: string;
  extensions?: { code?: string; type?: string; userPresentableMessage?: string };
}

interface GraphqlBody {
  data?: unknown;
  errors?: GraphqlError[];
}

function numberHeader(h: Headers, name: string): number | null {
  const raw = h.get(name);
  if (raw === null || raw.trim() === '') return null;
  const n = Number(raw);
  return Number.isFinite(n) ? n : null;
}

/** One budget's figures from a response's headers. */
interface BudgetFigures {
  remaining: number | null;
  limit: number | null;
  resetMs: number | null;
}

function figures(h: Headers, kind: 'requests' | 'complexity'): BudgetFigures {
  return {
    remaining: numberHeader(h, `x-ratelimit-${kind}-remaining`),
    limit: numberHeader(h, `x-ratelimit-${kind}-limit`),
    resetMs: numberHeader(h, `x-ratelimit-${kind}-reset`),
  };
}

function errorIs(e: GraphqlError, code: string, type: string): boolean {
  return e.extensions?.code === code || e.extensions?.type?.toLowerCase() === type;
}

/** The rate limit a response signals, if any: 429 or a RATELIMITED error (see the module comment). */
export function linearLimitSignal(status: number, headers: Headers, errors: readonly GraphqlError[], now: Date) {
  const limited = status === 429 || errors.some((e) => errorIs(e, 'RATELIMITED', 'ratelimited'));
  if (!limited) return null;
  const req = figures(headers, 'requests');
  const cx = figures(headers, 'complexity');
  const cost = numberHeader(headers, 'x-complexity') ?? 0;
  const spent = [req, cx].filter((f) => {
    const need = f === cx ? Math.max(1, cost) : 1;
    return f.remaining !== null && f.remaining < need && f.resetMs !== null;
  });
  const candidates = (spent.length > 0 ? spent : [req, cx]).map((f) => f.resetMs).filter((r) => r !== null);
  const lifts = candidates.length > 0 ? Math.max(...candidates) : now.getTime() + LIMIT_FALLBACK_MS;
  const signal: LimitSignal = { kind: 'primary', liftsAt: new Date(Math.max(lifts, now.getTime())) };
  return signal;
}

/** A budget's observation from a response (null when its headers are absent and it was no limit). */
export function linearObservation(
  headers: Headers,
  kind: 'requests' | 'complexity',
  now: Date,
  limitedUntil: Date | null,
): BudgetObservation | null {
  const f = figures(headers, kind);
  if (f.remaining === null && limitedUntil === null) return null;
  const resetAt = f.resetMs === null ? null : new Date(f.resetMs);
  return { remaining: f.remaining, limit: f.limit, resetAt, limitedUntil, observedAt: now };
}

/** A failure worth retrying in place (5xx, network). */
class TransientFailure extends Error {}

export function createLinearClient(o: LinearClientOptions): LinearClient {
  const fetchFn = o.fetch ?? globalThis.fetch;
  const auth = authorizationHeader(o.credential);
  return {
    query<T>(name: string, text: string, variables: Record<string, unknown>): Promise<T> {
      const subject: CallSubject = { integration: o.subject, what: `query ${name}` };
      const body = JSON.stringify({ query: text, variables, operationName: name });
      const once = () => callOnce<T>(o, fetchFn, auth, body, subject);
      return withRetries(
        once,
        (e) => e instanceof TransientFailure,
        (e) => failureError({ kind: 'transient' }, subject, o.clock.now(), (e as Error).cause),
        { ...o.retry, signal: o.signal },
      );
    },
  };
}

async function gate(budgets: LinearBudgets | null): Promise<void> {
  if (!budgets) return;
  await budgets.requests.gate();
  try {
    await budgets.complexity.gate();
  } catch (err) {
    budgets.requests.done();
    throw err;
  }
}

function done(budgets: LinearBudgets | null): void {
  budgets?.requests.done();
  budgets?.complexity.done();
}

async function callOnce<T>(
  o: LinearClientOptions,
  fetchFn: typeof fetch,
  auth: string,
  body: string,
  subject: CallSubject,
): Promise<T> {
  await gate(o.budgets);
  let res: Response;
  let text: string;
  try {
    res = await fetchFn(o.apiUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: auth },
      body,
      signal: o.signal,
    });
    text = await res.text();
  } catch (err) {
    if (o.signal.aborted) throw abortReason(o.signal);
    throw new TransientFailure(subject.what, { cause: err });
  } finally {
    done(o.budgets);
  }
  const parsed = parseBody(text);
  const errors = parsed?.errors ?? [];
  const now = o.clock.now();
  const limit = linearLimitSignal(res.status, res.headers, errors, now);
  await observe(o, res.headers, now, limit);
  if (!limit && res.ok && parsed && errors.length === 0 && parsed.data) return parsed.data as T;
  throw failure(o, subject, res.status, errors, limit, now);
}

async function observe(o: LinearClientOptions, h: Headers, now: Date, limit: LimitSignal | null): Promise<void> {
  if (!o.budgets) return;
  const req = linearObservation(h, 'requests', now, limit?.liftsAt ?? null);
  if (req) await o.budgets.requests.observe(req);
  const cx = linearObservation(h, 'complexity', now, null);
  if (cx) await o.budgets.complexity.observe(cx);
}

function parseBody(text: string): GraphqlBody | null {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' ? v : null;
  } catch {
    return null;
  }
}

/** The error a failed call ends with (TransientFailure: retried in place first). */
function failure(
  o: LinearClientOptions,
  subject: CallSubject,
  status: number,
  errors: readonly GraphqlError[],
  limit: LimitSignal | null,
  now: Date,
): Error {
  const cause = new Error(`HTTP ${status}: ${errors.map((e) => e.message ?? '?').join('; ')}`.slice(0, 500));
  if (limit) return failureError({ kind: 'rate_limit', limit }, subject, now, cause);
  if (errors.some((e) => e.extensions?.code === COMPLEXITY_ERROR_CODE)) {
    return new NonRetryableError(
      `${subject.integration}: ${subject.what} is too complex for Linear (a bug in the query)`,
      'provider_error',
      { cause },
    );
  }
  const auth = errors.some(
    (e) => errorIs(e, 'AUTHENTICATION_ERROR', 'authentication error') || errorIs(e, 'FORBIDDEN', 'forbidden'),
  );
  const c = classifyFailure({ status: auth ? 401 : status, limit: null });
  if (c.kind === 'transient') return new TransientFailure(subject.what, { cause });
  if (c.kind !== 'other') return failureError(c, subject, now, cause);
  o.logger.warn({ status, errors: errors.length }, 'linear_query_failed');
  const first = errors[0]?.message ?? `HTTP ${status}`;
  return new NonRetryableError(
    `${subject.integration}: ${subject.what} failed: ${first.slice(0, 200)}`,
    'provider_error',
    {
      cause,
    },
  );
}
