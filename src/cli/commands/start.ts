/** `syncrelay start`: the HTTP API, the dashboard, a worker and the reconciler in one process. */
import type { Command } from 'commander';
import { intInRange, seconds } from '../args.js';
import { cliLogger, describeBroker, describeDatabase, openSession } from '../session.js';
import { Shutdown } from '../signals.js';
import { workerPoolSize } from '../../worker/poolSize.js';
import { announceUrl, httpOptions, startHttp, type HttpOptions } from './api.js';

interface StartOptions extends HttpOptions {
  concurrency: number;
  grace: number;
}

export function registerStart(program: Command): void {
  httpOptions(
    program
      .command('start')
      .description('run the HTTP API, the dashboard, a worker and the reconciler in one process until SIGTERM / SIGINT')
      .option('--concurrency <n>', 'messages the worker handles at once', intInRange(1, 1000), 4)
      .option(
        '--grace <seconds>',
        'on shutdown, how long in-flight units may finish before they are abandoned',
        seconds,
        10,
      ),
  )
    .addHelpText(
      'after',
      `
\`start\` runs the worker and the reconciler, and serves the HTTP API (/api/v1) and the dashboard
(/) on --host:--port (default http://127.0.0.1:8080); it prints the URL. Sign in to the dashboard
with a token from \`syncrelay tokens create --org ORG --scopes admin\`.

With DATABASE_URL and REDIS_URL unset it runs on the embedded defaults: PGlite in ./.syncrelay
(or SYNCRELAY_DATA_DIR) and the in-process broker, all in this one process. Only one process may
open the embedded database, so create tokens before \`start\` (or share a PostgreSQL server).

The first SIGTERM / SIGINT stops gracefully: the server stops taking requests and finishes the
ones in flight, workers take no new work and let in-flight units finish (or abandon them, ending
their leases, after a grace period), the reconciler loop stops, connections close, exit status 0.
A second signal exits at once (130 / 143).`,
    )
    .action(async (opts: StartOptions) => start(opts));
}

async function start(opts: StartOptions): Promise<void> {
  const logger = cliLogger(true);
  const shutdown = new Shutdown(logger);
  const poolSize = workerPoolSize(opts.concurrency);
  const session = await openSession({ logger, longRunning: true, usesBroker: true, poolSize });
  try {
    if (shutdown.signal.aborted) return;
    const { engine, settings } = session;
    const server = await startHttp(session, opts);
    try {
      engine.startWorker({ concurrency: opts.concurrency, graceMs: opts.grace * 1000 });
      await engine.startReconciler();
      logger.info(
        {
          roles: ['api', 'dashboard', 'worker', 'reconciler'],
          url: server.url,
          concurrency: opts.concurrency,
          database: describeDatabase(settings),
          broker: describeBroker(settings),
          pid: process.pid,
        },
        'syncrelay started',
      );
      announceUrl(server);
      await shutdown.wait();
    } finally {
      await server.close();
    }
  } finally {
    await session.close();
  }
  logger.info('syncrelay stopped');
  logger.flush();
}
