/**
 * `syncrelay demo`: the whole engine in one process on a fresh machine — a demo org and a
 * synthetic Linear integration, a worker and the reconciler, a backfill with a progress bar, and
 * a summary once the run is terminal. `--provider github|linear|jira` syncs that provider's
 * emulator, started in this process, instead.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { resolve } from 'node:path';
import { isTerminalRun } from '../../domain/statuses.js';
import { DAY_MS } from '../../domain/windows.js';
import { getIntegration } from '../../store/integrations.js';
import { getJobRunForRun } from '../../store/jobRuns.js';
import { intInRange, seconds } from '../args.js';
import { CliError, elapsedMs, note, printJson, printLine } from '../output.js';
import { cliLogger, describeBroker, describeDatabase, openSession, resolveSettings, type Session } from '../session.js';
import { Shutdown } from '../signals.js';
import { loadRunView } from './runs.js';
import { followRun, ProgressView } from '../demo/progress.js';
import {
  awaitPostSync,
  EMULATED_PROVIDERS,
  failuresByCategory,
  formatSummary,
  itemsWritten,
  outboxState,
  unitTotals,
  type DemoSummary,
  type EmulatedProvider,
} from '../demo/report.js';
import { cancelOrphanedRuns, DEMO_CONCURRENCY, DEMO_ORG, demoOverrides, ensureDemoIntegration } from '../demo/setup.js';
import {
  normalizedRows,
  recreateDemoIntegration,
  workItemMetricsRows,
  type DemoAuth,
  type EmulatorDemo,
  type RunningEmulator,
} from '../demo/emulated.js';
import { GITHUB_DEMO } from '../demo/github.js';
import { JIRA_DEMO } from '../demo/jira.js';
import { LINEAR_DEMO } from '../demo/linear.js';

type DemoProvider = 'synthetic' | EmulatedProvider;

interface DemoOptions {
  keep?: boolean;
  days?: number;
  timeout: number;
  json?: boolean;
  provider: DemoProvider;
  auth: DemoAuth;
}

const EMULATOR_DEMOS: Record<EmulatedProvider, EmulatorDemo> = {
  github: GITHUB_DEMO,
  linear: LINEAR_DEMO,
  jira: JIRA_DEMO,
};

/** The synthetic demo's backfill window without --days. */
const SYNTHETIC_DAYS = 90;

/** The emulator a run of the demo syncs, once started. */
interface Emulated {
  demo: EmulatorDemo;
  emu: RunningEmulator;
}

function demoProvider(value: string): DemoProvider {
  if (value === 'synthetic' || (EMULATED_PROVIDERS as readonly string[]).includes(value)) return value as DemoProvider;
  throw new InvalidArgumentError(`expected one of synthetic, ${EMULATED_PROVIDERS.join(', ')}`);
}

function demoAuth(value: string): DemoAuth {
  if (value === 'token' || value === 'app') return value;
  throw new InvalidArgumentError('expected token or app');
}

