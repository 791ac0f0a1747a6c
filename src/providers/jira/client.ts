/**
 * The Jira Cloud REST client of one unit (plain `fetch`): every request gated by the credential's
 * shared budget, its rate-limit headers recorded, and every failure classified by the shared HTTP
 * layer (../http/errors.ts).
 *
 * Jira Cloud's rate-limit rules (developer.atlassian.com/cloud/jira/platform/rate-limiting): a 429
 * carries `Retry-After` (seconds) and/or `X-RateLimit-Reset` (ISO-8601, e.g. `2026-03-02T12:31Z`);
 * the limit lifts at the later of the two (60 s when neither is sent). A 403 with `Retry-After`, or
 * with `X-RateLimit-Reset` and no requests remaining, is a limit too; any other 403, and every 401,
 * is `auth`. Responses may carry `X-RateLimit-Limit`,
 * `X-RateLimit-Remaining` and `X-RateLimit-Reset`, which feed the shared budget. 5xx and network
 * failures are retried in place, then end as `provider_error`. Errors name the integration and the
 * request (method and path), never the credential.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import { NonRetryableError } from '../../errors.js';
import type { BudgetObservation } from '../../store/rateBudgets.js';
import type { RateBudget } from '../kit/budget.js';
import { classifyFailure, failureError, type CallSubject, type LimitSignal } from '../kit/errors.js';
import { withRetries, type RetryOptions } from '../kit/retry.js';
import { abortReason } from '../kit/sleep.js';

/** A limit response without a lift time lasts at least this long. */
export const LIMIT_FALLBACK_MS = 60_000;

export interface JiraClientOptions {
  siteUrl: string;
  /** The Authorization header value (config.ts `authorizationFor`); sent and never shown. */
  authorization: string;
  /** Named in every error, e.g. `jira integration "acme"`. */
  subject: string;
  clock: Clock;
  signal: AbortSignal;
  logger: Logger;
  budget: RateBudget | null;
  retry?: RetryOptions;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

export type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

export interface JiraClient {
  get<T>(path: string, query?: Query): Promise<T>;
  post<T>(path: string, body: unknown): Promise<T>;
}

function numberHeader(h: Headers, name: string): number | null {
  const raw = h.get(name);
  if (raw === null || raw.trim() === '') return null;
  const n = Number(raw);
  return Number.isFinite(n) ? n : null;
}

function timeHeader(h: Headers, name: string): Date | null {
  const raw = h.get(name);
  const ms = raw === null ? Number.NaN : Date.parse(raw.trim());
  return Number.isFinite(ms) ? new Date(ms) : null;
}

/** The rate limit a failed Jira response signals, if any (see the module comment). */
export function jiraLimitSignal(status: number, headers: Headers, now: Date): LimitSignal | null {
  if (status !== 429 && status !== 403) return null;
  const retryAfter = numberHeader(headers, 'retry-after');
  const reset = timeHeader(headers, 'x-ratelimit-reset');
  // Some ordinary answers carry X-RateLimit-Reset too: on a 403 it signals a limit only with nothing left.
  const remaining = numberHeader(headers, 'x-ratelimit-remaining');
  const spent = reset !== null && (remaining === null || remaining <= 0);
  if (status === 403 && retryAfter === null && !spent) return null;
  const t = now.getTime();
  const after = retryAfter === null ? null : t + Math.max(0, retryAfter) * 1000;
  const lifts = after === null && reset === null ? t + LIMIT_FALLBACK_MS : Math.max(after ?? 0, reset?.getTime() ?? 0);
  return { kind: 'primary', liftsAt: new Date(lifts) };
}

/** The budget figures a response's headers give (null when it carries none and no limit). */
export function jiraObservation(headers: Headers, now: Date, limitedUntil: Date | null): BudgetObservation | null {
  const remaining = numberHeader(headers, 'x-ratelimit-remaining');
  if (remaining === null && limitedUntil === null) return null;
  return {
    remaining,
    limit: numberHeader(headers, 'x-ratelimit-limit'),
    resetAt: timeHeader(headers, 'x-ratelimit-reset'),
    limitedUntil,
    observedAt: now,
  };
}

/** A failure worth retrying in place (5xx, network). */
class TransientFailure extends Error {}

/** The JSON request's URL: `path` under the site, with `query` (arrays repeat the key). */
export function urlOf(siteUrl: string, path: string, query: Query = {}): string {
  const url = new URL(path, `${siteUrl}/`);
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(one));
  }
  return url.toString();
}

