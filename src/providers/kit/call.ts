/**
 * The one gated HTTP call loop every provider client runs its requests through. One attempt:
 *
 *   gate each budget, in order (a refusal releases the ones already passed)
 *   → send (the provider's request: plain fetch, Octokit, …) → release the budgets
 *   → read the body → the provider judges the answer (a value, or the facts of a failure)
 *   → each budget observes the figures the answer carries
 *   → the value, or the failure classified by errors.ts.
 *
 * Every request, and every redirect it meets, stays on the integration's origin (`home`: scheme, host,
 * port): the loop hands each sender a fetch that refuses any other URL before sending it, and follows
 * a redirect only on the origin; a refusal ends the call as a non-retryable `provider_error`. Under
 * it, the client's fetch (by default the outbound policy's, outbound.ts) refuses URLs and resolved
 * addresses the policy does not allow (also a `provider_error`) and times requests out (no answer).
 *
 * No answer (network), an unreadable body and a transient failure (5xx, a 429 without a limit
 * signal) are retried in place (retry.ts), then end as `provider_error`; an abort ends the call with
 * the signal's reason. Each provider keeps what is its own: how it sends (auth, URLs), how its answers
 * signal a rate limit and read when they fail (`judge`), and which budget figures they carry
 * (`observations`). Rules for every request (where it may go, how long it may take, how much it may
 * return, what its errors may show) belong here, around `send` and the body read.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import type { BudgetObservation } from '../../store/rateBudgets.js';
import type { RateBudget } from './budget.js';
import {
  answerError,
  classifyFailure,
  failureError,
  offOriginError,
  OffOriginError,
  type CallSubject,
  type LimitSignal,
  type ProviderAnswerError,
} from './errors.js';
import type { HeaderSource } from './headers.js';
import { ResponseBound } from './limits.js';
import { redactedBody, redactError } from './redact.js';
import { withRetries, type RetryOptions } from './retry.js';
import { abortReason } from './sleep.js';
import { outboundRefusalIn, outboundRefusedError, processOutboundPolicy } from './outbound.js';

/** What every provider client is made with, besides its endpoint, credential and budgets. */
export interface ClientOptions {
  /** Named in every error, e.g. `jira integration "acme"`; never a credential. */
  subject: string;
  clock: Clock;
  /** The unit's signal: aborting it ends the call in flight with its reason. */
  signal: AbortSignal;
  logger: Logger;
  retry?: RetryOptions;
  /**
   * Sends every request (outbound.ts: where it may go, its timeouts; the loop keeps it on the origin).
   * @default the fetch of the process environment's outbound policy (`processOutboundPolicy`)
   */
  fetch?: typeof fetch;
  /**
   * Every form of the integration's credential the client knows (redact.ts `credentialForms`):
   * redacted from whatever a failed answer shows. Token-shaped strings are redacted without it too.
   */
  secrets?: readonly string[];
  /** Bytes one answer's body may have (limits.ts). @default DEFAULT_PROVIDER_LIMITS.maxResponseBytes */
  maxResponseBytes?: number;
}

/** What the loop needs of a budget (budget.ts `RateBudget`): gate a call, release it, observe figures. */
export type CallBudget = Pick<RateBudget, 'gate' | 'done' | 'observe'>;

/** What one request came back with. */
export interface Answer<R> {
  status: number;
  headers: HeaderSource;
  /** A stream, read as text by the loop (null: empty), or what the sender has already read. */
  body: unknown;
  /** The sender's own reply (or HTTP error), for the provider's judgement. */
  raw: R;
}

/**
 * Sends one request, once, with `signal` and the loop's `fetch` (the only way a request may go out:
 * it stays on the integration's origin); resolves with its answer, or throws when none came.
 */
export type Send<R> = (signal: AbortSignal, fetch: typeof globalThis.fetch) => Promise<Answer<R>>;

/** Why an answer failed, as its provider reads it. */
export interface Failure {
  ok: false;
  /** The status the failure is classified by (a provider may read an error body as a 401). */
  status: number;
  /** The rate limit the answer signals; it wins over the status. */
  limit: LimitSignal | null;
  /** The provider's error code, when its answer has one (e.g. GitHub's `errors[0].code`). */
  code?: string | null;
  /**
   * What the answer says went wrong, in the provider's words (its message, or its body's text).
   * Never shown as it is: the error the call ends with is caused by a `ProviderAnswerError` holding
   * the status, the code and a redacted, bounded summary of this (errors.ts `answerError`).
   */
  says?: string;
  /**
   * What a failure that is no limit, auth, not-found or transient one ends with, caused by `answer`
   * (the only words of the answer it may show). @default failureError
   */
  refused?: (subject: CallSubject, answer: ProviderAnswerError) => Error;
}

