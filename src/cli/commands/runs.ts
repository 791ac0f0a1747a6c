/** `syncrelay runs list|show`: sync runs, their units by status and their JobRun. */
import { Option, type Command } from 'commander';
import { isTerminalRun, RUN_STATUSES, UNIT_STATUSES, type RunStatus } from '../../domain/statuses.js';
import { VERIFY_COUNTS, type VerifyCounts } from '../../domain/verify.js';
import { NotFoundError } from '../../errors.js';
import { readRunView, type RunView } from '../../planning/runView.js';
import type { RunRow } from '../../store/rows.js';
import { listRuns } from '../../store/runs.js';
import type { Db } from '../../db/types.js';
import { intInRange, seconds, uuid } from '../args.js';
import {
  CliError,
  elapsedMs,
  EXIT_TIMEOUT,
  formatDuration,
  formatPairs,
  formatTable,
  isoOrDash,
  printJson,
  printLine,
  printTable,
} from '../output.js';
import { pause, Shutdown } from '../signals.js';
import { withSession } from '../session.js';

/** The run (of `orgId`, when given), its unit counts and its JobRun; NotFoundError otherwise. */
export async function loadRunView(db: Db, runId: string, orgId?: string): Promise<RunView> {
  const view = await readRunView(db, runId, orgId);
  if (!view) throw new NotFoundError('sync run', runId);
  return view;
}

export function registerRuns(program: Command): void {
  const runs = program.command('runs').description('list sync runs and show one');

  runs
    .command('list')
    .description('recent sync runs, newest first')
    .option('--org <org>', 'only this org')
    .addOption(new Option('--status <status>', 'only runs in this status').choices(RUN_STATUSES))
    .option('--limit <n>', 'at most this many', intInRange(1, 1000), 20)
    .option('--json', 'print JSON')
    .action(async (opts: { org?: string; status?: RunStatus; limit: number; json?: boolean }) => {
      const rows = await withSession({}, ({ engine }) =>
        listRuns(engine.db, { orgId: opts.org, status: opts.status, limit: opts.limit }),
      );
      if (opts.json) return printJson(rows);
      printTable(rows, [
        { header: 'id', value: (r) => r.id },
        { header: 'org', value: (r) => r.org_id },
        { header: 'integration', value: (r) => r.integration_id },
        { header: 'mode', value: (r) => r.mode },
        { header: 'status', value: (r) => r.status },
        {
          header: 'units',
          value: (r) => (isTerminalRun(r.status) ? `${r.completed_units}/${r.total_units}` : ''),
          align: 'right',
        },
        { header: 'failed', value: (r) => (isTerminalRun(r.status) ? r.failed_units : ''), align: 'right' },
        { header: 'created', value: (r) => isoOrDash(r.created_at) },
        { header: 'duration', value: (r) => formatDuration(elapsedMs(r.started_at, r.completed_at)) },
      ]);
    });

  runs
    .command('show')
    .description('a run, its unit counts by status and its JobRun')
    .argument('<id>', 'sync run id', uuid)
    .option('--org <org>', 'only if the run belongs to this org')
    .option('--wait <seconds>', 'poll until the run is terminal, at most this long', seconds)
    .option('--json', 'print {"run", "units", "job_run"}')
    .addHelpText(
      'after',
      `
With --wait, exits 0 once the run is terminal (success, partial_failed, failed or cancelled)
and ${EXIT_TIMEOUT} if it is still running when the time is up.`,
    )
    .action(async (id: string, opts: { org?: string; wait?: number; json?: boolean }) => {
      const { view, embedded } = await withSession({}, async ({ engine, settings, logger }) => {
        const shutdown = opts.wait === undefined ? null : new Shutdown(logger);
        const deadline = Date.now() + (opts.wait ?? 0) * 1000;
        let v = await loadRunView(engine.db, id, opts.org);
        while (!isTerminalRun(v.run.status) && Date.now() < deadline && !shutdown?.signal.aborted) {
          await pause(Math.min(250, deadline - Date.now()), shutdown?.signal);
          v = await loadRunView(engine.db, id, opts.org);
        }
        return { view: v, embedded: !settings.databaseUrl };
      });
      if (opts.json) printJson(view);
      else printLine(formatRunView(view));
      if (opts.wait !== undefined && !isTerminalRun(view.run.status)) {
        const hint = embedded
          ? ' (the embedded database only advances in a process that has it open, e.g. `syncrelay start`)'
          : '';
        throw new CliError(`run ${id} is still ${view.run.status} after ${opts.wait} s${hint}`, EXIT_TIMEOUT);
      }
    });
}

/** A verify run's counts on one line. */
function formatVerify(v: VerifyCounts): string {
  return VERIFY_COUNTS.map((k) => `${v[k]} ${k}`).join(' · ');
}

/** The text form of `runs show`. */
export function formatRunView({ run, units, job_run: job, verify }: RunView): string {
  const counts = UNIT_STATUSES.filter((s) => (units[s] ?? 0) > 0).map((status) => ({ status, n: units[status]! }));
  const total = counts.reduce((a, c) => a + c.n, 0);
  const runPairs = formatPairs([
    ['run', run.id],
    ['org', run.org_id],
    ['integration', run.integration_id],
    ['mode', run.mode],
    ['status', run.status],
    ['triggered by', run.triggered_by],
    ['window', windowOf(run)],
    [
      'units',
      `${total} total` +
        `${isTerminalRun(run.status) ? ` · ${run.completed_units} succeeded · ${run.failed_units} failed` : ''}`,
    ],
    ...(verify ? [['verify', formatVerify(verify)] as [string, string]] : []),
    ['created', isoOrDash(run.created_at)],
    ['started', isoOrDash(run.started_at)],
    ['completed', isoOrDash(run.completed_at)],
    ['duration', formatDuration(elapsedMs(run.started_at, run.completed_at))],
    ['error', run.error],
  ]);
  const unitTable = formatTable(
    counts,
    [
      { header: 'unit status', value: (c) => c.status },
      { header: 'units', value: (c) => c.n, align: 'right' },
    ],
    '  ',
  );
  const jobPairs = job
    ? formatPairs([
        ['job run', job.id],
        ['status', job.status],
        ['triggered by', job.triggered_by],
        ['duration', formatDuration(job.duration_ms)],
        ['error', job.error],
      ])
    : 'job run     -';
  return `${runPairs}\n\n${unitTable}\n\n${jobPairs}`;
}

function windowOf(run: RunRow): string {
  const since = run.result?.since;
  const before = run.result?.before;
  return typeof since === 'string' && typeof before === 'string' ? `[${since}, ${before})` : '-';
}
