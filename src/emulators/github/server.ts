/**
 * The emulator's HTTP front: authentication, injected faults, the primary rate limit, then the
 * route; every answer carries GitHub's headers and lands in the request log. With a GitHub App
 * (appAuth.ts), its JWT authenticates the App endpoints only and its installation's access tokens
 * authenticate like the full-access token (routesApp.ts).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Clock } from '../../clock.js';
import type { FaultDeck, MetFault } from '../core/faultDeck.js';
import { appendLog, requestHandler, sendAnswer } from '../core/http.js';
import type { GithubApp } from './appAuth.js';
import { looksLikeJwt, JWT_MESSAGES } from './appAuth.js';
import type { Churn } from './churn.js';
import { dispatch, rateLimitBody, routeInfo } from './dispatch.js';
import type { FaultKind, FaultSpec } from './faults.js';
import type { UserRecord } from './model.js';
import type { EmulatorToken, RateLimitSpec } from './options.js';
import type { RateLimiter, RateState } from './ratelimit.js';
import type { RenderContext } from './renderRepo.js';
import { appAnswer, isAppJwtPath, type CallerKind } from './routesApp.js';
import {
  commonHeaders,
  errorAnswer,
  faultAnswer,
  notFound,
  primaryLimitAnswer,
  requestIdFor,
  serverErrorAnswer,
  type Answer,
} from './responses.js';

/** One request as the log keeps it: never the token, only its id. */
export interface RequestLogEntry {
  seq: number;
  /** The clock's time, ISO 8601. */
  at: string;
  method: string;
  /** Path and query. */
  path: string;
  tokenId: string | null;
  status: number;
  fault: FaultKind | null;
  rate: RateState;
}

/**
 * Requests answered so far: in all, by an injected fault, delayed only (`slow`), and 304 Not
 * Modified (a conditional request's: not counted against the rate limit).
 */
export interface RequestTotals {
  requests: number;
  faults: number;
  slow: number;
  notModified: number;
}

export interface ServerParts {
  instance: number;
  clock: Clock;
  render: RenderContext;
  tokens: ReadonlyMap<string, EmulatorToken>;
  viewerOf: (token: EmulatorToken) => UserRecord;
  limiter: RateLimiter;
  anonymous: RateLimiter;
  rateSpec: RateLimitSpec;
  faults: FaultDeck<FaultSpec>;
  log: RequestLogEntry[];
  logLimit: number;
  churn?: Churn;
  totals?: RequestTotals;
  /** The GitHub App, when the emulator serves one. */
  app?: GithubApp | null;
}

const AUTH = /^(?:token|bearer)\s+(\S+)\s*$/i;
const JSON_TYPE = 'application/json; charset=utf-8';
const NO_FAULT: MetFault<FaultSpec> = { fault: null, injected: null };

export function createHandler(parts: ServerParts): RequestListener {
  return requestHandler(
    (seq, req, res) => handle(parts, seq, req, res),
    (_seq, req, res) => sendAnswer(req, res, serverErrorAnswer(500), {}, JSON_TYPE),
  );
}

