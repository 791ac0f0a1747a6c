/**
 * Bearer-token authentication, request budgets and scope checks, run on every request before its
 * body is read. Each route declares `config.scope`; a route that declares none needs `admin` (fail
 * closed). Requests that match no route pass through to the 404 handler.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import { authenticateTokenHash, type ApiScope } from '../store/apiTokens.js';
import type { RouteScope } from './contracts/endpoint.js';
import { ApiError } from './errors.js';
import type { RequestLimits } from './rateLimit.js';
import { hashToken, hasScope, looksLikeToken } from './tokens.js';

/** Who is calling: the token's id, org and scopes. */
export interface ApiPrincipal {
  tokenId: string;
  orgId: string;
  scopes: ApiScope[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook for every non-public route. */
    principal: ApiPrincipal | null;
  }
  interface FastifyContextConfig {
    /** Who may call the route. @default 'admin' */
    scope?: RouteScope;
  }
}

/** `last_used_at` is stamped at most once a minute per token. */
const TOUCH_AFTER_MS = 60_000;

/** The scope a request's route needs; null when no route matched (the 404 handler answers). */
export function routeScope(request: FastifyRequest): RouteScope | null {
  if (request.is404 || request.routeOptions.url === undefined) return null;
  return request.routeOptions.config.scope ?? 'admin';
}

/** The bearer token of the Authorization header, or null when there is none. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (header === undefined) return null;
  const m = /^Bearer +(\S+) *$/i.exec(header);
  if (!m) throw new ApiError(401, 'unauthorized', 'the Authorization header must be "Bearer <token>"');
  return m[1]!;
}

export interface AuthDeps {
  db: Db;
  clock: Clock;
  /** Request budgets; none when rate limits are off. */
  limits?: RequestLimits | null;
}

/**
 * The onRequest hook: 429 for an address out of failed authentications (before any lookup), 401
 * without a live token (counted against the address), 429 for a token out of requests, 403 without
 * the route's scope.
 */
export function authHook(deps: AuthDeps) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    request.principal = null;
    const scope = routeScope(request);
    if (scope === null || scope === 'public') return;
    await deps.limits?.checkAddress(request, reply);
    let principal: ApiPrincipal;
    try {
      principal = await authenticate(deps, request);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) await deps.limits?.countFailure(request);
      throw err;
    }
    request.principal = principal;
    await deps.limits?.countToken(request, reply);
    if (!hasScope(principal.scopes, scope)) {
      throw new ApiError(403, 'forbidden', `this token lacks the "${scope}" scope`, { required_scope: scope });
    }
  };
}

/** The Authorization header's live token (401 without one); looked up only when it has a token's shape. */
async function authenticate(deps: AuthDeps, request: FastifyRequest): Promise<ApiPrincipal> {
  const token = bearerToken(request);
  if (token === null)
    throw new ApiError(401, 'unauthorized', 'an API token is required (Authorization: Bearer <token>)');
  const row = looksLikeToken(token)
    ? await authenticateTokenHash(deps.db, hashToken(token), deps.clock.now(), TOUCH_AFTER_MS)
    : null;
  if (!row) throw new ApiError(401, 'unauthorized', 'the API token is invalid or revoked');
  return { tokenId: row.id, orgId: row.org_id, scopes: row.scopes };
}

/** The principal of an authenticated route (the hook guarantees it). */
export function principalOf(request: FastifyRequest): ApiPrincipal {
  if (!request.principal) throw new ApiError(401, 'unauthorized', 'an API token is required');
  return request.principal;
}
