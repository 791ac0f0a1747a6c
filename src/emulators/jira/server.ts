/**
 * The emulator's HTTP front: authentication (basic `email:api_token` or a bearer token), injected
 * faults, the enforced budget, then the route; every answer carries the `X-RateLimit-*` headers
 * and lands in the request log (never the credential).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../../clock.js';
import { resetHeader, type FaultInjector, type RateLimiter, type RateState } from './limits.js';
import type { UserRec } from './model.js';
import type { FaultKind, FaultSpec } from './options.js';
import type { Site } from './render.js';
import { jiraError, route, type Answer } from './routes.js';

export interface RequestLogEntry {
  seq: number;
  /** The clock's time, ISO 8601. */
  at: string;
  method: string;
  /** Path and query. */
  path: string;
  /** The JQL of a search (GET or POST). */
  jql: string | null;
  /** `basic` or `bearer` when the credential was accepted; null otherwise. */
  auth: 'basic' | 'bearer' | null;
  status: number;
  fault: FaultKind | null;
  remaining: number | null;
  /** performance.now() when the request arrived and when it was answered. */
  startedAt: number;
  endedAt: number;
}

export interface ServerParts {
  clock: Clock;
  site: Site;
  email: string;
  apiToken: string;
  viewer: UserRec;
  limiter: RateLimiter;
  faults: FaultInjector;
  sprintField: string;
  log: RequestLogEntry[];
  logLimit: number;
}

export function createHandler(parts: ServerParts): (req: IncomingMessage, res: ServerResponse) => void {
  let seq = 0;
  return (req, res) => {
    const n = ++seq;
    handle(parts, n, req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, jiraError(500, 'Internal server error'), { 'x-arequestid': requestId(n) });
      res.destroy(err instanceof Error ? err : undefined);
    });
  };
}

function authOf(parts: ServerParts, header: string | undefined): 'basic' | 'bearer' | null {
  if (!header) return null;
  const basic = /^Basic\s+(\S+)$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    return decoded === `${parts.email}:${parts.apiToken}` ? 'basic' : null;
  }
  const bearer = /^Bearer\s+(\S+)$/i.exec(header);
  return bearer && bearer[1] === parts.apiToken ? 'bearer' : null;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function handle(parts: ServerParts, seq: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const startedAt = performance.now();
  const url = new URL(req.url ?? '/', parts.site.url);
  const method = req.method ?? 'GET';
  const raw = method === 'POST' ? await readBody(req) : '';
  let body: Record<string, unknown> | null = null;
  let badJson = false;
  if (method === 'POST') {
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      badJson = true;
    }
  }
  const auth = authOf(parts, req.headers.authorization);
  const finish = (answer: Answer, rate: RateState | null, fault: FaultKind | null) => {
    send(res, answer, { ...rateHeaders(rate), 'x-arequestid': requestId(seq) });
    const jql = typeof body?.jql === 'string' ? body.jql : url.searchParams.get('jql');
    record(parts, {
      seq,
      at: parts.clock.now().toISOString(),
      method,
      path: url.pathname + url.search,
      jql,
      auth,
      status: answer.status,
      fault,
      remaining: rate?.remaining ?? null,
      startedAt,
      endedAt: performance.now(),
    });
  };
  if (!auth) return finish(unauthorized(), null, null);
  const { answer: fault, delayMs } = parts.faults.draw(url.pathname);
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  const kind: FaultKind | null = fault?.kind ?? (delayMs > 0 ? 'slow' : null);
  const spent = parts.limiter.consume('credential');
  if (!spent.allowed) return finish(limitAnswer(parts, spent.state.resetAt), spent.state, kind);
  if (fault) return finish(faultAnswer(parts, fault), spent.state, kind);
  if (badJson)
    return finish(jiraError(400, 'Invalid request payload. Refer to the REST API documentation.'), spent.state, kind);
  const answer = route({
    site: parts.site,
    method,
    path: url.pathname,
    q: url.searchParams,
    body,
    viewer: parts.viewer,
    sprintField: parts.sprintField,
  });
  finish(answer ?? jiraError(404, 'null for uri: ' + url.pathname), spent.state, kind);
}

function unauthorized(): Answer {
  return {
    status: 401,
    body: 'Client must be authenticated to access this resource.',
    contentType: 'text/plain;charset=UTF-8',
    headers: { 'www-authenticate': 'OAuth realm="https%3A%2F%2Femulated.atlassian.net"' },
  };
}

function limitAnswer(parts: ServerParts, resetAt: number, retryAfter?: number): Answer {
  const now = parts.clock.now().getTime();
  const seconds = retryAfter ?? Math.max(1, Math.ceil((resetAt - now) / 1000));
  return {
    status: 429,
    body: { errorMessages: ['Rate limit exceeded.'], errors: {} },
    headers: {
      'retry-after': String(seconds),
      'x-ratelimit-reset': resetHeader(retryAfter === undefined ? resetAt : now + seconds * 1000),
      'ratelimit-reason': 'jira-burst-based',
    },
  };
}

function faultAnswer(parts: ServerParts, fault: FaultSpec): Answer {
  switch (fault.kind) {
    case 'rate-limit':
      return limitAnswer(parts, 0, fault.retryAfter ?? 30);
    case 'unauthorized':
      return unauthorized();
    case 'forbidden':
      return jiraError(403, 'You do not have the permission to see the specified issue.');
    case 'server-error': {
      const status = fault.status ?? 503;
      const answer = jiraError(status, status === 503 ? 'Service Unavailable' : 'Internal server error');
      if (status === 503) answer.headers = { 'retry-after': '1' };
      return answer;
    }
    case 'slow':
      throw new Error('a slow fault does not answer by itself');
  }
}

function rateHeaders(rate: RateState | null): Record<string, string> {
  if (!rate) return {};
  return {
    'x-ratelimit-limit': String(rate.limit),
    'x-ratelimit-remaining': String(Math.max(0, rate.remaining)),
    'x-ratelimit-reset': resetHeader(rate.resetAt),
    'x-ratelimit-nearlimit': String(rate.remaining < rate.limit * 0.2),
  };
}

/** Jira's `X-AREQUESTID`: unique per request of this emulator. */
function requestId(seq: number): string {
  return `${(seq * 2654435761) % 4294967296}`.padStart(10, '0').replace(/^(\d{3})(\d{3})/, '$1x$2x');
}

function send(res: ServerResponse, answer: Answer, base: Record<string, string>): void {
  const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    ...base,
    'content-type': answer.contentType ?? 'application/json;charset=UTF-8',
    ...answer.headers,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function record(parts: ServerParts, entry: RequestLogEntry): void {
  parts.log.push(entry);
  if (parts.log.length > parts.logLimit * 1.1) parts.log.splice(0, parts.log.length - parts.logLimit);
}
