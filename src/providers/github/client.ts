/**
 * The GitHub REST client of one unit: Octokit (`@octokit/core` with pagination and throttling),
 * every request gated by the credential's shared budget, its rate-limit headers recorded, and every
 * failure classified by the shared HTTP layer (../http/errors.ts).
 *
 * GitHub's rate-limit rules: a 403 or 429 with `x-ratelimit-remaining: 0` is the primary limit,
 * lifting at `x-ratelimit-reset` (epoch seconds); a `retry-after` header, or a 403 whose message
 * says "secondary rate limit", is a secondary limit (no `retry-after`: wait at least 60 s).
 * The throttling plugin's limit callbacks return false, so it never waits or retries by itself.
 */
import { Octokit } from '@octokit/core';
import { paginateRest } from '@octokit/plugin-paginate-rest';
import { throttling } from '@octokit/plugin-throttling';
import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import type { BudgetObservation } from '../../store/rateBudgets.js';
import type { RateBudget } from '../kit/budget.js';
import { classifyFailure, failureError, type LimitSignal } from '../kit/errors.js';
import { withRetries, type RetryOptions } from '../kit/retry.js';
import { abortReason } from '../kit/sleep.js';

export const GithubOctokit = Octokit.plugin(paginateRest, throttling);
export type GithubOctokit = InstanceType<typeof GithubOctokit>;

/** A secondary limit without `retry-after` lasts at least this long. */
export const SECONDARY_FALLBACK_MS = 60_000;

type Headers = Record<string, string | number | undefined>;