/** What an answer means: the call's value, or a failure. */
export type Verdict<T> = { ok: true; value: T } | Failure;

/** How one provider's answers read: all the loop leaves to the provider. */
export interface AnswerRules<R, T> {
  /** Judges an answer whose body has been read. */
  judge(answer: Answer<R>, now: Date): Verdict<T>;
  /** The figures an answer gives each budget, in the order the budgets are gated (null: none). */
  observations(headers: HeaderSource, now: Date, limit: LimitSignal | null): readonly (BudgetObservation | null)[];
}

/** Runs one request through the loop; `what` names it in errors (e.g. `GET /rest/api/3/myself`). */
export type Caller<R, T> = (what: string | (() => string), send: Send<R>) => Promise<T>;

/** A failure worth retrying in place (no answer, an unreadable body, a 5xx). */
class TransientFailure extends Error {}

/**
 * A caller for one client: every request gated by `budgets`, judged by `rules`, retried when transient,
 * and sent only to the origin of `home`, the integration's base URL (without one, nowhere).
 */
export function createCaller<R, T>(
  client: ClientOptions,
  budgets: readonly CallBudget[],
  rules: AnswerRules<R, T>,
  home?: string,
): Caller<R, T> {
  const send = client.fetch ?? processOutboundPolicy().fetch;
  const fetchHome = homeFetch(home === undefined ? null : originOf(home), send);
  const loop: Loop<R, T> = { client, budgets, rules, fetch: fetchHome };
  return (what, send) => {
    const subject = (): CallSubject => ({
      integration: client.subject,
      what: typeof what === 'string' ? what : what(),
    });
    return withRetries(
      () => attempt(loop, subject, send),
      (e) => e instanceof TransientFailure,
      (e) =>
        redactError(
          failureError({ kind: 'transient' }, subject(), client.clock.now(), (e as Error).cause),
          client.secrets ?? [],
        ),
      { ...client.retry, signal: client.signal },
    );
  };
}

interface Loop<R, T> {
  client: ClientOptions;
  budgets: readonly CallBudget[];
  rules: AnswerRules<R, T>;
  fetch: typeof globalThis.fetch;
}

async function attempt<R, T>(loop: Loop<R, T>, subject: () => CallSubject, send: Send<R>): Promise<T> {
  const { client, budgets, rules } = loop;
  await gateAll(budgets);
  let answer: Answer<R>;
  let verdict: Verdict<T>;
  let now: Date;
  try {
    answer = await receive(loop, subject, send);
    now = client.clock.now();
    verdict = rules.judge(answer, now);
    // An answer refusing the credential says nothing of its budget (GitHub's carries the figures of
    // an unauthenticated caller: 60 an hour, counted per address).
    if (answer.status !== 401) await observeAll(loop, answer.headers, now, verdict.ok ? null : verdict.limit);
  } finally {
    // In flight until its figures are taken: ended sooner, it would let a call through on older ones.
    for (const b of budgets) b.done();
  }
  if (verdict.ok) return verdict.value;
  logRefusedBody(client, answer);
  throw failed(client, answer.status, verdict, subject, now);
}

/** Sends one request and reads its answer's body, within the response bound. */
async function receive<R, T>(loop: Loop<R, T>, subject: () => CallSubject, send: Send<R>): Promise<Answer<R>> {
  const { client } = loop;
  const bound = new ResponseBound(client.maxResponseBytes);
  let answer: Answer<R>;
  try {
    answer = await send(client.signal, bound.around(loop.fetch));
  } catch (err) {
    bound.check(subject);
    const off = offOriginIn(err);
    if (off) throw offOriginError(client.subject, off);
    const refused = outboundRefusalIn(err);
    if (refused) throw outboundRefusedError(client.subject, refused);
    throw unanswered(client.signal, err);
  }
  try {
    answer = { ...answer, body: await readBody(answer.body) };
  } catch (err) {
    bound.check(subject);
    throw unanswered(client.signal, err);
  }
  bound.check(subject); // a body the sender read itself (and whose failure it kept to itself)
  return answer;
}

/** Gates every budget in order; when one refuses, the ones already passed are released. */
async function gateAll(budgets: readonly CallBudget[]): Promise<void> {
  for (const [i, budget] of budgets.entries()) {
    try {
      await budget.gate();
    } catch (err) {
      for (const passed of budgets.slice(0, i)) passed.done();
      throw err;
    }
  }
}

