/**
 * Bearer-token authentication and scope checks, run on every request before its body is read.
 * Each route declares `config.scope`; a route that declares none needs `admin` (fail closed).
 * Requests that match no route pass through to the 404 handler.
 */
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import { authenticateTokenHash, type ApiScope } from '../store/apiTokens.js';
import type { RouteScope } from './contracts/endpoints.js';
import { ApiError } from './errors.js';
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

/** The onRequest hook: 401 without a live token, 403 without the route's scope. */
export function authHook(deps: { db: Db; clock: Clock }) {
  return async (request: FastifyRequest): Promise<void> => {
    request.principal = null;
    const scope = routeScope(request);
    if (scope === null || scope === 'public') return;
    const token = bearerToken(request);
    if (token === null)
      throw new ApiError(401, 'unauthorized', 'an API token is required (Authorization: Bearer <token>)');
    const row = looksLikeToken(token)
      ? await authenticateTokenHash(deps.db, hashToken(token), deps.clock.now(), TOUCH_AFTER_MS)
      : null;
    if (!row) throw new ApiError(401, 'unauthorized', 'the API token is invalid or revoked');
    request.principal = { tokenId: row.id, orgId: row.org_id, scopes: row.scopes };
    if (!hasScope(row.scopes, scope)) {
      throw new ApiError(403, 'forbidden', `this token lacks the "${scope}" scope`, { required_scope: scope });
    }
  };
}

/** The principal of an authenticated route (the hook guarantees it). */
export function principalOf(request: FastifyRequest): ApiPrincipal {
  if (!request.principal) throw new ApiError(401, 'unauthorized', 'an API token is required');
  return request.principal;
}

/** Rate-limit key: the token's hash when one is presented, the client address otherwise. */
export function rateLimitKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const m = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
  return m ? `token:${hashToken(m[1]!)}` : `ip:${request.ip}`;
}
