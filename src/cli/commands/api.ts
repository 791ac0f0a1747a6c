/** `syncrelay api`: serves the HTTP API and the dashboard until SIGTERM / SIGINT. */
import type { Command } from 'commander';
import { API_DEFAULTS, startApiServer, type RunningApiServer } from '../../api/server.js';
import { dashboardPlugin } from '../../dashboard/index.js';
import { intInRange, list } from '../args.js';
import { printLine } from '../output.js';
import { cliLogger, describeBroker, describeDatabase, openSession, type Session } from '../session.js';
import { Shutdown } from '../signals.js';

/** What `api` and `start` take to serve HTTP. */
export interface HttpOptions {
  port: number;
  host: string;
  maxBackfillDays: number;
  rateLimit: number;
  trustProxy?: string[];
}

/** Adds --port, --host, --max-backfill-days, --rate-limit and --trust-proxy to a command. */
export function httpOptions(command: Command): Command {
  return command
    .option('--port <n>', 'port to listen on (0 picks a free one)', intInRange(0, 65535), 8080)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--max-backfill-days <n>',
      'longest backfill window accepted',
      intInRange(1, 36600),
      API_DEFAULTS.maxBackfillDays,
    )
    .option(
      '--rate-limit <n>',
      'requests per token per minute (failed authentications per client address: a tenth of it)',
      intInRange(1, 1_000_000),
      API_DEFAULTS.rateLimit.max,
    )
    .option(
      '--trust-proxy <addresses>',
      'take the client address from X-Forwarded-For when the request comes from these proxies (IPs or CIDRs)',
      list,
    );
}

/** Serves the API and the dashboard over the session's engine. */
export function startHttp(session: Session, opts: HttpOptions): Promise<RunningApiServer> {
  return startApiServer({
    engine: session.engine,
    host: opts.host,
    port: opts.port,
    maxBackfillDays: opts.maxBackfillDays,
    rateLimit: { max: opts.rateLimit, timeWindowMs: 60_000 },
    trustProxy: opts.trustProxy ?? false,
    plugins: [dashboardPlugin()],
  });
}

/** The line a person reads to find the server (stdout). */
export function announceUrl(server: RunningApiServer): void {
  printLine(`dashboard: ${server.url}/  ·  API: ${server.url}/api/v1  ·  OpenAPI: ${server.url}/openapi.json`);
}

export function registerApi(program: Command): void {
  httpOptions(
    program
      .command('api')
      .description(
        'serve the HTTP API (/api/v1, /openapi.json, /healthz, /readyz) and the dashboard (/) until SIGTERM / SIGINT',
      ),
  )
    .addHelpText(
      'after',
      `
Clients authenticate with "Authorization: Bearer <token>" (create one with
\`syncrelay tokens create --org ORG --scopes read,trigger\`); the dashboard at / asks for such a
token. Triggers only write the database: a worker and the reconciler (\`syncrelay worker\`,
\`syncrelay reconciler\`, or \`syncrelay start\`) sharing DATABASE_URL and REDIS_URL run what the
API plans.

The first SIGTERM / SIGINT stops taking requests, waits for in-flight ones and exits 0; a second
signal exits at once (130 / 143).`,
    )
    .action(async (opts: HttpOptions) => serveApi(opts));
}

async function serveApi(opts: HttpOptions): Promise<void> {
  const logger = cliLogger(true);
  const shutdown = new Shutdown(logger);
  const session = await openSession({ logger, longRunning: true, usesBroker: true });
  try {
    if (shutdown.signal.aborted) return;
    const server = await startHttp(session, opts);
    try {
      logger.info(
        {
          url: server.url,
          database: describeDatabase(session.settings),
          broker: describeBroker(session.settings),
          pid: process.pid,
        },
        'api started',
      );
      announceUrl(server);
      if (!session.settings.redisUrl || !session.settings.databaseUrl) {
        logger.warn(
          'no worker runs in this process: runs triggered here wait for `syncrelay start` ' +
            'or a worker sharing DATABASE_URL and REDIS_URL',
        );
      }
      await shutdown.wait();
    } finally {
      await server.close();
    }
  } finally {
    await session.close();
  }
  logger.info('api stopped');
  logger.flush();
}
