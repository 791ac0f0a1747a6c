/** `syncrelay schedules create|list|enable|disable|delete|tick`: cron schedules of integrations. */
import type { Command } from 'commander';
import { validateOrg } from '../../api/tokens.js';
import { runSchedulerTick } from '../../planning/scheduler.js';
import { createSchedule, deleteSchedule, updateSchedule } from '../../planning/schedules.js';
import { listSchedules, type ScheduleRow } from '../../store/schedules.js';
import { uuid } from '../args.js';
import { isoOrDash, printable, printJson, printLine, printTable } from '../output.js';
import { withSession } from '../session.js';

interface CreateOptions {
  org: string;
  integration: string;
  cron: string;
  timezone: string;
  mode: string;
  disabled?: boolean;
  json?: boolean;
}

function present(s: ScheduleRow) {
  return {
    id: s.id,
    org_id: s.org_id,
    integration_id: s.integration_id,
    cron: s.cron,
    timezone: s.timezone,
    mode: s.mode,
    enabled: s.enabled,
    next_run_at: s.next_run_at,
    last_run_at: s.last_run_at,
    last_outcome: s.last_outcome,
    last_error: s.last_error,
    last_job_run_id: s.last_job_run_id,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

function describe(s: ScheduleRow): string {
  const next = s.enabled ? `next run ${isoOrDash(s.next_run_at)}` : 'disabled';
  const at = `"${printable(s.cron)}" (${printable(s.timezone)})`;
  return `schedule ${s.id}: ${s.mode} of integration ${s.integration_id} at ${at}; ${next}`;
}

export function registerSchedules(program: Command): void {
  const schedules = program.command('schedules').description('create, list, enable, disable and delete cron schedules');

  schedules
    .command('create')
    .description('schedule runs of an integration with a cron expression')
    .requiredOption('--org <org>', 'the org the integration belongs to')
    .requiredOption('--integration <id>', 'the integration id (UUID)', uuid)
    .requiredOption('--cron <expr>', 'five fields (minute hour day-of-month month day-of-week) or @hourly, @daily …')
    .option('--timezone <iana>', 'time zone the expression is read in', 'UTC')
    .option('--mode <mode>', 'incremental, full_resync or verify', 'incremental')
    .option('--disabled', 'create it disabled')
    .option('--json', 'print the schedule as JSON')
    .addHelpText(
      'after',
      `
Each slot creates a JobRun (triggered_by schedule) and plans the run; the reconciler's scheduler
fires it (syncrelay start or syncrelay reconciler). A slot that comes while a run of the same mode
has not finished is skipped; after downtime a schedule fires once, not once per missed slot.

Example:
  syncrelay schedules create --org acme --integration <id> --cron "0 9 * * 1-5" --timezone Europe/Berlin`,
    )
    .action(async (opts: CreateOptions) => {
      validateOrg(opts.org);
      const row = await withSession({}, ({ engine }) =>
        createSchedule(engine.db, engine.ctx.clock, {
          orgId: opts.org,
          integrationId: opts.integration,
          cron: opts.cron,
          timezone: opts.timezone,
          mode: opts.mode,
          enabled: !opts.disabled,
        }),
      );
      if (opts.json) return printJson(present(row));
      printLine(`created ${describe(row)}`);
    });

  schedules
    .command('list')
    .description("list schedules (an org's, or every org's)")
    .option('--org <org>', 'only this org')
    .option('--json', 'print the schedules as JSON')
    .action(async (opts: { org?: string; json?: boolean }) => {
      if (opts.org !== undefined) validateOrg(opts.org);
      const rows = await withSession({}, ({ engine }) => listSchedules(engine.db, opts.org ?? null));
      if (opts.json) return printJson(rows.map(present));
      printTable(rows, [
        { header: 'ID', value: (s) => s.id },
        { header: 'ORG', value: (s) => s.org_id },
        { header: 'INTEGRATION', value: (s) => s.integration_id },
        { header: 'CRON', value: (s) => s.cron },
        { header: 'TIMEZONE', value: (s) => s.timezone },
        { header: 'MODE', value: (s) => s.mode },
        { header: 'ENABLED', value: (s) => (s.enabled ? 'yes' : 'no') },
        { header: 'NEXT RUN', value: (s) => isoOrDash(s.next_run_at) },
        { header: 'LAST', value: (s) => (s.last_outcome ? `${s.last_outcome} ${isoOrDash(s.last_run_at)}` : '-') },
      ]);
    });

  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    schedules
      .command(name)
      .description(
        enabled ? 'enable a schedule: it fires from the next slot after now' : 'disable a schedule: it no longer fires',
      )
      .argument('<id>', 'the schedule id (UUID, from `schedules list`)', uuid)
      .option('--org <org>', 'only if the schedule belongs to this org')
      .option('--json', 'print the schedule as JSON')
      .action(async (id: string, opts: { org?: string; json?: boolean }) => {
        const row = await withSession({}, ({ engine }) =>
          updateSchedule(engine.db, engine.ctx.clock, id, opts.org ?? null, { enabled }),
        );
        if (opts.json) return printJson(present(row));
        printLine(`${enabled ? 'enabled' : 'disabled'} ${describe(row)}`);
      });
  }

  schedules
    .command('delete')
    .description('delete a schedule (the JobRuns it started stay)')
    .argument('<id>', 'the schedule id (UUID, from `schedules list`)', uuid)
    .option('--org <org>', 'only if the schedule belongs to this org')
    .option('--json', 'print the deleted schedule as JSON')
    .action(async (id: string, opts: { org?: string; json?: boolean }) => {
      const row = await withSession({}, ({ engine }) => deleteSchedule(engine.db, id, opts.org ?? null));
      if (opts.json) return printJson(present(row));
      printLine(`deleted schedule ${row.id}`);
    });

  schedules
    .command('tick')
    .description('fire the schedules that are due now, once (what the running scheduler does)')
    .option('--json', 'print what fired, was skipped or failed as JSON')
    .action(async (opts: { json?: boolean }) => {
      const tick = await withSession({}, ({ engine }) => runSchedulerTick(engine.ctx, engine.ctx.clock.now()));
      if (opts.json) return printJson(tick);
      printLine(
        `fired ${tick.fired.length}, skipped ${tick.skipped.length}, failed ${tick.failed.length + tick.errors.length}`,
      );
      for (const s of tick.skipped) printLine(`  skipped schedule ${s.scheduleId}: ${printable(s.reason)}`);
      for (const s of tick.failed) printLine(`  failed schedule ${s.scheduleId}: ${printable(s.reason)}`);
    });
}
