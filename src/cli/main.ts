#!/usr/bin/env node
/**
 * The `syncrelay` command. Output that is data goes to stdout (text or --json); logs (pino JSON)
 * and progress go to stderr; any failure ends with ONE line `syncrelay: <reason>` on stderr and a
 * non-zero exit status.
 */
import { Command } from 'commander';
import { registerApi } from './commands/api.js';
import { registerBench } from './commands/bench.js';
import { registerBudgets } from './commands/budgets.js';
import { registerCancel } from './commands/cancel.js';
import { registerChaos } from './commands/chaos.js';
import { registerCredentials } from './commands/credentials.js';
import { registerDemo } from './commands/demo.js';
import { registerEmulate } from './commands/emulate.js';
import { registerIntegrations } from './commands/integrations.js';
import { registerMigrate } from './commands/migrate.js';
import { registerReconcile } from './commands/reconcile.js';
import { registerReconciler } from './commands/reconciler.js';
import { registerRuns } from './commands/runs.js';
import { registerStatus } from './commands/status.js';
import { registerSchedules } from './commands/schedules.js';
import { registerStart } from './commands/start.js';
import { registerTokens } from './commands/tokens.js';
import { registerTrigger } from './commands/trigger.js';
import { registerWorker } from './commands/worker.js';
import { registerWebhooks } from './commands/webhooks.js';
import { CliError, EXIT_FAILURE, errorLine, oneLine, printableLines } from './output.js';

function buildProgram(): Command {
  const program = new Command('syncrelay')
    .description(
      'durable sync engine: outbox-dispatched units under claim + lease, reconciled so no committed run is stranded',
    )
    .showHelpAfterError(false)
    .configureOutput({
      outputError: (str, write) => write(`syncrelay: ${oneLine(str.replace(/^error:\s*/, ''))}\n`),
    })
    .addHelpText(
      'after',
      `
Settings come from the environment and are validated at start (a bad value stops the command,
naming the setting): DATABASE_URL (unset: embedded PGlite in ./.syncrelay or SYNCRELAY_DATA_DIR),
REDIS_URL (unset: in-process broker), the SYNC_* settings, SYNCRELAY_QUEUE_PREFIX and
SYNCRELAY_LOG_LEVEL (default: warn for one-shot commands, info for start/worker/reconciler).

Try it: syncrelay demo`,
    );
  registerDemo(program);
  registerMigrate(program);
  registerStart(program);
  registerWorker(program);
  registerReconciler(program);
  registerReconcile(program);
  registerIntegrations(program);
  registerCredentials(program);
  registerWebhooks(program);
  registerBudgets(program);
  registerTrigger(program);
  registerRuns(program);
  registerStatus(program);
  registerCancel(program);
  registerApi(program);
  registerTokens(program);
  registerChaos(program);
  registerSchedules(program);
  registerBench(program);
  registerEmulate(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (err) {
    process.stderr.write(`${errorLine(err)}\n`);
    if (process.env.SYNCRELAY_LOG_LEVEL === 'debug' || process.env.SYNCRELAY_LOG_LEVEL === 'trace') {
      process.stderr.write(`${printableLines(err instanceof Error ? (err.stack ?? err.message) : String(err))}\n`);
    }
    return err instanceof CliError ? err.exitCode : EXIT_FAILURE;
  }
}

process.exit(await main(process.argv));
