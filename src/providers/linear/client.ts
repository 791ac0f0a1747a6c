/**
 * The Linear GraphQL client of one unit: a plain `fetch` POST of our own queries (queries.ts) through
 * the kit's call loop (../kit/call.ts), gated by the credential's two shared budgets; what is
 * Linear's own is here: the Authorization header, how an answer signals a limit, its budget headers
 * and its GraphQL errors.
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
import type { BudgetObservation } from '../../store/rateBudgets.js';
import type { RateBudget } from '../kit/budget.js';
import { bodyText, createCaller, sendFetch, type Answer, type ClientOptions, type Verdict } from '../kit/call.js';
import { providerError, type CallSubject, type LimitSignal, type ProviderAnswerError } from '../kit/errors.js';
import { numberHeader, type HeaderSource } from '../kit/headers.js';
import { credentialForms } from '../kit/redact.js';

/** A limit response without a usable reset header lasts at least this long. */
export const LIMIT_FALLBACK_MS = 60_000;

/** The `extensions.code` of a query whose complexity exceeds Linear's per-query maximum. */
export const COMPLEXITY_ERROR_CODE = 'QUERY_TOO_COMPLEX';

/** The credential's two budgets: requests and query complexity points. */
export interface LinearBudgets {
  requests: RateBudget;
  complexity: RateBudget;
}

export interface LinearClientOptions extends ClientOptions {
  apiUrl: string;
  /** The credential's secret; it goes into the Authorization header and nowhere else. */
  credential: string;
  budgets: LinearBudgets | null;
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

/** One budget's figures from a response's headers. */
interface BudgetFigures {
  remaining: number | null;
  limit: number | null;
  resetMs: number | null;
}

function figures(h: HeaderSource, kind: 'requests' | 'complexity'): BudgetFigures {
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
export function linearLimitSignal(status: number, headers: HeaderSource, errors: readonly GraphqlError[], now: Date) {
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
  headers: HeaderSource,
  kind: 'requests' | 'complexity',
  now: Date,
  limitedUntil: Date | null,
): BudgetObservation | null {
  const f = figures(headers, kind);
  if (f.remaining === null && limitedUntil === null) return null;
  const resetAt = f.resetMs === null ? null : new Date(f.resetMs);
  return { remaining: f.remaining, limit: f.limit, resetAt, limitedUntil, observedAt: now };
}

/** A client whose every query is gated, recorded, classified and (when transient) retried. */
export function createLinearClient(o: LinearClientOptions): LinearClient {
  const auth = authorizationHeader(o.credential);
  const secrets = [...(o.secrets ?? []), ...credentialForms(o.credential), ...credentialForms(auth)];
  const call = createCaller<Response, unknown>(
    { ...o, secrets },
    o.budgets ? [o.budgets.requests, o.budgets.complexity] : [],
    {
      judge: (answer, now) => judgeLinear(o.logger, answer, now),
      observations: (headers, now, limit) => [
        linearObservation(headers, 'requests', now, limit?.liftsAt ?? null),
        linearObservation(headers, 'complexity', now, null),
      ],
    },
    o.apiUrl,
  );
  return {
    query<T>(name: string, text: string, variables: Record<string, unknown>): Promise<T> {
      const send = sendFetch(o.apiUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: auth },
        body: JSON.stringify({ query: text, variables, operationName: name }),
      });
      return call(`query ${name}`, send) as Promise<T>;
    },
  };
}

function parseBody(text: string): GraphqlBody | null {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' ? v : null;
  } catch {
    return null;
  }
}

/** An answer's `data`, or its failure: a limit, a query too complex, auth, or Linear's first error. */
function judgeLinear(logger: Logger, a: Answer<Response>, now: Date): Verdict<unknown> {
  const parsed = parseBody(bodyText(a));
  const errors = parsed?.errors ?? [];
  const limit = linearLimitSignal(a.status, a.headers, errors, now);
  if (!limit && a.raw.ok && parsed && errors.length === 0 && parsed.data) return { ok: true, value: parsed.data };
  // Linear's words, for the call loop to redact and bound: the first error's message and code.
  const first = errors[0];
  const code = typeof first?.extensions?.code === 'string' ? first.extensions.code : null;
  const words = { code, says: typeof first?.message === 'string' ? first.message : '' };
  if (errors.some((e) => e.extensions?.code === COMPLEXITY_ERROR_CODE)) {
    // Classified as a plain refusal (400) unless a limit wins: our query asks too much.
    const refused = (s: CallSubject, answer: ProviderAnswerError) =>
      providerError(s, ' is too complex for Linear (a bug in the query)', answer);
    return { ok: false, status: 400, limit, ...words, code: COMPLEXITY_ERROR_CODE, refused };
  }
  const auth = errors.some(
    (e) => errorIs(e, 'AUTHENTICATION_ERROR', 'authentication error') || errorIs(e, 'FORBIDDEN', 'forbidden'),
  );
  const refused = (s: CallSubject, answer: ProviderAnswerError) => {
    logger.warn({ status: answer.status, code: answer.code, errors: errors.length }, 'linear_query_failed');
    const how = `HTTP ${answer.status}${answer.code ? `, ${answer.code}` : ''}`;
    return providerError(s, answer.summary ? ` failed: ${answer.summary} (${how})` : ` failed (${how})`, answer);
  };
  return { ok: false, status: auth ? 401 : a.status, limit, ...words, refused };
}
