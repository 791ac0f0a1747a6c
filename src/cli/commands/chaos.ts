/**
 * `syncrelay chaos`: real engine processes under real faults, then every invariant of SPEC §12
 * checked from the database. Also registers the hidden `chaos-role`, the child processes it runs.
 */
import { randomInt } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { startApiServer } from '../../api/server.js';
import {
  FAULT_KINDS,
  PROVIDER_MODES,
  PROVIDER_RUN_MODES,
  type ChaosOptions,
  type FaultKind,
  type ProviderRunMode,
} from '../../chaos/options.js';
import { formatReport } from '../../chaos/report.js';
import { runChaosRole } from '../../chaos/role.js';
import { CHAOS_PROVIDERS, type ChaosProvider } from '../../chaos/targets/target.js';
import { ChaosRun } from '../../chaos/run.js';
import type { PostSyncDelivery } from '../../config.js';
import { intInRange, list, numberInRange, seconds } from '../args.js';
import { CliError, EXIT_FAILURE, note, printJson, printLine } from '../output.js';
import { cliLogger, resolveSettings } from '../session.js';
import { Shutdown } from '../signals.js';

interface ChaosFlags {
  runs: number;
  unitsPerRun: number;
  workers: number;
  reconcilers: number;
  duration: number;
  faults?: FaultKind[];
  postSync: PostSyncDelivery;
  seed?: number;
  redisServer?: string;
  pgBin?: string;
  pgbouncer?: string;
  slack: number;
  concurrency: number;
  keep?: boolean;
  logDir?: string;
  json?: boolean;
  provider?: ChaosProvider;
  editsPerSecond: number;
  modes?: ProviderRunMode[];
  webhooks?: boolean;
}

function modeList(raw: string): ProviderRunMode[] {
  const items = list(raw);
  for (const m of items) {
    if (!(PROVIDER_RUN_MODES as readonly string[]).includes(m))
      throw new InvalidArgumentError(
        `Unknown mode "${m}"; expected ${PROVIDER_RUN_MODES.join(', ')} (repeat one to weight it).`,
      );
  }
  return items as ProviderRunMode[];
}

function faultList(raw: string): FaultKind[] {
  const items = list(raw);
  if (items.length === 1 && items[0] === 'all') return [...FAULT_KINDS];
  if (items.length === 1 && items[0] === 'none') return [];
  for (const k of items) {
    if (!(FAULT_KINDS as readonly string[]).includes(k))
      throw new InvalidArgumentError(`Unknown fault "${k}"; expected all, none or some of ${FAULT_KINDS.join(', ')}.`);
  }
  return [...new Set(items)] as FaultKind[];
}

/**
 * `syncrelay` again, the way this process was started: node, its flags (a TypeScript loader in development),
 * the entry.
 */
function selfEntry(): { command: string; args: string[] } {
  const main = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../main.ts' : '../main.js', import.meta.url));
  return { command: process.execPath, args: [...process.execArgv, main] };
}