export interface GithubClientOptions {
  baseUrl: string;
  /** The credential's secret; it goes into the Authorization header and nowhere else. */
  token: string;
  /** Named in every error, e.g. `github integration "acme"`. */
  subject: string;
  /** Requests of one key share the throttling plugin's concurrency (10 in flight): the credential's id. */
  throttleKey: string;
  clock: Clock;
  signal: AbortSignal;
  logger: Logger;
  budget: RateBudget | null;
  retry?: RetryOptions;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

function header(h: Headers | undefined, name: string): string | undefined {
  const v = h?.[name];
  return v === undefined ? undefined : String(v);
}

function numberHeader(h: Headers | undefined, name: string): number | null {
  const raw = header(h, name);
  if (raw === undefined || raw.trim() === '') return null;
  const n = Number(raw);
  return Number.isFinite(n) ? n : null;
}

/** The rate limit a failed GitHub response signals, if any (see the module comment). */
export function githubLimitSignal(
  status: number,
  headers: Headers | undefined,
  message: string,
  now: Date,
): LimitSignal | null {
  if (status !== 403 && status !== 429) return null;
  const t = now.getTime();
  const retryAfter = numberHeader(headers, 'retry-after');
  if (numberHeader(headers, 'x-ratelimit-remaining') === 0) {
    const reset = numberHeader(headers, 'x-ratelimit-reset');
    const after = retryAfter !== null ? t + retryAfter * 1000 : 0;
    const lifts = reset !== null ? reset * 1000 : t + SECONDARY_FALLBACK_MS;
    return { kind: 'primary', liftsAt: new Date(Math.max(lifts, after)) };
  }
  if (retryAfter !== null) return { kind: 'secondary', liftsAt: new Date(t + Math.max(0, retryAfter) * 1000) };
  if (/secondary rate limit/i.test(message) || status === 429) {
    return { kind: 'secondary', liftsAt: new Date(t + SECONDARY_FALLBACK_MS) };
  }
  return null;
}

/** The budget figures of a response's headers (null when it carries none and no limit). */
export function githubObservation(
  headers: Headers | undefined,
  now: Date,
  limitedUntil: Date | null,
): BudgetObservation | null {
  const resource = header(headers, 'x-ratelimit-resource');
  const core = resource === undefined || resource === 'core';
  const remaining = core ? numberHeader(headers, 'x-ratelimit-remaining') : null;
  const limit = core ? numberHeader(headers, 'x-ratelimit-limit') : null;
  const reset = core ? numberHeader(headers, 'x-ratelimit-reset') : null;
  if (remaining === null && limitedUntil === null) return null;
  return { remaining, limit, resetAt: reset === null ? null : new Date(reset * 1000), limitedUntil, observedAt: now };
}

/**
 * A success response's body, read from the stream Octokit hands back unread: JSON (GitHub's every
 * REST answer) through the runtime's own `JSON.parse`, anything else as text. Octokit's own parser
 * (json-with-bigint) keeps integers beyond 2^53 exact but, on runtimes without JSON.parse source
 * access (Node 20), rewrites the text and revives every value, which cost most of a page's CPU;
 * GitHub's ids and counts are well inside 2^53.
 */
async function readBody(headers: Headers, body: unknown): Promise<unknown> {
  if (!isStream(body)) return body; // 204/205 (""), or already read
  const text = await new Response(body).text();
  if (!/^application\/(?:[\w.+-]*\+)?json\b/i.test(header(headers, 'content-type') ?? '')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text; // as Octokit does with a body that is not the JSON it claims to be
  }
}

function isStream(body: unknown): body is ReadableStream<Uint8Array> {
  return typeof body === 'object' && body !== null && typeof (body as ReadableStream).getReader === 'function';
}

/** A failure worth retrying in place (5xx, network). */
class TransientFailure extends Error {}

function pathOf(url: string): string {
  try {
    return new URL(url, 'http://github.invalid').pathname;
  } catch {
    return url;
  }
}

interface HttpErrorLike {
  status?: number;
  message?: string;
  response?: { headers?: Headers };
}

/** A client whose every request is gated, recorded, classified and (when transient) retried. */
export function createGithubClient(o: GithubClientOptions): GithubOctokit {
  const octokit = new GithubOctokit({
    auth: o.token,
    baseUrl: o.baseUrl.replace(/\/+$/, ''),
    // Success bodies come back unread and are parsed by `readBody` (see there).
    request: { signal: o.signal, parseSuccessResponseBody: false, ...(o.fetch ? { fetch: o.fetch } : {}) },
    log: {
      debug: () => {},
      info: () => {},
      warn: (msg: string) => o.logger.warn({ source: 'octokit' }, msg),
      error: (msg: string) => o.logger.error({ source: 'octokit' }, msg),
    },
    throttle: { id: o.throttleKey, onRateLimit: () => false, onSecondaryRateLimit: () => false },
  });
  octokit.hook.wrap('request', (request, options) => {
    // What the call was, for messages: worked out only when one is needed.
    const subject = () => ({
      integration: o.subject,
      what: `${String(options.method)} ${pathOf(octokit.request.endpoint.parse(options).url)}`,
    });
    const once = async () => {
      await o.budget?.gate();
      let answered = false;
      try {
        const res = await request(options);
        answered = true;
        o.budget?.done();
        res.data = await readBody(res.headers, res.data);
        const seen = githubObservation(res.headers, o.clock.now(), null);
        if (seen) await o.budget?.observe(seen);
        return res;
      } catch (err) {
        if (!answered) o.budget?.done();
        throw await classified(o, err, subject);
      }
    };
    return withRetries(
      once,
      (e) => e instanceof TransientFailure,
      (e) => failureError({ kind: 'transient' }, subject(), o.clock.now(), (e as Error).cause),
      { ...o.retry, signal: o.signal },
    );
  });
  return octokit;
}

/** What a failed request ends with: the abort, a classified error, or the original (e.g. a 409). */
async function classified(
  o: GithubClientOptions,
  err: unknown,
  subject: () => { integration: string; what: string },
): Promise<unknown> {
  if (o.signal.aborted) return abortReason(o.signal);
  const e = err as HttpErrorLike;
  const now = o.clock.now();
  const status = typeof e.status === 'number' && e.response ? e.status : null;
  const headers = e.response?.headers;
  const limit = status === null ? null : githubLimitSignal(status, headers, e.message ?? '', now);
  const seen = githubObservation(headers, now, limit?.liftsAt ?? null);
  if (seen) await o.budget?.observe(seen);
  const c = classifyFailure({ status, limit });
  if (c.kind === 'other') return err;
  if (c.kind === 'transient') return new TransientFailure(subject().what, { cause: err });
  return failureError(c, subject(), now, err);
}
