/** `syncrelay start`: a worker and the reconciler in one process. */
import type { Command } from 'commander';
import { intInRange, seconds } from '../args.js';
import { runService } from '../service.js';

export function registerStart(program: Command): void {
  program
    .command('start')
    .description('run a worker and the reconciler in one process until SIGTERM / SIGINT')
    .option('--concurrency <n>', 'messages the worker handles at once', intInRange(1, 1000), 4)
    .option('--grace <seconds>', 'on shutdown, how long in-flight units may finish before they are abandoned', seconds, 10)
    .addHelpText(
      'after',
      `
This build's \`start\` runs the worker and the reconciler; the HTTP API and the dashboard are
not part of it. With DATABASE_URL and REDIS_URL unset it runs on the embedded defaults: PGlite
in ./.syncrelay (or SYNCRELAY_DATA_DIR) and the in-process broker, all in this one process.

The first SIGTERM / SIGINT stops gracefully: workers take no new work and let in-flight units
finish (or abandon them, ending their leases, after a grace period), the reconciler loop stops,
connections close, exit status 0. A second signal exits at once (130 / 143).`,
    )
    .action(async (opts: { concurrency: number; grace: number }) => {
      await runService('syncrelay', { usesBroker: true }, async ({ engine }) => {
        engine.startWorker({ concurrency: opts.concurrency, graceMs: opts.grace * 1000 });
        await engine.startReconciler();
        return { roles: ['worker', 'reconciler'], concurrency: opts.concurrency };
      });
    });
}
