/** `syncrelay reconcile --once`: one reconciler pass, then its counters. */
import type { Command } from 'commander';
import { ValidationError } from '../../errors.js';
import type { PassCounters } from '../../reconciler/pass.js';
import { formatTable, printJson, printLine } from '../output.js';
import { withSession } from '../session.js';

export function registerReconcile(program: Command): void {
  program
    .command('reconcile')
    .description('run one reconciler pass and print its counters')
    .option('--once', 'run exactly one pass (required; `syncrelay reconciler` runs the loop)')
    .option('--id <name>', 'name recorded with the pass in reconciler_passes', 'cli')
    .option('--json', 'print the counters as JSON')
    .addHelpText(
      'after',
      `
Needs REDIS_URL: tasks the pass publishes must outlive this process (with the in-process broker
they would be dropped on exit, and a relayed post_sync is never re-armed).`,
    )
    .action(async (opts: { once?: boolean; id: string; json?: boolean }) => {
      if (!opts.once) throw new ValidationError('--once', 'is required (for the loop run `syncrelay reconciler`)');
      const check = (s: { redisUrl: string | undefined }) => {
        if (!s.redisUrl) {
          throw new ValidationError(
            'REDIS_URL',
            'is required by `reconcile --once`: with the in-process broker the tasks a pass publishes are lost ' +
              'when the command exits; run `syncrelay start` instead',
          );
        }
      };
      const counters = await withSession({ usesBroker: true, check }, ({ engine }) => engine.reconcileOnce(opts.id));
      if (opts.json) return printJson(counters);
      const rows = Object.entries(counters as PassCounters & Record<string, number>).map(([name, value]) => ({
        name,
        value,
      }));
      printLine(
        formatTable(rows, [
          { header: 'counter', value: (r) => r.name },
          { header: 'value', value: (r) => r.value, align: 'right' },
        ]),
      );
    });
}
