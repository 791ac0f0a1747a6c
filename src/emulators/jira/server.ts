/**
 * The emulator's HTTP front: authentication (basic `email:api_token` or a bearer token), injected
 * faults, the enforced limits (the credential's quota, then the endpoint's burst limit), then the
 * route; every answer past them carries the endpoint's `X-RateLimit-Limit` / `-Remaining` and the
 * quota's `Beta-RateLimit-*` headers (limits.ts), a 429 its `Retry-After` and `X-RateLimit-Reset`;
 * every request lands in the request log (never the credential).
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Clock } from '../../clock.js';
import type { FaultDeck } from '../core/faultDeck.js';
import { appendLog, readBody, requestHandler, sendAnswer } from '../core/http.js';
import { faultAnswer, limitAnswer, unauthorized } from './answers.js';
import type { FaultKind, FaultSpec } from './faults.js';
import { routeName, successHeaders, type EndpointLimiter, type RateLimiter, type RateState } from './limits.js';
import type { UserRec } from './model.js';
import type { Site } from './render.js';
import type { SearchIndex } from './searchIndex.js';
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
  endpoints: EndpointLimiter;
  index: SearchIndex;
  faults: FaultDeck<FaultSpec>;
  /** Makes the edits due by the clock (churn.ts) before a request is served. */
  churn?: (now: number) => void;
  sprintField: string;
  log: RequestLogEntry[];
  logLimit: number;
}

const JSON_TYPE = 'application/json;charset=UTF-8';

export function createHandler(parts: ServerParts): RequestListener {
  return requestHandler(
    (seq, req, res) => handle(parts, seq, req, res),
    (seq, req, res) =>
      sendAnswer(req, res, jiraError(500, 'Internal server error'), { 'x-arequestid': requestId(seq) }, JSON_TYPE),
  );
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

/** A POST's JSON body: the object, null for other methods, `bad` when it does not parse. */
async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown> | null | 'bad'> {
  if (req.method !== 'POST') return null;
  try {
    return JSON.parse((await readBody(req)) ?? '') as Record<string, unknown>;
  } catch {
    return 'bad';
  }
}

async function handle(parts: ServerParts, seq: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const startedAt = performance.now();
  const url = new URL(req.url ?? '/', parts.site.url);
  const method = req.method ?? 'GET';
  const parsed = await jsonBody(req);
  const body = parsed === 'bad' ? null : parsed;
  const auth = authOf(parts, req.headers.authorization);
  const finish = (answer: Answer, headers: Record<string, string>, rate: RateState | null, fault: FaultKind | null) => {
    sendAnswer(req, res, answer, { ...headers, 'x-arequestid': requestId(seq) }, JSON_TYPE);
    const jql = typeof body?.jql === 'string' ? body.jql : url.searchParams.get('jql');
    const entry = { seq, at: parts.clock.now().toISOString(), method, path: url.pathname + url.search, jql, auth };
    const outcome = { status: answer.status, fault, remaining: rate?.remaining ?? null };
    appendLog(parts.log, { ...entry, ...outcome, startedAt, endedAt: performance.now() }, parts.logLimit);
  };
  if (!auth) return finish(unauthorized(), {}, null, null);
  parts.churn?.(parts.clock.now().getTime());
  const { fault, injected } = await parts.faults.meet(url.pathname);
  const quota = parts.limiter.consume('credential');
  const now = parts.clock.now().getTime();
  if (!quota.allowed) return finish(limitAnswer(now, quota.state.resetAt), {}, quota.state, injected);
  const endpoint = parts.endpoints.consume(routeName(method, url.pathname));
  if (!endpoint.allowed) {
    return finish(limitAnswer(now, endpoint.state.resetAt, undefined, 'jira-burst-based'), {}, quota.state, injected);
  }
  const headers = successHeaders(endpoint.state, quota.state, parts.limiter.spec.windowSeconds, now);
  if (fault) return finish(faultAnswer(fault, now), fault.kind === 'rate-limit' ? {} : headers, quota.state, injected);
  if (parsed === 'bad') {
    const answer = jiraError(400, 'Invalid request payload. Refer to the REST API documentation.');
    return finish(answer, headers, quota.state, injected);
  }
  const answer = route({
    site: parts.site,
    method,
    path: url.pathname,
    q: url.searchParams,
    body,
    viewer: parts.viewer,
    sprintField: parts.sprintField,
    index: parts.index,
    now,
  });
  finish(answer ?? jiraError(404, 'null for uri: ' + url.pathname), headers, quota.state, injected);
}

/** Jira's `X-AREQUESTID`: unique per request of this emulator. */
function requestId(seq: number): string {
  return `${(seq * 2654435761) % 4294967296}`.padStart(10, '0').replace(/^(\d{3})(\d{3})/, '$1x$2x');
}
