/** The chaos report: what ran, what was injected, how fast it recovered, and each invariant. */
import type { PostSyncDelivery } from '../config.js';
import type { Db } from '../db/types.js';
import type { UnexpectedExit } from './cluster.js';
import type { FaultRecord } from './injectors.js';
import type { InvariantResult } from './invariants.js';
import type { FaultKind } from './options.js';
import type { Recovery } from './recovery.js';

export interface ChaosReport {
  ok: boolean;
  seed: number;
  config: {
    runs: number;
    units_per_run: number;
    workers: number;
    reconcilers: number;
    concurrency: number;
    duration_s: number;
    post_sync: PostSyncDelivery;
    faults: FaultKind[];
    lease_s: number;
    reconcile_interval_s: number;
    slack_s: number;
    terminal_bound_s: number;
    redis: string;
    /** `private` with --pg-bin (a cluster the command started), else `shared` (DATABASE_URL's server). */
    postgres: string;
    /** `pgbouncer` with --pgbouncer (engine connections through a private PgBouncer), else `none`. */
    pooler: string;
    partitioned_worker: boolean;
  };
  database: { name: string; kept: boolean };
  queue_prefix: string;
  runs: { total: number; by_status: Record<string, number>; trigger_failures: number; cancelled_by_user: number };
  units: {
    total: number;
    by_status: Record<string, number>;
    failed_by_category: Record<string, number>;
    attempts: number;
    expired_lease_retries: number;
    rate_limit_deferrals: number;
  };
  faults: {
    injected: Partial<Record<FaultKind, number>>;
    missed: Partial<Record<FaultKind, number>>;
    skipped: Partial<Record<FaultKind, string>>;
    publishes_failed: number;
    /** Second deliveries the duplicate-delivery fault published, by task. */
    duplicates_published: Record<string, number>;
    units_held_by_killed_or_cut_off_workers: number;
    /** How long the fault phase went on past its planned duration while a backlog was left. */
    extended_ms: number;
    events: (Omit<FaultRecord, 'units'> & { units: number })[];
  };
  recovery: {
    faults_stopped_at: string;
    /** When the last run became terminal, after the last fault ended (0: all were terminal by then). */
    quiescent_after_ms: number;
    /** Runs still open when the last fault ended: how long after it each became terminal. */
    after_last_fault: Recovery & { open_runs: number };
    /** Each fault, until the work it took away was done again (see ./recovery.ts), over all faults measured. */
    per_fault: Recovery;
    by_kind: Partial<Record<FaultKind, Recovery>>;
  };
  post_sync: { mode: PostSyncDelivery; runs_with_successful_units: number; delivered: number; not_delivered: number };
  processes: { started: number; start_failures: UnexpectedExit[]; unexpected_exits: UnexpectedExit[] };
  /** With `--provider`: which, how it ran, what its emulator did (requests, faults, edits), the final runs. */
  provider: {
    name: string;
    edits_per_second: number;
    modes: string[];
    stats: Record<string, number>;
    finalRun: { id: string; status: string } | null;
    finalVerify: { id: string; status: string } | null;
  } | null;
  invariants: InvariantResult[];
  elapsed_ms: number;
}

export async function countBy(db: Db, sql: string, params: unknown[]): Promise<Record<string, number>> {
  const { rows } = await db.query<{ k: string; n: number }>(sql, params);
  return Object.fromEntries(rows.map((r) => [r.k ?? 'null', r.n]));
}

