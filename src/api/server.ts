/**
 * The HTTP API server: Fastify with security headers, bearer auth with request budgets (per token,
 * and per client address for failed authentications), one error shape and the endpoints of the
 * contract table. `buildServer` returns an app that is not listening yet; `startApiServer` also
 * listens. Other surfaces (dashboard, metrics) join through `plugins` and `onResponse`.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type onResponseHookHandler,
} from 'fastify';
import type { Logger } from 'pino';
import { metricsPlugin, triggerMetricsHook } from './metrics.js';
import { requestTraceContext } from '../observability/trace.js';
import type { EngineContext } from '../context.js';
import { authHook } from './auth.js';
import { handleError } from './errors.js';
import type { ApiPlugin } from './plugin.js';
import { buildOpenApiDocument } from './openapi.js';
import { installRequestLimits, type RateLimitOptions, type RequestLimits } from './rateLimit.js';
import type { RouteDeps } from './routes/deps.js';
import { notFoundHandler, PreRoutingErrors, RouteTable } from './routing.js';
import { historyRoutes } from './routes/history.js';
import { integrationRoutes } from './routes/integrations.js';
import { operationsRoutes } from './routes/operations.js';
import { runRoutes } from './routes/runs.js';
import { scheduleRoutes } from './routes/schedules.js';
import { triggerRoutes } from './routes/triggers.js';
import { webhookRoutes } from './routes/webhooks.js';
import { webhookDeliveryRoutes } from './routes/webhookDeliveries.js';
import { activityRoutes } from './routes/activity.js';
import { rateBudgetRoutes } from './routes/rateBudgets.js';
import { dataGlanceRoutes } from './routes/dataGlance.js';
import { freshnessRoutes } from './routes/freshness.js';

export type { ApiPlugin } from './plugin.js';

export interface ApiServerOptions {
  /** The engine whose database, broker, registry and clock the API uses. */
  engine: { ctx: EngineContext };
  /** Longest backfill window accepted, in days. @default 366 */
  maxBackfillDays?: number;
  /** Largest request body, in bytes (larger bodies answer 413). @default 65536 */
  bodyLimit?: number;
  /**
   * Requests per token per window, and failed authentications per client address (checked before
   * the token is looked up); in Redis with REDIS_URL. `false` disables. @default 600 per 60 s (60 failures)
   */
  rateLimit?: RateLimitOptions | false;
  /** How long each /readyz check may take, in ms. @default 2000 */
  readinessTimeoutMs?: number;
  /** @default the engine's logger, child `{ component: 'api' }` */
  logger?: Logger;
  /** Extra routes and hooks, registered after the API's own routes. */
  plugins?: readonly ApiPlugin[];
  /** Called when a response has been sent (e.g. request metrics). */
  onResponse?: onResponseHookHandler;
  /**
   * The trace context to store with a triggered run. @default the active span's context, else the
   * request's W3C `traceparent` / `tracestate` headers (`() => null` stores none)
   */
  traceContext?: (request: FastifyRequest) => Record<string, string> | null;
  /**
   * Serve the engine's Prometheus metrics at `GET /metrics` (no API token) and count trigger answers
   * by status code. @default true (when the engine has metrics)
   */
  metrics?: boolean;
  /** The bearer token `/metrics` requires; `null` leaves it open. @default SYNCRELAY_METRICS_TOKEN */
  metricsToken?: string | null;
  /** @fastify/helmet options. @default helmet's defaults */
  helmet?: FastifyHelmetOptions;
  /** Trust X-Forwarded-* from these proxies (Fastify's `trustProxy`). @default false */
  trustProxy?: boolean | string | string[];
}

export const API_DEFAULTS = {
  maxBackfillDays: 366,
  bodyLimit: 64 * 1024,
  rateLimit: { max: 600, timeWindowMs: 60_000 },
  readinessTimeoutMs: 2000,
} as const;

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,64}$/;

