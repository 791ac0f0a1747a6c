/**
 * The Jira Cloud REST client of one unit (plain `fetch`): every request runs through the kit's call
 * loop (../kit/call.ts), gated by the credential's shared budget; what is Jira's own is here: URLs,
 * the Authorization header, how an answer signals a limit, its budget headers and its error body.
 *
 * Jira Cloud's rate-limit rules (developer.atlassian.com/cloud/jira/platform/rate-limiting): a 429
 * carries `Retry-After` (seconds) and/or `X-RateLimit-Reset` (ISO-8601, e.g. `2026-03-02T12:31Z`);
 * the limit lifts at the later of the two (60 s when neither is sent). A 403 with `Retry-After`, or
 * with `X-RateLimit-Reset` and no requests remaining, is a limit too; any other 403, and every 401,
 * is `auth`.
 *
 * The shared budget: success answers carry `X-RateLimit-Limit` / `X-RateLimit-Remaining` of the
 * endpoint's own per-second limit (350 for search, 400 for others, without `X-RateLimit-Reset`);
 * they say nothing of the credential's other endpoints nor of when they refill, and are not recorded.
 * What is recorded is the credential's quota from `Beta-RateLimit` / `Beta-RateLimit-Policy`
 * (./quota.ts: remaining, quota, reset) and every limit response's lift time. 5xx and network
 * failures are retried in place, then end as `provider_error`. Errors name the integration and the
 * request (method and path), never the credential.
 */
import type { BudgetObservation } from '../../store/rateBudgets.js';
import type { RateBudget } from '../kit/budget.js';
import { bodyText, createCaller, sendFetch, type Answer, type ClientOptions, type Verdict } from '../kit/call.js';
import {
  providerError,
  refusedWith401,
  type CallSubject,
  type LimitSignal,
  type ProviderAnswerError,
} from '../kit/errors.js';
import { numberHeader, timeHeader, type HeaderSource } from '../kit/headers.js';
import { authorizationForms } from '../kit/redact.js';
import type { OAuthSession } from './oauth.js';
import { jiraQuota } from './quota.js';

/** A limit response without a lift time lasts at least this long. */
export const LIMIT_FALLBACK_MS = 60_000;

export interface JiraClientOptions extends ClientOptions {
  siteUrl: string;
  /** The Authorization header value (config.ts `authorizationFor`); sent and never shown. */
  authorization: string;
  /** Signed in with OAuth 2.0 (oauth.ts): supersedes `siteUrl` and `authorization`. */
  oauth?: OAuthSession;
  budget: RateBudget | null;
}

export type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

export interface JiraClient {
  get<T>(path: string, query?: Query): Promise<T>;
  post<T>(path: string, body: unknown): Promise<T>;
}

/** The rate limit a failed Jira response signals, if any (see the module comment). */
export function jiraLimitSignal(status: number, headers: HeaderSource, now: Date): LimitSignal | null {
  if (status !== 429 && status !== 403) return null;
  const retryAfter = numberHeader(headers, 'retry-after');
  const reset = timeHeader(headers, 'x-ratelimit-reset');
  // Some ordinary answers carry X-RateLimit-Reset too: on a 403 it signals a limit only with nothing left.
  const remaining = numberHeader(headers, 'x-ratelimit-remaining');
  const spent = reset !== null && (remaining === null || remaining <= 0);
  // Data Center sends `retry-after: 0` on every answer while tokens are left (confluence.atlassian.com/
  // adminjiraserver/adjusting-your-code-for-rate-limiting-987143384.html): a 403 with it is no limit.
  if (status === 403 && (retryAfter === null || retryAfter <= 0) && !spent) return null;
  const t = now.getTime();
  const after = retryAfter === null ? null : t + Math.max(0, retryAfter) * 1000;
  const lifts = after === null && reset === null ? t + LIMIT_FALLBACK_MS : Math.max(after ?? 0, reset?.getTime() ?? 0);
  return { kind: 'primary', liftsAt: new Date(lifts) };
}

/**
 * The budget figures a response gives (null when it shows no quota and was no limit): the quota of
 * `Beta-RateLimit`, and the lift time of a limit response. An endpoint's `X-RateLimit-*` figures are
 * its own and are left out (see the module comment).
 */
export function jiraObservation(headers: HeaderSource, now: Date, limitedUntil: Date | null): BudgetObservation | null {
  const quota = jiraQuota(headers, now);
  if (quota === null && limitedUntil === null) return null;
  return {
    remaining: quota?.remaining ?? null,
    limit: quota?.limit ?? null,
    resetAt: quota?.resetAt ?? null,
    limitedUntil,
    observedAt: now,
  };
}

