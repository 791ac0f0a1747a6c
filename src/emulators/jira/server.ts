/**
 * The emulator's HTTP front: authentication (basic `email:api_token` or a bearer token), injected
 * faults, the enforced limits (the credential's quota, then the endpoint's burst limit), then the
 * route; every answer past them carries the endpoint's `X-RateLimit-Limit` / `-Remaining` and the
 * quota's `Beta-RateLimit-*` headers (limits.ts), a 429 its `Retry-After` and `X-RateLimit-Reset`;
 * every request lands in the request log (never the credential).
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { appendLog, readBody, requestHandler, sendAnswer } from '../core/http.js';
import { faultAnswer, limitAnswer, unauthorized } from './answers.js';
import type { FaultKind } from './faults.js';
import { routeName, successHeaders, type RateState } from './limits.js';
import { gatewayPath, gatewayUnauthorized } from './oauth.js';
import { jiraError, route, type Answer } from './routes.js';
import { handleDc } from './serverDc.js';
import { jsonBody, requestId, type Auth, type ServerParts } from './serverParts.js';

export type { RequestLogEntry, ServerParts } from './serverParts.js';

const JSON_TYPE = 'application/json;charset=UTF-8';

export function createHandler(parts: ServerParts): RequestListener {
  return requestHandler(
    (seq, req, res) => handle(parts, seq, req, res),
    (seq, req, res) =>
      sendAnswer(req, res, jiraError(500, 'Internal server error'), { 'x-arequestid': requestId(seq) }, JSON_TYPE),
  );
}

/**
 * Who a request is, and the site path it asks for: under the gateway (`/ex/jira/{cloudId}/…`), an
 * OAuth access token only (an unknown cloud id: 404); anywhere else the site's own credential.
 */
function signIn(parts: ServerParts, req: IncomingMessage, url: URL): { path: string; auth: Auth | null } | null {
  const gateway = gatewayPath(url.pathname);
  if (!gateway) return { path: url.pathname, auth: authOf(parts, req.headers.authorization) };
  if (!parts.oauth || gateway.cloudId !== parts.oauth.cloudId) return null;
  const token = bearerOf(req.headers.authorization);
  const live = token !== null && parts.oauth.accepts(token, parts.clock.now().getTime());
  return { path: gateway.path, auth: live ? 'oauth' : null };
}

function bearerOf(header: string | undefined): string | null {
  return /^Bearer\s+(\S+)$/i.exec(header ?? '')?.[1] ?? null;
}

/**
 * `/oauth/token` and `/oauth/token/accessible-resources` (oauth.ts), after any injected fault for
 * their path; null for any other path.
 */
async function oauthAnswer(
  parts: ServerParts,
  req: IncomingMessage,
  url: URL,
): Promise<{ answer: Answer; fault: FaultKind | null } | null> {
  const grant = parts.oauth;
  const p = url.pathname.replace(/\/+$/, '');
  if (!grant || (p !== '/oauth/token' && p !== '/oauth/token/accessible-resources')) return null;
  const { fault, injected } = await parts.faults.meet(p);
  const now = parts.clock.now().getTime();
  if (fault) return { answer: faultAnswer(fault, now), fault: injected };
  if (p === '/oauth/token') {
    if (req.method !== 'POST') return { answer: jiraError(405, 'Method Not Allowed'), fault: null };
    const body = (await readBody(req, 65_536)) ?? '';
    return { answer: grant.token(body, req.headers['content-type'], now), fault: null };
  }
  if (req.method !== 'GET') return { answer: jiraError(405, 'Method Not Allowed'), fault: null };
  const answer = grant.resources(bearerOf(req.headers.authorization), parts.site.url, parts.site.data.site, now);
  return { answer, fault: null };
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

async function handle(parts: ServerParts, seq: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (parts.flavor === 'datacenter') return handleDc(parts, seq, req, res);
  const startedAt = performance.now();
  const url = new URL(req.url ?? '/', parts.site.url);
  const method = req.method ?? 'GET';
  const oauth = await oauthAnswer(parts, req, url);
  const parsed = oauth ? null : await jsonBody(req);
  const body = parsed === 'bad' ? null : parsed;
  const signedIn = signIn(parts, req, url);
  const auth = signedIn?.auth ?? null;
  const path = signedIn?.path ?? url.pathname;
  const finish = (answer: Answer, headers: Record<string, string>, rate: RateState | null, fault: FaultKind | null) => {
    sendAnswer(req, res, answer, { ...headers, 'x-arequestid': requestId(seq) }, JSON_TYPE);
    const jql = typeof body?.jql === 'string' ? body.jql : url.searchParams.get('jql');
    const entry = { seq, at: parts.clock.now().toISOString(), method, path: url.pathname + url.search, jql, auth };
    const outcome = { status: answer.status, fault, remaining: rate?.remaining ?? null };
    appendLog(parts.log, { ...entry, ...outcome, startedAt, endedAt: performance.now() }, parts.logLimit);
  };
  if (oauth) return finish(oauth.answer, {}, null, oauth.fault);
  if (!signedIn) return finish(jiraError(404, 'Site not found.'), {}, null, null);
  if (!auth) return finish(signedIn.path === url.pathname ? unauthorized() : gatewayUnauthorized(), {}, null, null);
  parts.churn?.(parts.clock.now().getTime());
  const { fault, injected } = await parts.faults.meet(path);
  const quota = parts.limiter.consume('credential');
  const now = parts.clock.now().getTime();
  if (!quota.allowed) return finish(limitAnswer(now, quota.state.resetAt), {}, quota.state, injected);
  const endpoint = parts.endpoints.consume(routeName(method, path));
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
    path,
    q: url.searchParams,
    body,
    viewer: parts.viewer,
    sprintField: parts.sprintField,
    commentListPage: parts.commentListPage,
    index: parts.index,
    now,
  });
  finish(answer ?? jiraError(404, 'null for uri: ' + path), headers, quota.state, injected);
}
