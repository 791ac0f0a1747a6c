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
 * Linear's limits, its leaky buckets (requests, complexity, an endpoint's) and their headers: ./limits.ts.
 * An answer with `errors` beside `data` is partial (a field that failed answers null, its error's
 * `path` naming it): never a value — it is retried in place like a 5xx, then ends the call as a
 * `provider_error`, so a partial page is never written as if it were whole.
 * A query-complexity error (`extensions.code` `QUERY_TOO_COMPLEX`) means our query asks too much:
 * non-retryable, naming the query. 401, 403 or an `AUTHENTICATION_ERROR` / `FORBIDDEN` error is
 * `auth`; 5xx and network failures are retried in place, then `provider_error`.
 */
import type { Logger } from 'pino';
import type { RateBudget } from '../kit/budget.js';
import {
  bodyText,
  createCaller,
  sendFetch,
  type Answer,
  type Caller,
  type ClientOptions,
  type Verdict,
} from '../kit/call.js';
import { providerError, type CallSubject, type ProviderAnswerError } from '../kit/errors.js';
import { credentialForms } from '../kit/redact.js';
import {
  endpointName,
  EndpointSlot,
  errorIs,
  linearLimitSignal,
  linearObservation,
  type GraphqlError,
} from './limits.js';

export { LIMIT_FALLBACK_MS, linearLimitSignal, linearObservation, type GraphqlError } from './limits.js';

/** The HTTP status a partial answer is judged by: transient, like a bad gateway. */
const PARTIAL_STATUS = 502;

/** The `extensions.code` of a query whose complexity exceeds Linear's per-query maximum. */
export const COMPLEXITY_ERROR_CODE = 'QUERY_TOO_COMPLEX';

/** The credential's budgets: requests, query complexity points and (by name) an endpoint's requests. */
export interface LinearBudgets {
  requests: RateBudget;
  complexity: RateBudget;
  /** The shared budget of the endpoint an answer names (`X-RateLimit-Endpoint-Name`). */
  endpoint?: (name: string) => RateBudget;
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

interface GraphqlBody {
  data?: unknown;
  errors?: GraphqlError[];
}

/**
 * A client whose every query is gated, recorded, classified and (when transient) retried. Each query
 * name has its own caller: the endpoint bucket an answer names gates that query's later calls.
 */
export function createLinearClient(o: LinearClientOptions): LinearClient {
  const auth = authorizationHeader(o.credential);
  const secrets = [...(o.secrets ?? []), ...credentialForms(o.credential), ...credentialForms(auth)];
  const callers = new Map<string, Caller<Response, unknown>>();
  const callerOf = (name: string) => {
    let call = callers.get(name);
    if (!call) {
      call = linearCaller(o, secrets);
      callers.set(name, call);
    }
    return call;
  };
  return {
    query<T>(name: string, text: string, variables: Record<string, unknown>): Promise<T> {
      const send = sendFetch(o.apiUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: auth },
        body: JSON.stringify({ query: text, variables, operationName: name }),
      });
      return callerOf(name)(`query ${name}`, send) as Promise<T>;
    },
  };
}

/** One query's caller: gated by the requests, complexity and (once named) endpoint budgets. */
function linearCaller(o: LinearClientOptions, secrets: readonly string[]): Caller<Response, unknown> {
  const b = o.budgets;
  const slot = b?.endpoint ? new EndpointSlot(b.endpoint) : null;
  return createCaller<Response, unknown>(
    { ...o, secrets },
    b ? [b.requests, b.complexity, ...(slot ? [slot] : [])] : [],
    {
      judge: (answer, now) => judgeLinear(o.logger, answer, now),
      observations: (headers, now, limit) => {
        slot?.learn(endpointName(headers));
        const endpoint = linearObservation(headers, 'endpoint', now, null);
        return [
          linearObservation(headers, 'requests', now, limit?.liftsAt ?? null),
          linearObservation(headers, 'complexity', now, null),
          ...(slot ? [endpoint && { ...endpoint, limitedUntil: endpointLimited(endpoint, limit) }] : []),
        ];
      },
    },
    o.apiUrl,
  );
}

/** An endpoint bucket shown spent by a limit answer is limited until the limit lifts. */
function endpointLimited(e: { remaining: number | null }, limit: { liftsAt: Date } | null): Date | null {
  return limit && e.remaining !== null && e.remaining < 1 ? limit.liftsAt : null;
}

/** Where an error points (`issues.nodes.3.assignee`): names of our own query's fields and indexes. */
function pathOf(e: GraphqlError | undefined): string | null {
  const path = e?.path;
  if (!Array.isArray(path)) return null;
  return path.map((p) => (typeof p === 'number' || /^\w{1,60}$/.test(String(p)) ? String(p) : '?')).join('.');
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
  if (!limit && parsed?.data && errors.length > 0) {
    // Partial data: some field failed and answers null. Retried in place; never written as whole.
    logger.warn({ errors: errors.length, path: pathOf(first) }, 'linear_partial_answer');
    return { ok: false, status: PARTIAL_STATUS, limit: null, code, says: `partial answer: ${words.says}` };
  }
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
