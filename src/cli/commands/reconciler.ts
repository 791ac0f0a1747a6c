/** `syncrelay reconciler`: the reconcile loop (expire → repair → materialize → relay → prune). */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { runService } from '../service.js';
import { requireSharedInfrastructure } from '../session.js';

export function registerReconciler(program: Command): void {
  program
    .command('reconciler')
    .description('run the reconciler loop (relays the outbox, expires leases, repairs runs) until SIGTERM / SIGINT')
    .option('--id <name>', 'name recorded with each pass in reconciler_passes', `${hostname()}:${process.pid}`)
    .addHelpText(
      'after',
      `
A full pass runs every SYNC_RECONCILE_INTERVAL_SECONDS and the relay runs at once on each outbox
NOTIFY. Several reconcilers may run at once. Needs DATABASE_URL and REDIS_URL; for one process on
the embedded defaults use \`syncrelay start\`. For a single pass use \`syncrelay reconcile --once\`.

The first SIGTERM / SIGINT finishes the pass in flight and exits 0; a second exits at once (130 / 143).`,
    )
    .action(async (opts: { id: string }) => {
      await runService(
        'reconciler',
        { usesBroker: true, check: (s) => requireSharedInfrastructure(s, 'reconciler') },
        async ({ engine }) => {
          await engine.startReconciler({ id: opts.id });
          return { roles: ['reconciler'], reconcilerId: opts.id };
        },
      );
    });
}