export function registerChaos(program: Command): void {
  program
    .command('chaos')
    .description(
      'run workers and reconcilers under real faults, then check every invariant of a durable run from the database',
    )
    .option('--runs <n>', 'runs triggered over the duration', intInRange(1, 100_000), 40)
    .option('--units-per-run <m>', 'units each run is planned with (about)', intInRange(2, 500), 20)
    .option('--workers <w>', 'worker processes', intInRange(1, 64), 3)
    .option('--reconcilers <r>', 'reconciler processes', intInRange(1, 16), 2)
    .option('--concurrency <n>', 'messages each worker handles at once', intInRange(1, 64), 4)
    .option('--duration <seconds>', 'how long runs are triggered and faults injected', seconds, 60)
    .option(
      '--faults <list>',
      `comma-separated fault kinds, all or none (default all): ${FAULT_KINDS.join(', ')}`,
      faultList,
    )
    .addOption(
      new Option('--post-sync <mode>', 'post_sync delivery of the engine processes')
        .choices(['at-most-once', 'exactly-once'])
        .default('at-most-once'),
    )
    .option(
      '--seed <k>',
      'seeds the schedule, the targets and the providers (default: random, printed in the report)',
      intInRange(0, 2 ** 31 - 1),
    )
    .option(
      '--redis-server <path>',
      'start a private redis-server from this binary on a free 127.0.0.1 port (needed for the Redis faults)',
    )
    .option(
      '--pg-bin <dir>',
      'initdb and start a private PostgreSQL from this directory of binaries on a free 127.0.0.1 port ' +
        '(needed for the PostgreSQL faults)',
    )
    .option(
      '--pgbouncer <path>',
      'start a private PgBouncer (transaction pooling) from this binary on a free 127.0.0.1 port in front of the ' +
        "run's database, and run every engine process through it (needed for the pooler fault)",
    )
    .option(
      '--slack <seconds>',
      'slack on top of lease + reconcile interval for every run to be terminal after the faults stop',
      seconds,
      20,
    )
    .addOption(
      new Option(
        '--provider <name>',
        "sync that provider's emulator instead of synthetic integrations: its own faults and edits during " +
          'reads, a final incremental and a final verify, and the store and its deletions compared with the ' +
          'emulator (ground truth)',
      ).choices([...CHAOS_PROVIDERS]),
    )
    .option(
      '--edits-per-second <n>',
      'with --provider: edits and deletions per second at the emulator while the faults run',
      numberInRange(0, 100),
      2,
    )
    .option(
      '--modes <list>',
      `with --provider: the modes runs are drawn from, each entry equally likely (default ${PROVIDER_MODES.join(',')})`,
      modeList,
    )
    .option(
      '--webhooks',
      'with --provider github|linear|jira: post signed webhook deliveries of that provider (and redeliveries) ' +
        'at an API server of the run while the faults happen, and check that none is lost',
    )
    .option('--keep', 'keep the chaos database instead of dropping it')
    .option('--log-dir <dir>', "write each engine process's logs (level warn) to <dir>/<name>.log")
    .option('--json', 'print the report as one JSON object')
    .addHelpText(
      'after',
      `
Needs DATABASE_URL (PostgreSQL; the embedded mode is refused) or --pg-bin, and REDIS_URL or
--redis-server. It creates its own database on DATABASE_URL's server (DATABASE_DIRECT_URL's when
set), or on the private cluster (syncrelay_chaos_<time>_<hex>, migrated, dropped at the end unless
--keep), its own org, synthetic integrations (two impersonating linear) and queue prefix; starts
W worker and R reconciler processes with a 2 s lease and a 1 s reconcile interval; triggers the
runs; and injects, on a seeded schedule:

  worker-kill      SIGKILL a worker holding units, start a new one
  reconciler-kill  SIGKILL a reconciler between claiming outbox rows and marking them
  redis-restart    kill the private Redis and start it again, empty   (--redis-server only)
  redis-flushall   FLUSHALL on the private Redis                      (--redis-server only)
  pg-terminate     pg_terminate_backend on this run's engine connections (never anything else)
  pg-restart       crash the private PostgreSQL (pg_ctl stop -m immediate), start it again after
                   0.3–2 s: the WAL is replayed                       (--pg-bin only)
  pg-stop-long     stop the private PostgreSQL (-m fast) for 2–5 leases, then start it again:
                   every engine process must wait it out and resume   (--pg-bin only)
  pgbouncer-restart  SIGKILL the private PgBouncer, start it again on the same port after
                   0.2–2 s: every pooled connection drops, transactions in flight roll back
                                                                      (--pgbouncer only)
  publish-fail     a fraction of every engine process's broker publishes fail for a few seconds
  worker-freeze    SIGSTOP a worker past its lease, then SIGCONT: its late writes must be fenced
  net-partition    cut a worker in its own network namespace off PostgreSQL and Redis past its
                   lease, then reconnect it (skipped with a message where ip netns is not permitted)
  duplicate-delivery  every engine process publishes a fraction of its messages (unit, dispatch,
                   finalize, post_sync) again for a few seconds: at once, while the unit runs, after it ended

As root, --pg-bin runs initdb and postgres as the postgres system user (they refuse root).

With --pgbouncer, every engine process (and the API server of --webhooks) connects through the
private PgBouncer (DATABASE_URL the pooler, SYNCRELAY_DB_POOLER=transaction, DATABASE_DIRECT_URL
the server for LISTEN); the command's own connections (setup, triggers, checks) stay direct.
pg-terminate still finds the pooled backends: PgBouncer gives a server connection the
application_name of the client using it. As root, PgBouncer runs as the postgres system user.

Faults only ever target processes this command started (by pid), the Redis, PostgreSQL and
PgBouncer it started, the link of the namespace it created and backends whose application_name
marks them as its own.

With --provider github|linear|jira, the runs sync one integration of that provider against its
emulator on 127.0.0.1 (incremental runs, now and then a full re-sync) instead: while the faults
run, the emulator answers with the provider's own faults too (limit responses, 5xx, slow answers,
partial errors) and its data is edited and deleted under the readers (--edits-per-second). After
the faults, once the emulator is quiet, one more incremental run must succeed, and one more
invariant is checked: the normalized store equals the emulator's records (every item present at
its latest version). net-partition is skipped with --provider (the namespace cannot reach the
emulator).

With --provider github|linear|jira --webhooks, an API server of the run (its connections cut by
pg-terminate like the engine's) receives signed deliveries of that provider for the integration
(GitHub issues, Linear Issue, Jira jira:issue_updated, each naming an issue of the emulator), a
tenth of them redeliveries, while the faults happen; one not answered 202 is sent again, as the
provider resends it (a Linear one stamped and signed again, a Jira one with its retry header),
until it is. One more invariant: every acknowledged delivery is recorded once and covered by a run
that read its source (repository, team, project) after it was received and ended, no delivery
names two runs, runs coalesce within the debounce interval, and nothing remembered is left.

Then it waits for every run to be terminal, checks the invariants of a durable run and prints
the report. Exit status 0 only if every invariant holds; 1 if one does not.`,
    )
    .action(async (flags: ChaosFlags) => {
      const settings = resolveSettings();
      if (!settings.databaseUrl && !flags.pgBin) {
        throw new CliError(
          'chaos refuses the embedded mode: it runs separate worker and reconciler processes, ' +
            'which need PostgreSQL — set DATABASE_URL, or pass --pg-bin DIR to start a private one',
        );
      }
      if (!settings.redisUrl && !flags.redisServer) {
        throw new CliError(
          'chaos refuses the in-process broker: its worker and reconciler processes need Redis — ' +
            'set REDIS_URL, or pass --redis-server PATH to start a private one',
        );
      }
      const opts: ChaosOptions = {
        runs: flags.runs,
        unitsPerRun: flags.unitsPerRun,
        workers: flags.workers,
        reconcilers: flags.reconcilers,
        durationS: flags.duration,
        faults: flags.faults ?? [...FAULT_KINDS],
        faultsExplicit: flags.faults !== undefined,
        postSync: flags.postSync,
        seed: flags.seed ?? randomInt(0, 2 ** 31 - 1),
        redisServer: flags.redisServer,
        pgBin: flags.pgBin,
        pgbouncer: flags.pgbouncer,
        slackS: flags.slack,
        keep: flags.keep ?? false,
        concurrency: flags.concurrency,
        logDir: flags.logDir,
        provider: flags.provider,
        editsPerSecond: flags.editsPerSecond,
        providerModes: flags.modes ?? [...PROVIDER_MODES],
        webhooks: flags.webhooks ?? false,
      };
      if (flags.modes && !flags.provider) throw new CliError('--modes applies to a --provider run only');
      const shutdown = new Shutdown(cliLogger(false));
      const run = new ChaosRun(
        opts,
        {
          // The command's own connections need the server itself (or a session pooler), never a transaction pooler.
          databaseUrl: settings.databaseDirectUrl ?? settings.databaseUrl,
          redisUrl: settings.redisUrl,
          entry: selfEntry(),
          startApiServer: (engine) => startApiServer({ engine, host: '127.0.0.1', port: 0 }),
        },
        { note, signal: shutdown.signal },
      );
      let report;
      try {
        report = await run.execute();
      } catch (err) {
        if (shutdown.signal.aborted)
          throw new CliError(`chaos interrupted by ${String(shutdown.signalName)}`, shutdown.interruptedExitCode, {
            cause: err,
          });
        throw err;
      }
      if (flags.json) printJson(report);
      else printLine(formatReport(report));
      if (!report.ok) {
        const failed = report.invariants.filter((i) => !i.ok).map((i) => i.id);
        throw new CliError(`chaos: ${failed.length} invariant(s) violated: ${failed.join(', ')}`, EXIT_FAILURE);
      }
    });

  program
    .command('chaos-role <role>', { hidden: true })
    .description('internal: one engine process of `syncrelay chaos` (a test / chaos hook)')
    .option('--id <name>', 'name of this process', 'chaos')
    .option('--concurrency <n>', 'worker concurrency', intInRange(1, 64), 4)
    .option('--pool <n>', 'PostgreSQL pool size', intInRange(1, 100), 6)
    .option('--seed <k>', 'seeds injected publish failures', intInRange(0, 2 ** 31 - 1), 1)
    .action(async (role: string, o: { id: string; concurrency: number; pool: number; seed: number }) => {
      if (role !== 'worker' && role !== 'reconciler')
        throw new CliError(`chaos-role: unknown role ${JSON.stringify(role)}`);
      await runChaosRole({ role: role, id: o.id, concurrency: o.concurrency, poolSize: o.pool, seed: o.seed });
      await new Promise<never>(() => undefined); // runs until a signal or the end of stdin exits the process
    });
}