/**
 * The JSON request's URL: a site path (`/rest/…`) under the base, keeping the base's own path (a
 * Data Center context path, the API gateway's `/ex/jira/{cloudId}`), with `query` (arrays repeat the
 * key). Anything else (`//host/…`, a whole URL) resolves as a link would, so that a path escaping
 * the site leaves its origin and the call loop refuses it rather than sending it anywhere.
 */
export function urlOf(baseUrl: string, path: string, query: Query = {}): string {
  const base = baseUrl.replace(/\/+$/, '');
  const url = /^\/(?!\/)/.test(path) ? new URL(`${base}${path}`) : new URL(path, `${base}/`);
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(one));
  }
  return url.toString();
}

/**
 * A client whose every request is gated, recorded, classified and (when transient) retried. Signed in
 * with OAuth (`o.oauth`), each request goes under the session's API base with its current access
 * token, and once more with a new one when the answer refuses it with 401 (a second 401 is the
 * unit's `auth` failure); `o.secrets` is then the session's live redaction list, used as it is.
 */
export function createJiraClient(o: JiraClientOptions): JiraClient {
  // Redacted from every failure: the header's value, and `email:token`, the token and their encodings.
  const secrets = o.oauth ? (o.secrets ?? []) : [...(o.secrets ?? []), ...authorizationForms(o.authorization)];
  const call = createCaller<Response, unknown>(
    { ...o, secrets },
    o.budget ? [o.budget] : [],
    {
      judge: judgeJira,
      observations: (headers, now, limit) => [jiraObservation(headers, now, limit?.liftsAt ?? null)],
    },
    o.oauth?.home ?? o.siteUrl,
  );
  const send = (method: string, path: string, url: string, authorization: string, body: unknown) =>
    call(
      `${method} ${path}`,
      sendFetch(url, {
        method,
        headers: {
          authorization,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
  const request = async (method: string, path: string, query: Query | undefined, body: unknown) => {
    const session = o.oauth;
    if (!session) return send(method, path, urlOf(o.siteUrl, path, query), o.authorization, body);
    const url = urlOf(await session.apiBase(), path, query);
    const token = await session.current();
    try {
      return await send(method, path, url, `Bearer ${token}`, body);
    } catch (err) {
      if (!refusedWith401(err)) throw err;
      session.refused(token);
      return send(method, path, url, `Bearer ${await session.current()}`, body);
    }
  };
  return {
    get: <T>(path: string, query?: Query) => request('GET', path, query, undefined) as Promise<T>,
    post: <T>(path: string, body: unknown) => request('POST', path, undefined, body) as Promise<T>,
  };
}

/**
 * A 2xx answer's JSON; any other answer as Jira's error (see the module comment): its first messages
 * (or, when it has none, its text) for the call loop to redact and bound.
 */
export function judgeJira(a: Answer<Response>, now: Date): Verdict<unknown> {
  const text = bodyText(a);
  if (a.raw.ok) return parseJson(a.status, text);
  const messages = jiraMessages(text);
  return {
    ok: false,
    status: a.status,
    limit: jiraLimitSignal(a.status, a.headers, now),
    says: messages.length > 0 ? messages.join('; ') : text,
    refused: (s, answer) => providerError(s, `: Jira refused the request (${answer.message})`, answer),
  };
}

/**
 * A success answer's JSON; one that is not JSON is refused (a 2xx is classified as no other failure),
 * without the parser's error: it quotes the text.
 */
function parseJson(status: number, text: string): Verdict<unknown> {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    const refused = (s: CallSubject, shown: ProviderAnswerError) =>
      providerError(s, `: the answer is not JSON (${shown.message})`, shown);
    return { ok: false, status, limit: null, refused };
  }
}

/** Jira's error answer (`{errorMessages, errors, message}`): its first messages. */
function jiraMessages(text: string): string[] {
  try {
    const b = JSON.parse(text) as { errorMessages?: unknown; errors?: unknown; message?: unknown };
    const list = Array.isArray(b.errorMessages) ? b.errorMessages.filter((m) => typeof m === 'string') : [];
    if (b.errors && typeof b.errors === 'object') {
      for (const [k, v] of Object.entries(b.errors)) if (typeof v === 'string') list.push(`${k}: ${v}`);
    }
    if (typeof b.message === 'string') list.push(b.message);
    return list.slice(0, 3);
  } catch {
    return [];
  }
}
