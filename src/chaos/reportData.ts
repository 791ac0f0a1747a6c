/** Gathers the report's figures from the database and the run's own records. */
import type { Db } from '../db/types.js';
import type { Cluster } from './cluster.js';
import type { InvariantResult } from './invariants.js';
import { LEASE_MS, RECONCILE_INTERVAL_MS, type ChaosOptions, type FaultKind } from './options.js';
import { recoveryByKind, summarize } from './recovery.js';
import { countBy, type ChaosReport } from './report.js';
import type { Names } from './setup.js';
import type { ChaosTally } from './tally.js';

export interface ReportInput {
  opts: ChaosOptions;
  names: Names;
  kinds: FaultKind[];
  skipped: Partial<Record<FaultKind, string>>;
  run: ChaosTally;
  faultsStoppedAt: number;
  boundMs: number;
  invariants: InvariantResult[];
  cluster: Cluster;
  redis: string;
  postgres: string;
  /** `pgbouncer` when every engine process ran through the private PgBouncer, else `none`. */
  pooler: string;
  partitioned: boolean;
  /** With `--provider`: the emulator's figures and the final incremental. */
  provider: ChaosReport['provider'];
  elapsedMs: number;
}

export async function buildReport(db: Db, x: ReportInput): Promise<ChaosReport> {
  const s = db.schema;
  const org = [x.names.orgId];
  const runsByStatus = await countBy(
    db,
    `SELECT status AS k, count(*)::int AS n FROM ${s.sync_runs} WHERE org_id = $1 GROUP BY 1 ORDER BY 1`,
    org,
  );
  const unitsByStatus = await countBy(
    db,
    `SELECT status AS k, count(*)::int AS n FROM ${s.sync_run_units} WHERE org_id = $1 GROUP BY 1 ORDER BY 1`,
    org,
  );
  const failedBy = await countBy(
    db,
    `SELECT result ->> 'error_category' AS k, count(*)::int AS n FROM ${s.sync_run_units}
      WHERE org_id = $1 AND status = 'failed' GROUP BY 1 ORDER BY 2 DESC`,
    org,
  );
  const { rows: sums } = await db.query<{ attempts: number; expired: number; deferrals: number }>(
    `SELECT COALESCE(sum(attempts), 0)::int AS attempts, COALESCE(sum(expired_lease_retry_count), 0)::int AS expired,
            COALESCE(sum(rate_limit_deferrals), 0)::int AS deferrals FROM ${s.sync_run_units} WHERE org_id = $1`,
    org,
  );
  const { rows: runs } = await db.query<{ completed_at: Date | null; successes: number; generations: number }>(
    `SELECT r.completed_at,
            (SELECT count(*)::int FROM ${s.sync_run_units} u
              WHERE u.sync_run_id = r.id AND u.status = 'success') AS successes,
            (SELECT count(DISTINCT m.computed_at)::int FROM ${s.table('synthetic_metrics_daily')} m
              WHERE m.sync_run_id = r.id) AS generations
       FROM ${s.sync_runs} r WHERE r.org_id = $1`,
    org,
  );
  const open = runs.filter((r) => !r.completed_at || r.completed_at.getTime() > x.faultsStoppedAt);
  const after = open.filter((r) => r.completed_at).map((r) => r.completed_at!.getTime() - x.faultsStoppedAt);
  const recovery = await recoveryByKind(db, x.run.records);
  const injected: Partial<Record<FaultKind, number>> = {};
  for (const rec of x.run.records) injected[rec.kind] = (injected[rec.kind] ?? 0) + 1;
  const withSuccess = runs.filter((r) => r.successes > 0);
  const delivered = withSuccess.filter((r) => r.generations > 0).length;
  return {
    ok: x.invariants.every((i) => i.ok),
    seed: x.opts.seed,
    config: {
      runs: x.opts.runs,
      units_per_run: x.opts.unitsPerRun,
      workers: x.opts.workers,
      reconcilers: x.opts.reconcilers,
      concurrency: x.opts.concurrency,
      duration_s: x.opts.durationS,
      post_sync: x.opts.postSync,
      faults: x.kinds,
      lease_s: LEASE_MS / 1000,
      reconcile_interval_s: RECONCILE_INTERVAL_MS / 1000,
      slack_s: x.opts.slackS,
      terminal_bound_s: x.boundMs / 1000,
      redis: x.redis,
      postgres: x.postgres,
      pooler: x.pooler,
      partitioned_worker: x.partitioned,
    },
    database: { name: x.names.database, kept: x.opts.keep },
    queue_prefix: x.names.queuePrefix,
    runs: {
      total: runs.length,
      by_status: runsByStatus,
      trigger_failures: x.run.triggerFailures,
      cancelled_by_user: x.run.userCancels,
    },
    units: {
      total: Object.values(unitsByStatus).reduce((a, b) => a + b, 0),
      by_status: unitsByStatus,
      failed_by_category: failedBy,
      attempts: sums[0]!.attempts,
      expired_lease_retries: sums[0]!.expired,
      rate_limit_deferrals: sums[0]!.deferrals,
    },
    faults: {
      injected,
      missed: x.run.missed,
      skipped: x.skipped,
      publishes_failed: x.run.publishesFailed,
      duplicates_published: { ...x.run.duplicated },
      units_held_by_killed_or_cut_off_workers: x.run.records.reduce((a, r) => a + r.units.length, 0),
      extended_ms: x.run.extendedMs,
      events: x.run.records
        .sort((a, b) => a.startedAt - b.startedAt)
        .map(({ units, ...rest }) => ({ ...rest, units: units.length })),
    },
    recovery: {
      faults_stopped_at: new Date(x.faultsStoppedAt).toISOString(),
      quiescent_after_ms: Math.max(0, ...after),
      after_last_fault: { ...summarize(after), open_runs: open.length },
      per_fault: recovery.all,
      by_kind: recovery.byKind,
    },
    post_sync: {
      mode: x.opts.postSync,
      runs_with_successful_units: withSuccess.length,
      delivered,
      not_delivered: withSuccess.length - delivered,
    },
    processes: {
      started: x.cluster.started,
      start_failures: x.cluster.startFailures,
      unexpected_exits: x.cluster.unexpectedExits,
    },
    provider: x.provider,
    invariants: x.invariants,
    elapsed_ms: x.elapsedMs,
  };
}
