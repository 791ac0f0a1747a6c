/**
 * The GitHub REST client of one unit: Octokit (`@octokit/core` with pagination and throttling) whose
 * every request runs through the kit's call loop (../kit/call.ts), gated by the credential's shared
 * budget; what is GitHub's own is here: how an answer signals a limit, its budget headers, its body.
 *
 * GitHub's rate-limit rules: a 403 or 429 with `x-ratelimit-remaining: 0` is the primary limit,
 * lifting at `x-ratelimit-reset` (epoch seconds); a `retry-after` header, or a 403 whose message
 * says "secondary rate limit", is a secondary limit (no `retry-after`: wait at least 60 s).
 * The throttling plugin's limit callbacks return false, so it never waits or retries by itself.
 */
import { Octokit } from '@octokit/core';
import { paginateRest } from '@octokit/plugin-paginate-rest';
import { throttling } from '@octokit/plugin-throttling';
import type { BudgetObservation } from '../../store/rateBudgets.js';
import type { RateBudget } from '../kit/budget.js';
import { createCaller, type Answer, type ClientOptions, type Verdict } from '../kit/call.js';
import { providerError, refusedWith401, type LimitSignal } from '../kit/errors.js';
import { headerOf, numberHeader, type HeaderSource } from '../kit/headers.js';
import { credentialForms, errorSummary } from '../kit/redact.js';
import type { InstallationTokens } from './appAuth.js';

export const GithubOctokit = Octokit.plugin(paginateRest, throttling);
export type GithubOctokit = InstanceType<typeof GithubOctokit>;

/** A secondary limit without `retry-after` lasts at least this long. */
export const SECONDARY_FALLBACK_MS = 60_000;

/**
 * How requests are signed: a token (personal, fine-grained, or an App's JWT: the Authorization
 * header and nowhere else), or an App installation's tokens (appAuth.ts), current at each request
 * and renewed once when an answer refuses one with 401.
 */
export type GithubClientAuth = { token: string } | { installation: InstallationTokens };

export interface GithubClientOptions extends ClientOptions {
  baseUrl: string;
  auth: GithubClientAuth;
  /** Requests of one key share the throttling plugin's concurrency (10 in flight): the credential's id. */
  throttleKey: string;
  budget: RateBudget | null;
}

/** The rate limit a failed GitHub response signals, if any (see the module comment). */
export function githubLimitSignal(
  status: number,
  headers: HeaderSource | undefined,
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
  headers: HeaderSource | undefined,
  now: Date,
  limitedUntil: Date | null,
): BudgetObservation | null {
  const resource = headerOf(headers, 'x-ratelimit-resource');
  const core = resource === undefined || resource === 'core';
  const remaining = core ? numberHeader(headers, 'x-ratelimit-remaining') : null;
  const limit = core ? numberHeader(headers, 'x-ratelimit-limit') : null;
  const reset = core ? numberHeader(headers, 'x-ratelimit-reset') : null;
  if (remaining === null && limitedUntil === null) return null;
  return { remaining, limit, resetAt: reset === null ? null : new Date(reset * 1000), limitedUntil, observedAt: now };
}

/**
 * A success answer's body, as text the call loop read from the stream Octokit hands back unread:
 * JSON (GitHub's every REST answer) through the runtime's own `JSON.parse`, anything else as text.
 * Octokit's own parser (json-with-bigint) keeps integers beyond 2^53 exact but, on runtimes without
 * JSON.parse source access (Node 20), rewrites the text and revives every value, which cost most of a
 * page's CPU; GitHub's ids and counts are well inside 2^53.
 */
function parsedBody(headers: HeaderSource, body: unknown): unknown {
  if (typeof body !== 'string' || body === '') return body; // 204/205 (""), or already read
  if (!/^application\/(?:[\w.+-]*\+)?json\b/i.test(headerOf(headers, 'content-type') ?? '')) return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body; // as Octokit does with a body that is not the JSON it claims to be
  }
}

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
  response?: { url?: string; headers?: HeaderSource; data?: unknown };
}

/** An Octokit response. */
type GithubResponse = Awaited<ReturnType<GithubOctokit['request']>>;

/** What Octokit came back with: its response, or the HTTP error it threw for a failed answer. */
type Reply = { response: GithubResponse } | { error: Error & HttpErrorLike };

/** The answer to one request sent through Octokit; an HTTP error carrying a response is one too. */
async function answerOf(send: () => GithubResponse | Promise<GithubResponse>): Promise<Answer<Reply>> {
  try {
    const response = await send();
    return { status: response.status, headers: response.headers, body: response.data, raw: { response } };
  } catch (err) {
    const e = err as Error & HttpErrorLike;
    if (typeof e.status !== 'number' || !e.response) throw err; // no answer
    return { status: e.status, headers: e.response.headers ?? {}, body: e.response.data, raw: { error: e } };
  }
}

/**
 * A response with its body parsed, or a failure: GitHub's words (`message`, each error's `message`,
 * the first error's `code`; a body that is no JSON as text) for the call loop to redact and bound.
 * Octokit's own error (its message is GitHub's) stays here.
 */