const secs = (ms: number | null) => (ms === null ? '-' : `${(ms / 1000).toFixed(1)} s`);
const pairs = (o: Record<string, number | string | undefined>) =>
  Object.entries(o)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k} ${String(v)}`)
    .join(' · ') || '-';

/** The report as text for a person. */
export function formatReport(r: ChaosReport): string {
  const c = r.config;
  const lines = [
    `syncrelay chaos — seed ${r.seed}, post_sync ${c.post_sync}, ` +
      `${c.workers} workers${c.partitioned_worker ? ' (+1 in a network namespace)' : ''} × ${c.concurrency}, ` +
      `${c.reconcilers} reconcilers, ${c.duration_s} s of faults`,
    `  database ${r.database.name}${r.database.kept ? ' (kept)' : ' (dropped)'} · ` +
      `queue prefix ${r.queue_prefix} · Redis ${c.redis} · PostgreSQL ${c.postgres}` +
      (c.pooler === 'pgbouncer' ? ' through a private PgBouncer (transaction pooling)' : ''),
    `  lease ${c.lease_s} s · reconcile interval ${c.reconcile_interval_s} s · ` +
      `slack ${c.slack_s} s → terminal bound ${c.terminal_bound_s} s`,
    '',
    `runs     ${String(r.runs.total).padStart(6)}   ${pairs(r.runs.by_status)}` +
      `${r.runs.cancelled_by_user ? `  (${r.runs.cancelled_by_user} cancelled by a user)` : ''}`,
    `units    ${String(r.units.total).padStart(6)}   ${pairs(r.units.by_status)}`,
    `                  failed by category: ${pairs(r.units.failed_by_category)}`,
    `                  attempts ${r.units.attempts} · expired-lease retries ${r.units.expired_lease_retries} · ` +
      `rate-limit deferrals ${r.units.rate_limit_deferrals}`,
    `faults   ${String(Object.values(r.faults.injected).reduce((a, b) => a + (b ?? 0), 0)).padStart(6)}` +
      `   ${pairs(r.faults.injected)}`,
    `                  publishes failed ${r.faults.publishes_failed} · ` +
      `duplicates published ${pairs(r.faults.duplicates_published)} · ` +
      `units held by killed / cut-off workers ${r.faults.units_held_by_killed_or_cut_off_workers}` +
      (r.faults.extended_ms > 0 ? ` · fault phase extended ${secs(r.faults.extended_ms)} (backlog)` : ''),
  ];
  if (Object.keys(r.faults.missed).length > 0)
    lines.push(`                  missed (nothing to act on at the time): ${pairs(r.faults.missed)}`);
  for (const [k, why] of Object.entries(r.faults.skipped)) lines.push(`                  skipped ${k}: ${why}`);
  const a = r.recovery.after_last_fault;
  const f = r.recovery.per_fault;
  lines.push(
    `recovery  each fault's work done again after p50 ${secs(f.p50_ms)}, max ${secs(f.max_ms)} ` +
      `(${f.events} faults measured)`,
  );
  for (const [k, v] of Object.entries(r.recovery.by_kind)) {
    lines.push(`                  ${k.padEnd(15)} p50 ${secs(v.p50_ms)}, max ${secs(v.max_ms)} (${v.events} faults)`);
  }
  lines.push(
    `          after the last fault: ${a.open_runs} runs still open, ` +
      `terminal after p50 ${secs(a.p50_ms)}, max ${secs(a.max_ms)}; ` +
      `all quiescent after ${secs(r.recovery.quiescent_after_ms)} (bound ${c.terminal_bound_s} s)`,
  );
  lines.push(
    `post_sync ${r.post_sync.mode}: ${r.post_sync.delivered} of ${r.post_sync.runs_with_successful_units} ` +
      `runs with successful units delivered (${r.post_sync.not_delivered} not)`,
    `processes ${r.processes.started} started · ${r.processes.unexpected_exits.length} exited unexpectedly · ` +
      `${r.processes.start_failures.length} failed while starting (replaced)`,
  );
  for (const e of r.processes.unexpected_exits.slice(0, 5))
    lines.push(`                  ${e.name} (pid ${e.pid}): ${e.exit} — ${e.stderr}`);
  if (r.provider) {
    const final = r.provider.finalRun;
    const verify = r.provider.finalVerify;
    lines.push(
      `provider  ${r.provider.name} emulator, ${r.provider.edits_per_second} edits/s, modes ` +
        `${r.provider.modes.join(',')}: ${pairs(r.provider.stats)}`,
      `          final incremental ${final ? `${final.id} ${final.status}` : 'not run'}`,
      `          final verify ${verify ? `${verify.id} ${verify.status}` : 'not run'}`,
    );
  }
  lines.push('', 'invariants');
  for (const i of r.invariants) {
    lines.push(`  ${i.ok ? 'PASS' : 'FAIL'}  ${i.title}  [${i.checked}]`);
    if (!i.ok) {
      lines.push(`        ${i.violations} counter-example(s):`);
      for (const e of i.examples) lines.push(`          - ${e}`);
    }
  }
  const failed = r.invariants.filter((i) => !i.ok).length;
  lines.push(
    '',
    failed === 0
      ? `result: PASS — all ${r.invariants.length} invariants hold (${secs(r.elapsed_ms)})`
      : `result: FAIL — ${failed} of ${r.invariants.length} invariants violated`,
  );
  return lines.join('\n');
}
