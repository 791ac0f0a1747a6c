/** `syncrelay worker`: consumes tasks from the broker. */
import type { Command } from 'commander';
import { intInRange, seconds } from '../args.js';
import { runService } from '../service.js';
import { requireSharedInfrastructure } from '../session.js';
import { DEFAULT_WORKER_CONCURRENCY, workerPoolSize } from '../../worker/poolSize.js';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker (consumes tasks from Redis) until SIGTERM / SIGINT')
    .option(
      '--concurrency <n>',
      'messages handled at once (a run_sync_unit message carries up to SYNC_UNITS_PER_MESSAGE units)',
      intInRange(1, 1000),
      DEFAULT_WORKER_CONCURRENCY,
    )
    .option(
      '--grace <seconds>',
      'on shutdown, how long in-flight units may finish before they are abandoned',
      seconds,
      10,
    )
    .addHelpText(
      'after',
      `
Needs DATABASE_URL and REDIS_URL: a worker in its own process shares the database and the queue
with the reconciler (\`syncrelay reconciler\`). For one process on the embedded defaults use
\`syncrelay start\`.

The first SIGTERM / SIGINT stops gracefully (no new work; in-flight units finish or are
abandoned with their leases ended), exit status 0; a second signal exits at once (130 / 143).`,
    )
    .action(async (opts: { concurrency: number; grace: number }) => {
      await runService(
        'worker',
        {
          usesBroker: true,
          check: (s) => requireSharedInfrastructure(s, 'worker'),
          poolSize: workerPoolSize(opts.concurrency),
        },
        async ({ engine }) => {
          engine.startWorker({ concurrency: opts.concurrency, graceMs: opts.grace * 1000 });
          return { roles: ['worker'], concurrency: opts.concurrency };
        },
      );
    });
}