/** `--auth app` only where the provider's demo offers it (GitHub). */
function checkAuth(opts: DemoOptions): void {
  if (opts.auth === 'token') return;
  const offers = opts.provider === 'synthetic' ? [] : (EMULATOR_DEMOS[opts.provider].auths ?? []);
  if (!offers.includes(opts.auth)) throw new CliError(`--auth ${opts.auth} is for --provider github`);
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('run the engine end to end: a synthetic Linear backfill with a progress bar and a summary')
    .option(
      '--days <n>',
      'length of the backfill window in days (default 90; 31 with --provider github, linear or jira)',
      intInRange(1, 3660),
    )
    .option(
      '--provider <name>',
      "synthetic, or github, linear or jira: sync that provider's emulator started in this process",
      demoProvider,
      'synthetic',
    )
    .option(
      '--auth <how>',
      "token, or app (with --provider github): sign in as the emulator's GitHub App installation",
      demoAuth,
      'token',
    )
    .option('--keep', 'keep the worker and reconciler running after the summary, until SIGTERM / SIGINT')
    .option('--timeout <seconds>', 'give up (exit 1) if the run is not terminal by then', seconds, 120)
    .option('--json', 'print the summary as JSON instead of a table')
    .addHelpText(
      'after',
      `
With DATABASE_URL and REDIS_URL unset everything runs in this process: PGlite in ./.syncrelay
(or SYNCRELAY_DATA_DIR) and the in-process broker. It creates (or reuses) the org "demo" with a
synthetic integration "Demo Linear" (3 teams; teams, members, work-items, work-item-comments;
a few failures and rate limits), starts a worker (concurrency ${DEMO_CONCURRENCY}) and the reconciler,
triggers a backfill (forced, so a rerun works), shows progress on stderr and prints a summary
on stdout. Exit status 0 once the run is terminal, whatever its status.

Unless set in the environment, the demo shortens: SYNC_RECONCILE_INTERVAL_SECONDS=1,
SYNC_DISPATCH_REDISPATCH_COUNTDOWN=1, SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS=1,
SYNC_UNIT_DISPATCH_STALE_SECONDS=30, SYNC_UNIT_RUNNING_LEASE_SECONDS=30. It always runs with
SYNCRELAY_ALLOW_FAULT_INJECTION=true: its integration's failures and rate limits are fault knobs;
and with SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS=true: its emulators listen on http://127.0.0.1.

With --provider github it starts the GitHub REST emulator in this process on 127.0.0.1 (a free
port; 3 repositories, 30 days of issues, pull requests, comments, reviews and commits), makes the
integration "Demo GitHub" read it with the emulator's local token as its credential (an earlier
one is deleted with its data), backfills it, and adds the rows of each normalized table and the
work-item-metrics rows to the summary. No GitHub token is needed. With --auth app the integration
signs in as the emulator's GitHub App installation instead: the App's private key (made afresh by
the emulator) is the credential, traded for short-lived installation tokens.

--provider linear does the same with the Linear GraphQL emulator (2 teams, 120 issues over 30
days; every Linear dataset) as the integration "Demo Linear (emulator)", read with the
emulator's local personal API key; --provider jira with the Jira Cloud REST emulator (2 projects,
120 issues over 30 days; projects, members, sprints, work items, comments and history) as "Demo
Jira", read with its local email:api_token. No Linear or Jira credential is needed.`,
    )
    .action(async (opts: DemoOptions) => {
      checkAuth(opts);
      const base = resolveSettings();
      const logger = cliLogger(false);
      const shutdown = new Shutdown(logger);
      const session = await openSession({ overrides: demoOverrides(base), usesBroker: true, logger, poolSize: 10 });
      let emulated: Emulated | null = null;
      try {
        if (opts.provider !== 'synthetic') {
          const demo = EMULATOR_DEMOS[opts.provider];
          emulated = { demo, emu: await demo.start(opts.auth) };
        }
        const summary = await runDemo(session, opts, shutdown, emulated);
        if (opts.json) printJson(summary);
        else printLine(formatSummary(summary, lookAgain(session, summary.run.id)));
        if (opts.keep && !shutdown.signal.aborted) {
          note(`\nworker and reconciler keep running (pid ${process.pid}); press Ctrl-C or send SIGTERM to stop`);
          await shutdown.wait();
          note('stopping: finishing in-flight work…');
        }
      } finally {
        await session.close();
        await emulated?.emu.close();
      }
    });
}

/** The integration the demo syncs (its notes on stderr). */
async function demoTarget(session: Session, emulated: Emulated | null): Promise<{ id: string }> {
  const { engine, settings } = session;
  // With the embedded database, runs left unfinished belong to an earlier demo that was killed.
  const cancelOrphans = (id: string) => (settings.databaseUrl ? Promise.resolve([]) : cancelOrphanedRuns(engine, id));
  if (emulated) {
    const { demo, emu } = emulated;
    const made = await recreateDemoIntegration(engine, demo, emu, cancelOrphans);
    note(`  ${demo.label} emulator on ${emu.url} (in this process)`);
    if (made.replaced) note(`  deleted the earlier "${demo.integrationName}" integration and its synced data`);
    note(`  created integration "${demo.integrationName}" ${made.id} in org "${DEMO_ORG}"`);
    return { id: made.id };
  }
  const integration = await ensureDemoIntegration(engine);
  note(
    `  ${integration.created ? 'created' : 'reusing'} integration "Demo Linear" ${integration.id} in org "${DEMO_ORG}"`,
  );
  const orphans = await cancelOrphans(integration.id);
  if (orphans.length > 0) note(`  cancelled ${orphans.length} unfinished run(s) an earlier demo left behind`);
  return { id: integration.id };
}