export function createJiraClient(o: JiraClientOptions): JiraClient {
  const call = <T>(method: string, path: string, query: Query | undefined, body: unknown): Promise<T> => {
    const subject: CallSubject = { integration: o.subject, what: `${method} ${path}` };
    const url = urlOf(o.siteUrl, path, query);
    return withRetries(
      () => once<T>(o, subject, method, url, body),
      (e) => e instanceof TransientFailure,
      (e) => failureError({ kind: 'transient' }, subject, o.clock.now(), (e as Error).cause),
      { ...o.retry, signal: o.signal },
    );
  };
  return {
    get: (path, query) => call('GET', path, query, undefined),
    post: (path, body) => call('POST', path, undefined, body),
  };
}

async function once<T>(o: JiraClientOptions, subject: CallSubject, method: string, url: string, body: unknown) {
  await o.budget?.gate();
  let res: Response;
  try {
    res = await (o.fetch ?? globalThis.fetch)(url, {
      method,
      headers: {
        authorization: o.authorization,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: o.signal,
    });
  } catch (err) {
    o.budget?.done();
    if (o.signal.aborted) throw abortReason(o.signal);
    throw new TransientFailure(subject.what, { cause: err });
  }
  o.budget?.done();
  const text = await readText(o, res, subject);
  if (res.ok) {
    const seen = jiraObservation(res.headers, o.clock.now(), null);
    if (seen) await o.budget?.observe(seen);
    return parseJson<T>(text, subject);
  }
  throw await failed(o, res, text, subject);
}

async function readText(o: JiraClientOptions, res: Response, subject: CallSubject): Promise<string> {
  try {
    return await res.text();
  } catch (err) {
    if (o.signal.aborted) throw abortReason(o.signal);
    throw new TransientFailure(subject.what, { cause: err });
  }
}

function parseJson<T>(text: string, subject: CallSubject): T {
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new NonRetryableError(`${subject.integration}: ${subject.what}: the answer is not JSON`, 'provider_error', {
      cause,
    });
  }
}

/** Jira's error answer (`{errorMessages, errors}`), kept as a cause: its first messages. */
export class JiraHttpError extends Error {
  constructor(
    readonly status: number,
    readonly messages: string[],
  ) {
    super(`HTTP ${status}${messages.length ? `: ${messages.join('; ').slice(0, 300)}` : ''}`);
  }
}

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

/** What a failed response ends with: a classified error (a 5xx as a transient failure, retried). */
async function failed(o: JiraClientOptions, res: Response, text: string, subject: CallSubject): Promise<Error> {
  const now = o.clock.now();
  const limit = jiraLimitSignal(res.status, res.headers, now);
  const seen = jiraObservation(res.headers, now, limit?.liftsAt ?? null);
  if (seen) await o.budget?.observe(seen);
  const cause = new JiraHttpError(res.status, jiraMessages(text));
  const c = classifyFailure({ status: res.status, limit });
  if (c.kind === 'transient') return new TransientFailure(subject.what, { cause });
  if (c.kind === 'other') {
    const msg = `${subject.integration}: ${subject.what}: Jira refused the request (${cause.message})`;
    return new NonRetryableError(msg, 'provider_error', { cause });
  }
  return failureError(c, subject, now, cause);
}
