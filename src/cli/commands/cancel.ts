/** `syncrelay cancel ID`: cancels a run and its non-terminal units. */
import type { Command } from 'commander';
import { getRun } from '../../store/runs.js';
import { uuid } from '../args.js';
import { printJson, printLine } from '../output.js';
import { withSession } from '../session.js';

export function registerCancel(program: Command): void {
  program
    .command('cancel')
    .description('cancel a sync run: the run and its unfinished units become cancelled')
    .argument('<id>', 'sync run id', uuid)
    .option('--org <org>', 'only if the run belongs to this org')
    .option('--json', 'print {"sync_run_id", "outcome", "status"}')
    .addHelpText(
      'after',
      '\nWorkers holding a unit of the run are fenced out: their writes and terminal updates are refused.\n' +
        'Units that already succeeded still reach post-sync. Cancelling a finished run changes nothing.',
    )
    .action(async (id: string, opts: { org?: string; json?: boolean }) => {
      const { outcome, status } = await withSession({}, async ({ engine }) => {
        const result = await engine.cancel(id, opts.org);
        return { outcome: result, status: (await getRun(engine.db, id))?.status ?? 'unknown' };
      });
      if (opts.json) return printJson({ sync_run_id: id, outcome, status });
      printLine(
        outcome === 'cancelled' ? `cancelled run ${id}` : `run ${id} had already finished (${status}); nothing changed`,
      );
    });
}
