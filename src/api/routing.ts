/**
 * What answers when no route runs: a URL the router cannot read, a path no route has, a path that
 * takes other methods. Every such answer goes through the usual hooks (request id, security
 * headers) and error handler, in the API's error shape, and never echoes the request's URL.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { ApiError, errorBody, toApiError } from './errors.js';

/**
 * Where a request the router refused is sent again: a path of plain characters no route takes.
 * Whatever route might match it, the pre-routing hook answers first.
 */
const REFUSED_PATH = '/.syncrelay/refused-request';

/**
 * Errors Fastify raises while routing (a malformed percent-encoding, an over-long path segment).
 * Fastify hands them to `frameworkErrors` on a bare reply that no hook has seen; this sends the
 * request through the router again on a readable path, and an `onRequest` hook placed after the
 * security headers throws the error, so it is answered like any other.
 */
export class PreRoutingErrors {
  private readonly refused = new WeakMap<IncomingMessage, ApiError>();
  private app: FastifyInstance | null = null;

  /** Fastify's `frameworkErrors` option. */
  readonly frameworkErrors = (err: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const raw = request.raw;
    if (this.app === null || this.refused.has(raw)) {
      // Not installed yet, or refused twice: answer directly rather than loop.
      void reply.status(400).send(errorBody(new ApiError(400, 'invalid_request', 'invalid request')));
      return;
    }
    this.refused.set(raw, toApiError(err));
    raw.url = REFUSED_PATH;
    this.app.routing(raw, reply.raw);
  };

  /** Adds the hook that answers refused requests; call after the security headers' hooks. */
  install(app: FastifyInstance): void {
    this.app = app;
    app.addHook('onRequest', async (request: FastifyRequest) => {
      const err = this.refused.get(request.raw);
      if (err) throw err;
    });
  }
}

/** The methods each route path takes, to tell a wrong method (405) from an unknown path (404). */
export class RouteTable {
  private readonly routes: { pattern: RegExp; methods: Set<string> }[] = [];

  /** Records every route registered from now on (routes of plugins registered later included). */
  install(app: FastifyInstance): void {
    app.addHook('onRoute', (route: RouteOptions) => this.add(route.url, route.method));
  }

  /** The methods a path (as sent, without the query) takes; empty when no route has it. */
  methodsOf(path: string): string[] {
    const methods = new Set<string>();
    for (const r of this.routes) if (r.pattern.test(path)) for (const m of r.methods) methods.add(m);
    return [...methods].sort();
  }

  private add(url: string, method: string | string[]): void {
    const methods = new Set(typeof method === 'string' ? [method] : method);
    if (methods.has('GET')) methods.add('HEAD');
    this.routes.push({ pattern: routePattern(url), methods });
  }
}

/** Fastify's path syntax as a regular expression over the path as sent (`:id` one segment, `*` the rest). */
function routePattern(url: string): RegExp {
  const segments = url.split('/').map((s) => {
    if (s === '*') return '.*';
    if (s.startsWith(':')) return '[^/]+';
    return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${segments.join('/')}$`);
}

/**
 * The not-found handler: 405 with an Allow header when the path takes other methods, else 404.
 * Neither names the method or path that was sent.
 */
export function notFoundHandler(table: RouteTable) {
  return (request: FastifyRequest, reply: FastifyReply): void => {
    const path = (request.raw.url ?? '/').split('?')[0]!;
    const allowed = table.methodsOf(path);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      throw new ApiError(405, 'method_not_allowed', 'this path does not take this method (see the Allow header)', {
        allowed,
      });
    }
    throw new ApiError(404, 'not_found', 'no route has this method and path');
  };
}