function judgeGithub(a: Answer<Reply>, now: Date): Verdict<GithubResponse> {
  if ('response' in a.raw) return { ok: true, value: { ...a.raw.response, data: parsedBody(a.headers, a.body) } };
  if (a.status === 304) return { ok: true, value: notModified(a.raw.error, a.headers) };
  const limit = githubLimitSignal(a.status, a.headers, a.raw.error.message ?? '', now);
  return {
    ok: false,
    status: a.status,
    limit,
    ...githubWords(a.body),
    refused: (s, answer) => providerError(s, `: GitHub refused the request (${answer.message})`, answer),
  };
}

/**
 * A 304 Not Modified (the answer to a conditional request whose `If-None-Match` still matches:
 * conditional.ts), which Octokit throws as an error: a success without a body. It is free (GitHub
 * does not count it against the primary limit) and its rate-limit headers report the budget as it
 * stands, unspent by it: they are observed like any answer's (the shared budget keeps the lower of
 * two remaining counts of one window, so a 304 can never raise what another answer lowered).
 */
function notModified(e: HttpErrorLike, headers: HeaderSource): GithubResponse {
  return { url: e.response?.url ?? '', status: 304, headers, data: null } as unknown as GithubResponse;
}

/** What a GitHub error body says (`{message, errors: [{code, message}]}`, or text), and its first error's code. */
function githubWords(body: unknown): { code: string | null; says: string } {
  if (typeof body === 'string') return { code: null, says: body };
  if (body === null || typeof body !== 'object') return { code: null, says: '' };
  const b = body as { message?: unknown; errors?: unknown };
  const errors: unknown[] = Array.isArray(b.errors) ? b.errors : [];
  const first = errors[0] as { code?: unknown } | undefined;
  const words = [b.message, ...errors.map((e) => (typeof e === 'string' ? e : (e as { message?: unknown })?.message))];
  return {
    code: typeof first?.code === 'string' ? first.code : null,
    says: words.filter((w): w is string => typeof w === 'string' && w !== '').join('; '),
  };
}

/** A client whose every request is gated, recorded, classified and (when transient) retried. */
export function createGithubClient(o: GithubClientOptions): GithubOctokit {
  const secrets = [...(o.secrets ?? []), ...('token' in o.auth ? credentialForms(o.auth.token) : [])];
  // Octokit's warnings may quote an answer's headers (a deprecation's `sunset` and `link`): redacted,
  // and into the unit's logger, never the console (where `request.log` would otherwise write them).
  const said = (msg: string) => errorSummary(msg, secrets, 1000);
  const log = {
    debug: () => {},
    info: () => {},
    warn: (msg: string) => o.logger.warn({ source: 'octokit' }, said(msg)),
    error: (msg: string) => o.logger.error({ source: 'octokit' }, said(msg)),
  };
  const octokit = new GithubOctokit({
    ...('token' in o.auth ? { auth: o.auth.token } : {}),
    baseUrl: o.baseUrl.replace(/\/+$/, ''),
    // Success bodies come back unread and are parsed by `parsedBody` (see there).
    // The fetch is the call loop's, per request (see the hook below).
    request: { parseSuccessResponseBody: false, log },
    log,
    throttle: { id: o.throttleKey, onRateLimit: () => false, onSecondaryRateLimit: () => false },
  });
  // Every request (a `next` link too) and every redirect stays on the origin of `baseUrl`.
  const call = createCaller<Reply, GithubResponse>(
    { ...o, secrets },
    o.budget ? [o.budget] : [],
    {
      judge: judgeGithub,
      observations: (headers, now, limit) => [githubObservation(headers, now, limit?.liftsAt ?? null)],
    },
    o.baseUrl,
  );
  const installation = 'installation' in o.auth ? o.auth.installation : null;
  octokit.hook.wrap('request', (request, options) => {
    // What the call was, for messages: worked out only when one is needed.
    const what = () => `${String(options.method)} ${pathOf(octokit.request.endpoint.parse(options).url)}`;
    const send = () =>
      call(what, (signal, fetch) => {
        // The hooks inside this one (throttling, auth) read the options Octokit made, not those passed
        // on: the unit's signal and the loop's fetch (kept on the origin) go into them.
        options.request = { ...options.request, signal, fetch };
        return answerOf(() => request(options));
      });
    return installation ? signedSend(installation, options.headers, send) : send();
  });
  return octokit;
}

/**
 * Sends with the installation's current token; when the answer refuses it with 401, once more with
 * a new one (a second 401 is the unit's `auth` failure).
 */
async function signedSend<T>(
  installation: InstallationTokens,
  headers: Record<string, string | number | undefined>,
  send: () => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const token = await installation.current();
    headers.authorization = `Bearer ${token}`;
    try {
      return await send();
    } catch (err) {
      if (attempt > 1 || !refusedWith401(err)) throw err;
      installation.refused(token);
    }
  }
}