async function runDemo(
  session: Session,
  opts: DemoOptions,
  shutdown: Shutdown,
  emulated: Emulated | null,
): Promise<DemoSummary> {
  const { engine, settings } = session;
  const days = opts.days ?? emulated?.demo.defaultDays ?? SYNTHETIC_DAYS;
  if (shutdown.signal.aborted) throw interrupted(shutdown, ' before it started');
  note(`syncrelay demo\n  database  ${describeDatabase(settings)}\n  broker    ${describeBroker(settings)}`);
  const integration = await demoTarget(session, emulated);
  engine.startWorker({ concurrency: DEMO_CONCURRENCY });
  await engine.startReconciler({ id: 'demo' });
  // The next whole second: an emulator's data (timestamps to the millisecond) ends before it.
  const before = new Date(Math.ceil(Date.now() / 1000) * 1000);
  const since = new Date(before.getTime() - days * DAY_MS);
  const t = await engine.trigger({
    orgId: DEMO_ORG,
    integrationId: integration.id,
    mode: 'backfill',
    triggeredBy: 'backfill',
    since,
    before,
    force: true,
  });
  note(`  triggered a ${days}-day backfill: run ${t.syncRunId}, ${t.units} units\n`);

  const last = await followRun(engine.db, t.syncRunId, {
    view: new ProgressView(),
    signal: shutdown.signal,
    timeoutMs: opts.timeout * 1000,
  });
  if (shutdown.signal.aborted) throw interrupted(shutdown, `; run ${t.syncRunId} was left ${last.run.status}`);
  if (!isTerminalRun(last.run.status)) {
    throw new CliError(`run ${t.syncRunId} is still ${last.run.status} after ${opts.timeout} s`);
  }
  const summary = await summarize(session, integration.id, t.syncRunId, days, shutdown.signal);
  return emulated ? withEmulated(session, summary, integration.id, emulated) : summary;
}

/** The normalized tables' rows and the work-item metrics in place of the synthetic figures. */
async function withEmulated(
  session: Session,
  summary: DemoSummary,
  integrationId: string,
  { demo, emu }: Emulated,
): Promise<DemoSummary> {
  const tables = await normalizedRows(session.engine.db, integrationId, demo.tables);
  const metrics = await workItemMetricsRows(session.engine.db, integrationId);
  return {
    ...summary,
    items_written: Object.values(tables).reduce((a, b) => a + b, 0),
    [demo.provider]: {
      emulator: emu.url,
      emulator_name: demo.emulatorName,
      tables,
      metrics_rows: metrics.rows,
      metrics_generations: metrics.generations,
    },
  };
}

async function summarize(
  session: Session,
  integrationId: string,
  runId: string,
  days: number,
  signal: AbortSignal,
): Promise<DemoSummary> {
  const { engine, settings } = session;
  const row = (await getIntegration(engine.db, integrationId))!;
  const expected = engine.ctx.registry
    .postSyncHandlersFor({ id: row.id, orgId: row.org_id, provider: row.provider, name: row.name, config: row.config })
    .map((h) => h.name);
  const { run, units } = await loadRunView(engine.db, runId);
  const handlers = run.completed_units > 0 ? expected : [];
  const postSync = await awaitPostSync(engine.db, runId, handlers, 10_000, signal);
  const totals = await unitTotals(engine.db, runId);
  const jobRun = await getJobRunForRun(engine.db, runId);
  return {
    run: {
      id: run.id,
      status: run.status,
      mode: run.mode,
      total_units: run.total_units,
      completed_units: run.completed_units,
      failed_units: run.failed_units,
      error: run.error,
    },
    window_days: days,
    units,
    failed_by_category: await failuresByCategory(engine.db, runId),
    attempts: totals.attempts,
    rate_limit_deferrals: totals.deferrals,
    expired_lease_retries: totals.expired,
    duration_ms: elapsedMs(run.started_at ?? run.created_at, run.completed_at),
    job_run: jobRun ? { id: jobRun.id, status: jobRun.status } : null,
    post_sync: { expected: handlers, ...postSync },
    items_written: await itemsWritten(engine.db, integrationId),
    outbox: await outboxState(engine.db, runId),
    database: describeDatabase(settings),
    broker: describeBroker(settings),
  };
}

function interrupted(shutdown: Shutdown, detail: string): CliError {
  return new CliError(`demo interrupted by ${String(shutdown.signalName)}${detail}`, shutdown.interruptedExitCode);
}

/** The command that shows the run again from this directory. */
function lookAgain(session: Session, runId: string): string {
  const { settings } = session;
  if (settings.databaseUrl) return `syncrelay runs show ${runId}`;
  const dir = resolve(settings.dataDir);
  const prefix = dir === resolve('.syncrelay') ? '' : `SYNCRELAY_DATA_DIR=${dir} `;
  return `${prefix}syncrelay runs show ${runId}`;
}
