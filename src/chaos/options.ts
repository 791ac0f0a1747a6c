/** What a chaos run is asked to do: the options of `syncrelay chaos`, their defaults and the child settings. */
import type { PostSyncDelivery } from '../config.js';
import { DEFAULT_SCHEMA } from '../db/schema.js';
import type { ChaosProvider } from './targets/target.js';

export const FAULT_KINDS = [
  'worker-kill',
  'reconciler-kill',
  'redis-restart',
  'redis-flushall',
  'pg-terminate',
  'pg-restart',
  'pg-stop-long',
  'publish-fail',
  'worker-freeze',
  'net-partition',
  'duplicate-delivery',
  'pgbouncer-restart',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Kinds that restart or flush Redis: only allowed on a Redis the command started itself. */
export const REDIS_FAULTS: readonly FaultKind[] = ['redis-restart', 'redis-flushall'];

/** Kinds that crash or stop PostgreSQL: only allowed on a cluster the command started itself. */
export const PG_FAULTS: readonly FaultKind[] = ['pg-restart', 'pg-stop-long'];

/** Kinds that kill the pooler: only allowed on a PgBouncer the command started itself (`--pgbouncer`). */
export const POOLER_FAULTS: readonly FaultKind[] = ['pgbouncer-restart'];

export interface ChaosOptions {
  /** Runs triggered over the duration. @default 40 */
  runs: number;
  /** Units each run is planned with (approximately: windows and sources are whole). @default 20 */
  unitsPerRun: number;
  /** Worker processes (a network-partitioned one comes on top when that fault is on). @default 3 */
  workers: number;
  /** Reconciler processes. @default 2 */
  reconcilers: number;
  /** How long runs are triggered and faults injected, in seconds. @default 60 */
  durationS: number;
  /** Which faults to inject. @default every kind */
  faults: FaultKind[];
  /** Whether `faults` was given explicitly (a kind that cannot run is then an error, not a skip). */
  faultsExplicit: boolean;
  postSync: PostSyncDelivery;
  /** Seeds the schedule, the targets and the provider's decisions. */
  seed: number;
  /** Path of a redis-server binary: start a private Redis (needed for the Redis faults). */
  redisServer?: string;
  /** Directory of PostgreSQL's binaries: initdb and start a private cluster (needed for the PostgreSQL faults). */
  pgBin?: string;
  /**
   * Path of a pgbouncer binary: start a private PgBouncer (transaction pooling) in front of the run's
   * database, and run every engine process through it (needed for the pooler fault).
   */
  pgbouncer?: string;
  /** Slack on top of lease + reconcile interval for "terminal after the faults stop", in seconds. @default 20 */
  slackS: number;
  /** Keep the chaos database (and print its name) instead of dropping it. */
  keep: boolean;
  /** Worker concurrency (messages each worker handles at once). @default 4 */
  concurrency: number;
  /** Write each engine process's logs (stderr, level warn) to `<dir>/<name>.log`. */
  logDir?: string;
  /**
   * Sync a real provider against its emulator instead of the synthetic integrations: the
   * provider's own faults and edits during reads on top of the engine's, a final incremental, and
   * the ground-truth invariant. @default none (synthetic)
   */
  provider?: ChaosProvider;
  /** Edits (and deletions) per second at the emulator while the faults run (with `provider`). @default 2 */
  editsPerSecond: number;
  /**
   * The modes a provider run is drawn from, each entry equally likely (with `provider`).
   * @default PROVIDER_MODES
   */
  providerModes: ProviderRunMode[];
  /**
   * Post signed webhook deliveries (with redeliveries) at an API server of the run while the faults
   * happen, and check the webhook invariant (needs `provider`: github, linear or jira). @default false
   */
  webhooks?: boolean;
}

/**
 * What the engine processes (and the control engine) run with on top of CHILD_SETTINGS when they
 * read an emulator: plain http to 127.0.0.1 allowed, and the run's own credential key (passed in
 * the environment, never on a command line).
 */
export function providerSettings(secretKey: string): Record<string, string> {
  return { SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true', SYNCRELAY_SECRET_KEY: secretKey };
}

/**
 * The settings every child process runs with (SPEC §10 shrunk, as tests do): a 2 s lease, a 1 s
 * reconcile interval, a 0.5 s expired-lease backoff with one retry, and outbox claims that expire
 * after 5 s (a relay killed between claim and mark holds its rows that long). Dispatching units go
 * stale after 10 s — above the queue wait of a busy machine, as docs/operations.md asks (below it,
 * every queued unit would be published again) — and capped runs retry dispatch every 5 s as a
 * backstop (wake-ups on freed capacity do the work). Every process — the children, the control
 * engine, the setup and the checks — names its tables in one schema: the one set here. A chaos run
 * injects faults by design: its integrations carry the synthetic provider's fault knobs, which only
 * an engine with SYNCRELAY_ALLOW_FAULT_INJECTION=true accepts. A chaos run piles runs up on four
 * integrations on purpose (an outage holds every open run back), so an integration may have 64
 * live runs instead of the default 4: the live-run cap is the API's guard, not what is tested here.
 * Every chaos integration is the synthetic provider in one org, so all units share one concurrency
 * bucket: its cap is 16, not the default 8, so that the cap is not what keeps the queue from
 * draining by the time the faults stop — a busy machine at a cap of 8 ends the fault phase with a
 * backlog the slack was never meant to cover. A worker shape with more slots than 16
 * (the CI run's 3 × 6) still meets the cap.
 */
export const CHILD_SETTINGS: Readonly<Record<string, string>> = {
  SYNCRELAY_SCHEMA: DEFAULT_SCHEMA,
  SYNCRELAY_ALLOW_FAULT_INJECTION: 'true',
  SYNC_UNIT_RUNNING_LEASE_SECONDS: '2',
  SYNC_RECONCILE_INTERVAL_SECONDS: '1',
  SYNC_UNIT_DISPATCH_STALE_SECONDS: '10',
  SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS: '0.5',
  SYNC_UNIT_EXPIRED_LEASE_MAX_RETRIES: '1',
  SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '5',
  SYNC_OUTBOX_CLAIM_TIMEOUT_SECONDS: '5',
  SYNC_INTEGRATION_MAX_LIVE_RUNS: '64',
  SYNC_UNIT_CONCURRENCY_PER_BUCKET: '16',
};

/** What a `--provider` run may be: the emulator's data ends now, so there is nothing to backfill. */
export type ProviderRunMode = 'incremental' | 'full_resync' | 'verify';

export const PROVIDER_RUN_MODES: readonly ProviderRunMode[] = ['incremental', 'full_resync', 'verify'];

/** Three incremental runs in five, one full re-sync, one verify (it lists and confirms while edits go on). */
export const PROVIDER_MODES: readonly ProviderRunMode[] = [
  'incremental',
  'incremental',
  'incremental',
  'full_resync',
  'verify',
];

export const LEASE_MS = 2000;
export const RECONCILE_INTERVAL_MS = 1000;
export const CLAIM_TIMEOUT_MS = 5000;

/** lease + reconcile interval + slack: how long after the faults stop every run must be terminal. */
export function terminalBoundMs(o: Pick<ChaosOptions, 'slackS'>): number {
  return LEASE_MS + RECONCILE_INTERVAL_MS + o.slackS * 1000;
}
