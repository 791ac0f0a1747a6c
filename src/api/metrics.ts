/** The HTTP side of observability: `/metrics` as an API plugin and trigger answers counted per status. */
import type { FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import { EngineMetrics, type TriggerOperation } from '../observability/metrics.js';
import { bearerToken } from './auth.js';
import { endpoints } from './contracts/endpoints.js';
import { ApiError } from './errors.js';
import type { ApiPlugin } from './plugin.js';
import { secretsEqual } from './tokens.js';

export const METRICS_PATH = '/metrics';

type MetricsHolder = EngineMetrics | { ctx: { metrics?: EngineMetrics } } | { metrics?: EngineMetrics };

function metricsOf(holder: MetricsHolder): EngineMetrics | undefined {
  if (holder instanceof EngineMetrics) return holder;
  return 'ctx' in holder ? holder.ctx.metrics : holder.metrics;
}

export interface MetricsPluginOptions {
  /** @default /metrics */
  path?: string;
  /**
   * When set, scrapes must send `Authorization: Bearer <token>` (401 otherwise; compared in
   * constant time, never logged). @default unset: open to whoever reaches the listen address
   */
  token?: string;
}

/**
 * Serves the engine's registry at `GET /metrics` in the Prometheus text format. It takes no API
 * token and no rate limit (the API's auth hook skips it); with `token` it takes that bearer only.
 * Registering it twice on one server is harmless (the second is skipped).
 */
export function metricsPlugin(engine: MetricsHolder, opts: MetricsPluginOptions = {}): ApiPlugin {
  const path = opts.path ?? METRICS_PATH;
  const token = opts.token;
  return (app) => {
    const metrics = metricsOf(engine);
    if (!metrics || app.hasRoute({ method: 'GET', url: path })) return;
    app.get(path, { config: { scope: 'public' } }, async (request: FastifyRequest, reply: FastifyReply) => {
      if (token !== undefined) checkMetricsToken(request, token);
      const text = await metrics.metrics();
      return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(text);
    });
  };
}

/** 401 unless the request carries the metrics bearer token (messages never echo what was sent). */
function checkMetricsToken(request: FastifyRequest, token: string): void {
  const given = bearerToken(request);
  if (given === null || !secretsEqual(given, token)) {
    throw new ApiError(401, 'unauthorized', 'the metrics token is required (Authorization: Bearer <token>)');
  }
}

const TRIGGER_ROUTES = new Map<string, TriggerOperation>([
  [`${endpoints.triggerSync.method} ${endpoints.triggerSync.path}`, 'sync'],
  [`${endpoints.triggerBackfill.method} ${endpoints.triggerBackfill.path}`, 'backfill'],
]);

/** An onResponse hook counting the trigger endpoints' answers by status code (401 and 429 included). */
export function triggerMetricsHook(engine: MetricsHolder): onResponseHookHandler {
  const metrics = metricsOf(engine);
  return (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const url = request.routeOptions.url;
    const operation = url === undefined ? undefined : TRIGGER_ROUTES.get(`${request.method} ${url}`);
    if (operation) metrics?.triggerAnswered(operation, reply.statusCode);
    done();
  };
}
