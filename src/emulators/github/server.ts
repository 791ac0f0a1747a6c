/**
 * The emulator's HTTP front: authentication, injected faults, the primary rate limit, then the
 * route; every answer carries GitHub's headers and lands in the request log.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../../clock.js';
import { dispatch, rateLimitBody, routeInfo } from './dispatch.js';
import type { FaultInjector } from './faults.js';
import type { UserRecord } from './model.js';
import type { EmulatorToken, FaultKind, FaultSpec, RateLimitSpec } from './options.js';
import type { RateLimiter, RateState } from './ratelimit.js';
import type { RenderContext } from './renderRepo.js';
import {
  commonHeaders,
  errorAnswer,
  notFound,
  primaryLimitAnswer,
  requestIdFor,
  secondaryLimitAnswer,
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

export interface ServerParts {
  instance: number;
  clock: Clock;
  render: RenderContext;
  tokens: ReadonlyMap<string, EmulatorToken>;
  viewerOf: (token: EmulatorToken) => UserRecord;
  limiter: RateLimiter;
  anonymous: RateLimiter;
  rateSpec: RateLimitSpec;
  faults: FaultInjector;
  log: RequestLogEntry[];
  logLimit: number;
}

const AUTH = /^(?:token|bearer)\s+(\S+)\s*$/i;
const NO_FAULT = { answer: null, delayMs: 0 } as const;

export function createHandler(parts: ServerParts): (req: IncomingMessage, res: ServerResponse) => void {
  let seq = 0;
  return (req, res) => {
    const n = ++seq;
    handle(parts, n, req, res).catch((err: unknown) => {
      const answer = serverErrorAnswer(500);
      if (!res.headersSent) send(res, req, answer, {});
      res.destroy(err instanceof Error ? err : undefined);
    });
  };
}

async function handle(parts: ServerParts, seq: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const requestId = requestIdFor(parts.instance, seq);
  const url = URL.canParse(req.url ?? '/', parts.render.api)
    ? new URL(req.url ?? '/', parts.render.api)
    : new URL('/', parts.render.api);
  const method = req.method ?? 'GET';
  const header = req.headers.authorization;
  const token = header ? parts.tokens.get(AUTH.exec(header)?.[1] ?? '') : undefined;
  const finish = (answer: Answer, rate: RateState, fault: FaultKind | null, tokenId: string | null) => {
    const sent = send(res, req, answer, commonHeaders(rate, requestId, parts.clock.now()));
    record(parts, {
      seq,
      at: parts.clock.now().toISOString(),
      method,
      path: url.pathname + url.search,
      tokenId,
      status: sent,
      fault,
      rate,
    });
  };
  if (!token) {
    const rate = parts.anonymous.consume('anonymous').state;
    return finish(errorAnswer(401, header ? 'Bad credentials' : 'Requires authentication'), rate, null, null);
  }
  // A spent window answers before any fault is drawn, so a counted fault is not used up unseen.
  const spentAlready = url.pathname !== '/rate_limit' && parts.limiter.peek(token.id).remaining === 0;
  const { answer: fault, delayMs } = spentAlready ? NO_FAULT : parts.faults.draw(url.pathname);
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  if (fault?.kind === 'primary-limit') parts.limiter.drain(token.id, fault.resetSeconds);
  const injected: FaultKind | null = fault?.kind ?? (delayMs > 0 ? 'slow' : null);
  if (url.pathname === '/rate_limit' && !fault) {
    const now = parts.clock.now().getTime();
    return finish(rateLimitBody(parts.limiter, token.id, now), parts.limiter.peek(token.id), injected, token.id);
  }
  const spent = parts.limiter.consume(token.id);
  if (!spent.allowed) {
    const answer = primaryLimitAnswer(parts.rateSpec.status ?? 403, parts.viewerOf(token).id, requestId);
    return finish(answer, spent.state, injected, token.id);
  }
  if (fault && fault.kind !== 'primary-limit')
    return finish(faultAnswer(parts, fault, url, requestId), spent.state, injected, token.id);
  if (method !== 'GET' && method !== 'HEAD') return finish(notFound(), spent.state, injected, token.id);
  const privateRepos = token.repos ? new Set(token.repos) : null;
  const viewer = parts.viewerOf(token);
  const answer = dispatch({ render: parts.render, url, privateRepos, viewer, now: parts.clock.now().getTime() });
  let rate = spent.state;
  if (answer.status === 200 && etagMatches(req, answer)) {
    rate = parts.limiter.refund(token.id);
    return finish({ status: 304, body: null, headers: answer.headers }, rate, injected, token.id);
  }
  finish(answer, rate, injected, token.id);
}

function faultAnswer(parts: ServerParts, fault: FaultSpec, url: URL, requestId: string): Answer {
  const info = routeInfo(parts.render.data, url.pathname);
  switch (fault.kind) {
    case 'secondary-limit':
      return secondaryLimitAnswer(403, requestId, fault.retryAfter);
    case 'too-many-requests':
      return secondaryLimitAnswer(429, requestId, fault.retryAfter);
    case 'bad-credentials':
      return errorAnswer(401, 'Bad credentials');
    case 'forbidden': {
      const answer = errorAnswer(403, 'Resource not accessible by personal access token', info?.docs);
      answer.headers = { 'x-accepted-github-permissions': info?.permission ?? 'metadata=read' };
      return answer;
    }
    case 'not-found':
      return notFound(info?.docs);
    case 'server-error':
      return serverErrorAnswer(fault.status ?? 502);
    case 'primary-limit':
    case 'slow':
      throw new Error(`fault ${fault.kind} does not answer by itself`);
  }
}

/**
 * Body ETags (weak, of the JSON) and If-None-Match → 304, as GitHub's conditional requests. Leaves
 * the serialised JSON as the answer's body.
 */
function etagMatches(req: IncomingMessage, answer: Answer): boolean {
  const json = JSON.stringify(answer.body);
  answer.body = json;
  const etag = `W/"${createHash('sha1').update(json).digest('hex')}"`;
  answer.headers = { ...answer.headers, etag };
  const wanted = req.headers['if-none-match'];
  return wanted !== undefined && wanted.split(',').some((t) => t.trim() === etag);
}

function send(res: ServerResponse, req: IncomingMessage, answer: Answer, base: Record<string, string>): number {
  const text = answer.status === 304 ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
  const headers: Record<string, string | number> = {
    ...base,
    'content-type': answer.contentType ?? 'application/json; charset=utf-8',
    ...answer.headers,
  };
  if (answer.status !== 304) headers['content-length'] = Buffer.byteLength(text);
  res.writeHead(answer.status, headers);
  res.end(req.method === 'HEAD' ? undefined : text);
  return answer.status;
}

function record(parts: ServerParts, entry: RequestLogEntry): void {
  parts.log.push(entry);
  if (parts.log.length > parts.logLimit * 1.1) parts.log.splice(0, parts.log.length - parts.logLimit);
}
