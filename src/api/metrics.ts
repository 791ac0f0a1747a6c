/** The HTTP side of observability: `/metrics` as an API plugin and trigger answers counted per status. */
import type { FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import { EngineMetrics, type TriggerOperation } from '../observability/metrics.js';
import { endpoints } from './contracts/endpoints.js';
import type { ApiPlugin } from './server.js';

export const METRICS_PATH = '/metrics';

type MetricsHolder = EngineMetrics | { ctx: { metrics?: EngineMetrics } } | { metrics?: EngineMetrics };

function metricsOf(holder: MetricsHolder): EngineMetrics | undefined {
  if (holder instanceof EngineMetrics) return holder;
  return 'ctx' in holder ? holder.ctx.metrics : holder.metrics;
}

/**
 * Serves the engine's registry at `GET /metrics` (public: no token, no rate limit) in the
 * Prometheus text format. Registering it twice on one server is harmless (the second is skipped).
 */
export function metricsPlugin(engine: MetricsHolder, opts: { path?: string } = {}): ApiPlugin {
  const path = opts.path ?? METRICS_PATH;
  return (app) => {
    const metrics = metricsOf(engine);
    if (!metrics || app.hasRoute({ method: 'GET', url: path })) return;
    app.get(path, { config: { scope: 'public' } }, async (_request: FastifyRequest, reply: FastifyReply) => {
      const text = await metrics.metrics();
      return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(text);
    });
  };
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