async function handle(parts: ServerParts, seq: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const requestId = requestIdFor(parts.instance, seq);
  const url = URL.canParse(req.url ?? '/', parts.render.api)
    ? new URL(req.url ?? '/', parts.render.api)
    : new URL('/', parts.render.api);
  const method = req.method ?? 'GET';
  const header = req.headers.authorization;
  const caller = callerOf(parts, header, url.pathname);
  const finish = (answer: Answer, rate: RateState, fault: FaultKind | null, tokenId: string | null) => {
    sendAnswer(req, res, answer, commonHeaders(rate, requestId, parts.clock.now()), JSON_TYPE);
    const at = parts.clock.now().toISOString();
    const path = url.pathname + url.search;
    appendLog(parts.log, { seq, at, method, path, tokenId, status: answer.status, fault, rate }, parts.logLimit);
    countAnswer(parts.totals, fault, answer.status);
  };
  if ('refused' in caller) {
    const rate = parts.anonymous.consume('anonymous').state;
    return finish(caller.refused, rate, null, null);
  }
  const { token, kind } = caller;
  // A spent window answers before any fault is drawn, so a counted fault is not used up unseen.
  const spentAlready = url.pathname !== '/rate_limit' && parts.limiter.peek(token.id).remaining === 0;
  const { fault, injected } = spentAlready ? NO_FAULT : await parts.faults.meet(url.pathname);
  if (fault?.kind === 'primary-limit') parts.limiter.drain(token.id, fault.resetSeconds);
  if (url.pathname === '/rate_limit' && !fault) {
    const now = parts.clock.now().getTime();
    return finish(rateLimitBody(parts.limiter, token.id, now), parts.limiter.peek(token.id), injected, token.id);
  }
  const spent = parts.limiter.consume(token.id);
  if (!spent.allowed) {
    const answer = primaryLimitAnswer(parts.rateSpec.status ?? 403, rateSubject(parts, token, kind), requestId);
    return finish(answer, spent.state, injected, token.id);
  }
  if (fault && fault.kind !== 'primary-limit') {
    const info = routeInfo(parts.render.data, url.pathname);
    return finish(faultAnswer(fault, info, requestId), spent.state, injected, token.id);
  }
  const fromApp = parts.app ? appAnswer(parts.app, kind, { render: parts.render, method, url }) : null;
  if (!fromApp && method !== 'GET' && method !== 'HEAD') return finish(notFound(), spent.state, injected, token.id);
  const privateRepos = token.repos ? new Set(token.repos) : null;
  const viewer = parts.viewerOf(token);
  const now = parts.clock.now().getTime();
  const answer = fromApp ?? dispatch({ render: parts.render, url, privateRepos, viewer, now, churn: parts.churn });
  if (answer.status === 200 && etagMatches(req, answer)) {
    const rate = parts.limiter.refund(token.id);
    return finish({ status: 304, body: null, headers: answer.headers }, rate, injected, token.id);
  }
  finish(answer, spent.state, injected, token.id);
}

/**
 * Who sent the request, or the 401 that refuses it. An App endpoint takes only a valid App JWT;
 * elsewhere a configured token, or a live access token of the App's installation (a JWT there is
 * refused as GitHub refuses it).
 */
function callerOf(
  parts: ServerParts,
  header: string | undefined,
  pathname: string,
): { token: EmulatorToken; kind: CallerKind } | { refused: Answer } {
  if (!header) return { refused: errorAnswer(401, 'Requires authentication') };
  const presented = AUTH.exec(header)?.[1] ?? '';
  const app = parts.app;
  if (app && isAppJwtPath(parts.render, pathname)) {
    const refusal = app.checkJwt(presented);
    return refusal === null ? { token: app.appCaller, kind: 'app' } : { refused: errorAnswer(401, refusal) };
  }
  const token = parts.tokens.get(presented);
  if (token) return { token, kind: 'token' };
  if (app) {
    const state = app.tokenState(presented);
    if (state === 'valid') return { token: app.installationCaller, kind: 'installation' };
    if (state === 'unknown' && looksLikeJwt(presented)) {
      app.stats.jwtsRefused++;
      return { refused: errorAnswer(401, JWT_MESSAGES.undecodable) };
    }
  }
  return { refused: errorAnswer(401, 'Bad credentials') };
}

/** Whose primary limit ran out, as GitHub's message names it. */
function rateSubject(parts: ServerParts, token: EmulatorToken, kind: CallerKind): string {
  if (kind === 'installation' && parts.app) return `installation ID ${parts.app.installationId}`;
  if (kind === 'app' && parts.app) return `app ID ${parts.app.appId}`;
  return `user ID ${parts.viewerOf(token).id}`;
}

function countAnswer(totals: RequestTotals | undefined, fault: FaultKind | null, status: number): void {
  if (!totals) return;
  totals.requests++;
  if (status === 304) totals.notModified++;
  if (fault === 'slow') totals.slow++;
  else if (fault !== null) totals.faults++;
}

/**
 * Body ETags (weak, of the JSON) and If-None-Match → 304, as GitHub's conditional requests: "Making
 * a conditional request does not count against your primary rate limit if a 304 response is
 * returned" (docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api
 * #use-conditional-requests-if-appropriate). The caller refunds the request it counted; the 304
 * carries the rate-limit headers as they stand. Leaves the serialised JSON as the answer's body.
 */
function etagMatches(req: IncomingMessage, answer: Answer): boolean {
  const json = JSON.stringify(answer.body);
  answer.body = json;
  const etag = `W/"${createHash('sha1').update(json).digest('hex')}"`;
  answer.headers = { ...answer.headers, etag };
  const wanted = req.headers['if-none-match'];
  return wanted !== undefined && wanted.split(',').some((t) => t.trim() === etag);
}