/** Keeps a caller's `x-request-id` when it is short and plain, otherwise makes one. */
function requestId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : randomUUID();
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Builds the server (routes, hooks, plugins) without listening. */
export async function buildServer(opts: ApiServerOptions): Promise<FastifyInstance> {
  const ctx = opts.engine.ctx;
  const refused = new PreRoutingErrors();
  const app = Fastify({
    loggerInstance: opts.logger ?? ctx.logger.child({ component: 'api' }),
    bodyLimit: opts.bodyLimit ?? API_DEFAULTS.bodyLimit,
    genReqId: requestId,
    trustProxy: opts.trustProxy ?? false,
    return503OnClosing: true,
    routerOptions: { maxParamLength: 1000 },
    frameworkErrors: refused.frameworkErrors,
  }) as unknown as FastifyInstance;

  const deps: RouteDeps = {
    ctx,
    maxBackfillDays: opts.maxBackfillDays ?? API_DEFAULTS.maxBackfillDays,
    readinessTimeoutMs: opts.readinessTimeoutMs ?? API_DEFAULTS.readinessTimeoutMs,
    traceContext: opts.traceContext ?? requestTraceContext,
    startedAtMs: Date.now(),
  };

  app.decorateRequest('principal', null);
  jsonBodiesOnly(app);
  const routes = new RouteTable();
  routes.install(app);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(notFoundHandler(routes));
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('x-request-id', request.id);
  });
  await app.register(helmet, { global: true, ...opts.helmet });
  refused.install(app);
  const limits = await installRateLimit(app, ctx, opts.rateLimit ?? API_DEFAULTS.rateLimit);
  app.addHook('onRequest', authHook({ db: ctx.db, clock: ctx.clock, limits }));
  if (opts.onResponse) app.addHook('onResponse', opts.onResponse);
  const metrics = opts.metrics === false ? undefined : ctx.metrics;
  if (metrics) app.addHook('onResponse', triggerMetricsHook(metrics));

  integrationRoutes(app, deps);
  triggerRoutes(app, deps);
  runRoutes(app, deps);
  historyRoutes(app, deps);
  operationsRoutes(app, deps);
  scheduleRoutes(app, deps);
  webhookRoutes(app, deps);
  webhookDeliveryRoutes(app, deps);
  activityRoutes(app, deps);
  rateBudgetRoutes(app, deps);
  freshnessRoutes(app, deps);
  dataGlanceRoutes(app, deps);
  openApiRoutes(app);

  const metricsToken = opts.metricsToken === undefined ? ctx.settings.metricsToken : (opts.metricsToken ?? undefined);
  const plugins = metrics
    ? [metricsPlugin(metrics, { token: metricsToken }), ...(opts.plugins ?? [])]
    : (opts.plugins ?? []);
  for (const plugin of plugins) await app.register(async (child) => plugin(child, deps));
  return app;
}

/**
 * Bodies are JSON only: any other content type (text/plain included) is a 415. JSON is parsed as
 * usual (prototype-poisoning keys refused), except that an empty body with a JSON content type
 * reads as no body: clients often send the header on a bodiless POST.
 */
function jsonBodiesOnly(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    return parse(request, text, done);
  });
}

/** The request budgets the auth hook applies (public routes are exempt); null when disabled. */
async function installRateLimit(
  app: FastifyInstance,
  ctx: EngineContext,
  limit: ApiServerOptions['rateLimit'],
): Promise<RequestLimits | null> {
  if (limit === false || limit === undefined) return null;
  return installRequestLimits(app, {
    ...limit,
    redisUrl: limit.redisUrl === undefined ? ctx.settings.redisUrl : limit.redisUrl,
    redisTls: limit.redisTls ?? { ca: ctx.settings.redisTlsCa, servername: ctx.settings.redisTlsServername },
    keyPrefix: limit.keyPrefix ?? `${ctx.settings.queuePrefix}:rate-limit:`,
  });
}

function openApiRoutes(app: FastifyInstance): void {
  const document = buildOpenApiDocument({ version: packageVersion() });
  for (const url of ['/api/v1/openapi.json', '/openapi.json']) {
    app.get(url, { config: { scope: 'public' } }, async () => document);
  }
}

export interface RunningApiServer {
  app: FastifyInstance;
  /** e.g. http://127.0.0.1:8080 */
  url: string;
  /** Stops accepting requests and waits for in-flight ones; safe twice. */
  close(): Promise<void>;
}

/** Builds the server and listens on `host:port` (port 0 picks a free one). */
export async function startApiServer(
  opts: ApiServerOptions & { host?: string; port?: number },
): Promise<RunningApiServer> {
  const app = await buildServer(opts);
  try {
    await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 8080 });
  } catch (err) {
    await app.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (opts.port ?? 8080);
  const host = opts.host ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let closing: Promise<void> | null = null;
  return { app, url, close: () => (closing ??= app.close().then(() => undefined)) };
}
