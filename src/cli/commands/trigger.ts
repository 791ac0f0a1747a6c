/** `syncrelay trigger`: creates the JobRun and plans the run in one transaction. */
import { Option, type Command } from 'commander';
import { SYNC_MODES, type SyncMode } from '../../domain/statuses.js';
import { NotFoundError, RunConflictError, RunTooLargeError, TooManyLiveRunsError } from '../../errors.js';
import { getIntegration } from '../../store/integrations.js';
import { isoTime, list, uuid } from '../args.js';
import { CliError, printJson, printLine } from '../output.js';
import { withSession } from '../session.js';

interface TriggerOptions {
  integration: string;
  mode: SyncMode;
  since?: Date;
  before?: Date;
  datasets?: string[];
  force?: boolean;
  org?: string;
  json?: boolean;
}

/** A refused trigger as one line naming what to do about it in this command's terms. */
function refusal(err: unknown, mode: SyncMode): unknown {
  if (err instanceof RunConflictError) {
    return new CliError(`${err.message} (wait for it, cancel it, or add --force)`, undefined, { cause: err });
  }
  if (err instanceof RunTooLargeError) {
    const flags = mode === 'backfill' ? '--datasets, --since/--before' : '--datasets';
    return new CliError(`${err.message} (${flags})`, undefined, { cause: err });
  }
  if (err instanceof TooManyLiveRunsError) {
    return new CliError(`${err.message} (syncrelay runs list, syncrelay cancel RUN_ID)`, undefined, { cause: err });
  }
  return err;
}

export function registerTrigger(program: Command): void {
  program
    .command('trigger')
    .description('start a sync run of an integration (planned and committed; workers pick it up)')
    .requiredOption('--integration <id>', 'integration id (UUID)', uuid)
    .addOption(new Option('--mode <mode>', 'what to sync').choices(SYNC_MODES).makeOptionMandatory())
    .option('--since <iso>', 'backfill window start (inclusive), e.g. 2026-01-01T00:00:00Z', isoTime)
    .option('--before <iso>', 'backfill window end (exclusive)', isoTime)
    .option('--datasets <keys>', 'only these enabled datasets (comma-separated)', list)
    .option('--force', "start even if a run of this integration and mode hasn't finished")
    .option('--org <org>', "the integration's org (default: read from the integration)")
    .option('--json', 'print {"job_run_id", "sync_run_id", "units"}')
    .addHelpText(
      'after',
      `
Examples:
  syncrelay trigger --integration <id> --mode incremental
  syncrelay trigger --integration <id> --mode backfill --since 2026-01-01 --before 2026-04-01 --json
  syncrelay trigger --integration <id> --mode verify

A backfill needs --since and --before (since < before); other modes take no window. A verify
compares the provider's ids and update times with the store, for the datasets whose provider
declares \`verifies\` (with none enabled it is refused, naming the provider). Invalid input
writes nothing, nor does a run of more than SYNC_RUN_MAX_UNITS units, nor a trigger of an
integration that has SYNC_INTEGRATION_MAX_LIVE_RUNS unfinished runs (--force or not). The
trigger commits whether or not the broker is reachable: the reconciler relays the run's
dispatch when it can.`,
    )
    .action(async (opts: TriggerOptions) => {
      const triggered = await withSession({}, async ({ engine }) => {
        const integration = await getIntegration(engine.db, opts.integration, { orgId: opts.org });
        if (!integration) throw new NotFoundError('integration', opts.integration);
        try {
          return await engine.trigger({
            orgId: integration.org_id,
            integrationId: integration.id,
            mode: opts.mode,
            triggeredBy: opts.mode === 'backfill' ? 'backfill' : 'manual',
            since: opts.since,
            before: opts.before,
            datasets: opts.datasets,
            force: opts.force ?? false,
          });
        } catch (err) {
          throw refusal(err, opts.mode);
        }
      });
      if (opts.json) {
        return printJson({ job_run_id: triggered.jobRunId, sync_run_id: triggered.syncRunId, units: triggered.units });
      }
      printLine(
        `triggered ${opts.mode} run ${triggered.syncRunId} (${triggered.units} units, job run ${triggered.jobRunId})`,
      );
      printLine(`follow it with: syncrelay runs show ${triggered.syncRunId} --wait 300`);
    });
}
