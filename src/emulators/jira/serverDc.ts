/**
 * The HTTP front of the `datacenter` flavor: Data Center's authentication (`dcAuthOf`), injected
 * faults, the user's token bucket (limitsDc.ts: its headers on every authenticated answer, a 429
 * with `retry-after` when it is empty), then the REST v2 routes (routesDc.ts); `/rest/api/3/…`
 * answers 404. Every request lands in the request log (never the credential).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { appendLog, sendAnswer, type Answer } from '../core/http.js';
import { faultAnswer } from './answers.js';
import type { FaultKind, FaultSpec } from './faults.js';
import { bucketHeaders, dcLimitAnswer, TokenBucket } from './limitsDc.js';
import { jiraError } from './routes.js';
import { routeDc } from './routesDc.js';
import { jsonBody, requestId, type ServerParts } from './serverParts.js';

const JSON_TYPE = 'application/json;charset=UTF-8';

/**
 * Data Center's credentials: a personal access token as `Bearer <token>`
 * (https://confluence.atlassian.com/enterprise/using-personal-access-tokens-1026032365.html), or
 * the user's `name:password` as basic auth (https://developer.atlassian.com/server/jira/platform/
 * basic-authentication/); the emulator's user is the viewer, its password and token the API token.
 */
export function dcAuthOf(parts: ServerParts, header: string | undefined): 'basic' | 'bearer' | null {
  if (!header) return null;
  const basic = /^Basic\s+(\S+)$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    return decoded === `${parts.viewer.name}:${parts.apiToken}` ? 'basic' : null;
  }
  const bearer = /^Bearer\s+(\S+)$/i.exec(header);
  return bearer && bearer[1] === parts.apiToken ? 'bearer' : null;
}

/** Data Center's 401: Seraph, its authenticator, names the reason in `X-Seraph-LoginReason`. */
export function dcUnauthorized(): Answer {
  return {
    status: 401,
    body: { errorMessages: ['You are not authenticated. Authentication required to perform this operation.'] },
    headers: { 'x-seraph-loginreason': 'AUTHENTICATED_FAILED', 'x-ausername': 'anonymous' },
  };
}

const buckets = new WeakMap<ServerParts, TokenBucket>();

function bucketOf(parts: ServerParts): TokenBucket {
  let b = buckets.get(parts);
  if (!b) buckets.set(parts, (b = new TokenBucket(parts.limiter.spec, parts.clock)));
  return b;
}

/** An injected fault's answer: as Cloud's, but a limit is Data Center's 429, and the bucket's headers go with it. */
function dcFault(fault: FaultSpec, headers: Record<string, string>): Answer {
  if (fault.kind === 'rate-limit') {
    const limited = { ...headers, 'x-ratelimit-remaining': '0', 'retry-after': String(fault.retryAfter ?? 30) };
    return { status: 429, body: '', contentType: 'text/plain;charset=UTF-8', headers: limited };
  }
  if (fault.kind === 'unauthorized') return dcUnauthorized();
  const answer = faultAnswer(fault, 0);
  return { ...answer, headers: { ...headers, ...answer.headers } };
}

export async function handleDc(parts: ServerParts, seq: number, req: IncomingMessage, res: ServerResponse) {
  const startedAt = performance.now();
  const url = new URL(req.url ?? '/', parts.site.url);
  const method = req.method ?? 'GET';
  const parsed = await jsonBody(req);
  const body = parsed === 'bad' ? null : parsed;
  const auth = dcAuthOf(parts, req.headers.authorization);
  const finish = (
    answer: Answer,
    headers: Record<string, string>,
    remaining: number | null,
    fault: FaultKind | null,
  ) => {
    sendAnswer(req, res, answer, { ...headers, 'x-arequestid': requestId(seq) }, JSON_TYPE);
    const jql = typeof body?.jql === 'string' ? body.jql : url.searchParams.get('jql');
    const entry = { seq, at: parts.clock.now().toISOString(), method, path: url.pathname + url.search, jql, auth };
    const outcome = { status: answer.status, fault, remaining };
    appendLog(parts.log, { ...entry, ...outcome, startedAt, endedAt: performance.now() }, parts.logLimit);
  };
  if (!auth) return finish(dcUnauthorized(), {}, null, null);
  parts.churn?.(parts.clock.now().getTime());
  const { fault, injected } = await parts.faults.meet(url.pathname);
  const state = bucketOf(parts).consume();
  const headers = bucketHeaders(parts.limiter.spec, state);
  if (!state.allowed) return finish(dcLimitAnswer(parts.limiter.spec, state), {}, 0, injected);
  if (fault) return finish(dcFault(fault, headers), {}, state.remaining, injected);
  if (parsed === 'bad') return finish(jiraError(400, 'Unexpected character in the request body.'), headers, null, null);
  const path = url.pathname;
  const ctx = { site: parts.site, method, path, q: url.searchParams, body, viewer: parts.viewer };
  const answer = path.startsWith('/rest/api/3/')
    ? null
    : routeDc({ ...ctx, sprintField: parts.sprintField, index: parts.index, now: parts.clock.now().getTime() });
  finish(answer ?? jiraError(404, `null for uri: ${parts.site.url}${path}`), headers, state.remaining, injected);
}