async function observeAll<R, T>(loop: Loop<R, T>, headers: HeaderSource, now: Date, limit: LimitSignal | null) {
  if (loop.budgets.length === 0) return;
  const seen = loop.rules.observations(headers, now, limit);
  for (const [i, budget] of loop.budgets.entries()) {
    const figures = seen[i];
    if (figures) await budget.observe(figures);
  }
}

/** A request that got no (readable) answer: the abort that caused it, or a transient failure. */
function unanswered(signal: AbortSignal, err: unknown): Error {
  if (signal.aborted) return abortReason(signal);
  return new TransientFailure('no answer', { cause: err });
}

/**
 * What a failed answer ends the call with (a transient failure: retried first): caused by the answer
 * as it may be shown (errors.ts `ProviderAnswerError`), every message redacted once more.
 */
function failed(client: ClientOptions, status: number, f: Failure, subject: () => CallSubject, now: Date): Error {
  if (client.signal.aborted) return abortReason(client.signal);
  const secrets = client.secrets ?? [];
  const shown = answerError({ status, code: f.code ?? null, says: f.says ?? '' }, secrets);
  const c = classifyFailure({ status: f.status, limit: f.limit });
  if (c.kind === 'transient') return new TransientFailure(`HTTP ${status}`, { cause: shown });
  if (c.kind === 'other' && f.refused) return redactError(f.refused(subject(), shown), secrets);
  return redactError(failureError(c, subject(), now, shown), secrets);
}

/** A failed answer's body, redacted, for debugging: logged at debug level only. */
function logRefusedBody(client: ClientOptions, answer: Answer<unknown>): void {
  if (!client.logger.isLevelEnabled('debug')) return;
  const body = redactedBody(answer.body, client.secrets ?? []);
  client.logger.debug({ status: answer.status, body }, 'provider_answer_refused');
}

/** The body as the provider reads it: a stream as text, null as empty, anything else as it is. */
async function readBody(body: unknown): Promise<unknown> {
  if (body === null) return '';
  if (!isStream(body)) return body;
  return new Response(body).text();
}

function isStream(body: unknown): body is ReadableStream<Uint8Array> {
  return typeof body === 'object' && body !== null && typeof (body as ReadableStream).getReader === 'function';
}

/** An answer's body as text ('' when the sender read it into something else). */
export function bodyText(answer: Answer<unknown>): string {
  return typeof answer.body === 'string' ? answer.body : '';
}

/** Sends `init` to `url` with the loop's fetch; the body is left for the loop to read. */
export function sendFetch(url: string, init: RequestInit): Send<Response> {
  return async (signal, fetchHome) => {
    const res = await fetchHome(url, { ...init, signal });
    return { status: res.status, headers: res.headers, body: res.body, raw: res };
  };
}

/** Redirects followed (on the origin) before a request is refused as a loop. */
const MAX_REDIRECTS = 20;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** A URL's origin (`scheme://host:port`), or null for one that does not parse or has none. */
function originOf(url: string | URL): string | null {
  try {
    const { origin } = new URL(url);
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}

/** The refusal to leave the origin somewhere in an error's causes (a sender may wrap it). */
function offOriginIn(err: unknown): OffOriginError | null {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof OffOriginError) return e;
  }
  return null;
}

/**
 * `fetchFn` kept on `origin` (null: refuses every URL): a request elsewhere is refused before it is
 * sent, and redirects are followed by hand, on the origin only, so the credential never goes elsewhere.
 */
function homeFetch(origin: string | null, fetchFn: typeof globalThis.fetch): typeof globalThis.fetch {
  const onHome = (url: string | URL): URL => {
    const there = originOf(url);
    if (origin === null || there !== origin) throw new OffOriginError(there ?? 'a URL without an origin');
    return new URL(url);
  };
  return async (input, init) => {
    let url = onHome(input instanceof Request ? input.url : input);
    let req: RequestInit = { ...init, redirect: 'manual' };
    for (let hops = 0; ; hops++) {
      const res = await fetchFn(hops === 0 ? input : url, req);
      const location = res.headers.get('location');
      if (!REDIRECTS.has(res.status) || location === null) return res;
      if (hops === MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
      await res.body?.cancel();
      url = onHome(new URL(location, url));
      req = redirected(req, res.status);
    }
  };
}

/** The request a redirect asks for: a 303 (or a 301/302 after a POST) turns into a GET without a body. */
function redirected(req: RequestInit, status: number): RequestInit {
  const method = (req.method ?? 'GET').toUpperCase();
  const toGet = status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST';
  if (!toGet) return req;
  const { body: _body, ...rest } = req;
  return { ...rest, method: 'GET' };
}
