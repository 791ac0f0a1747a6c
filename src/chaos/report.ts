/** The chaos report: what ran, what was injected, how fast it recovered, and each invariant. */
import type { PostSyncDelivery } from '../config.js';
import type { Db } from '../db/types.js';
import type { UnexpectedExit } from './cluster.js';
import type { FaultRecord } from './injectors.js';
import type { InvariantResult } from './invariants.js';
import type { FaultKind } from './options.js';
import { quantile } from './random.js';

export interface Recovery {
  events: number;
  p50_ms: number | null;
  max_ms: number | null;
}

export interface ChaosReport {
  ok: boolean;
  seed: number;
  config: {
    runs: number; units_per_run: number; workers: number; reconcilers: number; concurrency: number; duration_s: number;
    post_sync: PostSyncDelivery; faults: FaultKind[]; lease_s: number; reconcile_interval_s: number; slack_s: number;
    terminal_bound_s: number; redis: string; partitioned_worker: boolean;
  };
  database: { name: string; kept: boolean };
  queue_prefix: string;
  runs: { total: number; by_status: Record<string, number>; trigger_failures: number; cancelled_by_user: number };
  units: { total: number; by_status: Record<string, number>; failed_by_category: Record<string, number>; attempts: number; expired_lease_retries: number; rate_limit_deferrals: number };
  faults: {
    injected: Partial<Record<FaultKind, number>>;
    missed: Partial<Record<FaultKind, number>>;
    skipped: Partial<Record<FaultKind, string>>;
    publishes_failed: number;
    units_held_by_killed_or_cut_off_workers: number;
    events: (Omit<FaultRecord, 'units'> & { units: number })[];
  };
  recovery: {
    faults_stopped_at: string;
    /** Runs still open when the last fault ended: how long after it each became terminal. */
    after_last_fault: Recovery & { open_runs: number };
    /** Per fault that took units away: from the moment it hit until every unit it held was terminal (retries included). */
    by_kind: Partial<Record<FaultKind, Recovery>>;
  };
  post_sync: { mode: PostSyncDelivery; runs_with_successful_units: number; delivered: number; not_delivered: number };
  processes: { started: number; start_failures: UnexpectedExit[]; unexpected_exits: UnexpectedExit[] };
  invariants: InvariantResult[];
  elapsed_ms: number;
}

export async function countBy(db: Db, sql: string, params: unknown[]): Promise<Record<string, number>> {
  const { rows } = await db.query<{ k: string; n: number }>(sql, params);
  return Object.fromEntries(rows.map((r) => [r.k ?? 'null', r.n]));
}

/** Per fault with held units: the time from the moment it hit until the last of its units was terminal. */
export async function recoveryByKind(db: Db, records: FaultRecord[]): Promise<Partial<Record<FaultKind, Recovery>>> {
  const out: Partial<Record<FaultKind, number[]>> = {};
  for (const r of records) {
    if (r.units.length === 0) continue;
    const { rows } = await db.query<{ done: Date | null; open: number }>(
      `SELECT max(e.at) AS done, count(*) FILTER (WHERE u.status NOT IN ('success', 'failed', 'cancelled'))::int AS open
         FROM sync_run_units u
         LEFT JOIN LATERAL (SELECT at FROM chaos_unit_events e WHERE e.unit_id = u.id AND e.new_status IN ('success', 'failed', 'cancelled')
                             ORDER BY e.id DESC LIMIT 1) e ON true
        WHERE u.id = ANY($1::uuid[])`,
      [r.units.map((u) => u.unitId)],
    );
    const done = rows[0]?.done;
    if (!done || rows[0]!.open > 0) continue;
    (out[r.kind] ??= []).push(Math.max(0, done.getTime() - r.startedAt));
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, summarize(v)])) as Partial<Record<FaultKind, Recovery>>;
}

export function summarize(values: number[]): Recovery {
  return { events: values.length, p50_ms: quantile(values, 0.5), max_ms: values.length ? Math.max(...values) : null };
}

const secs = (ms: number | null) => (ms === null ? '-' : `${(ms / 1000).toFixed(1)} s`);
const pairs = (o: Record<string, number | string | undefined>) =>
  Object.entries(o).filter(([, v]) => v !== undefined).map(([k, v]) => `${k} ${v}`).join(' · ') || '-';

/** The report as text for a person. */
export function formatReport(r: ChaosReport): string {
  const c = r.config;
  const lines = [
    `syncrelay chaos — seed ${r.seed}, post_sync ${c.post_sync}, ${c.workers} workers${c.partitioned_worker ? ' (+1 in a network namespace)' : ''} × ${c.concurrency}, ${c.reconcilers} reconcilers, ${c.duration_s} s of faults`,
    `  database ${r.database.name}${r.database.kept ? ' (kept)' : ' (dropped)'} · queue prefix ${r.queue_prefix} · Redis ${c.redis}`,
    `  lease ${c.lease_s} s · reconcile interval ${c.reconcile_interval_s} s · slack ${c.slack_s} s → terminal bound ${c.terminal_bound_s} s`,
    '',
    `runs     ${String(r.runs.total).padStart(6)}   ${pairs(r.runs.by_status)}${r.runs.cancelled_by_user ? `  (${r.runs.cancelled_by_user} cancelled by a user)` : ''}`,
    `units    ${String(r.units.total).padStart(6)}   ${pairs(r.units.by_status)}`,
    `                  failed by category: ${pairs(r.units.failed_by_category)}`,
    `                  attempts ${r.units.attempts} · expired-lease retries ${r.units.expired_lease_retries} · rate-limit deferrals ${r.units.rate_limit_deferrals}`,
    `faults   ${String(Object.values(r.faults.injected).reduce((a, b) => a + (b ?? 0), 0)).padStart(6)}   ${pairs(r.faults.injected)}`,
    `                  publishes failed ${r.faults.publishes_failed} · units held by killed / cut-off workers ${r.faults.units_held_by_killed_or_cut_off_workers}`,
  ];
  if (Object.keys(r.faults.missed).length > 0) lines.push(`                  missed (nothing to act on at the time): ${pairs(r.faults.missed)}`);
  for (const [k, why] of Object.entries(r.faults.skipped)) lines.push(`                  skipped ${k}: ${why}`);
  const a = r.recovery.after_last_fault;
  lines.push(
    `recovery after the last fault: ${a.open_runs} runs still open, terminal after p50 ${secs(a.p50_ms)}, max ${secs(a.max_ms)} (bound ${c.terminal_bound_s} s)`,
  );
  for (const [k, v] of Object.entries(r.recovery.by_kind)) {
    lines.push(`                  ${k}: held units terminal p50 ${secs(v!.p50_ms)}, max ${secs(v!.max_ms)} after it hit (${v!.events} faults)`);
  }
  lines.push(
    `post_sync ${r.post_sync.mode}: ${r.post_sync.delivered} of ${r.post_sync.runs_with_successful_units} runs with successful units delivered (${r.post_sync.not_delivered} not)`,
    `processes ${r.processes.started} started · ${r.processes.unexpected_exits.length} exited unexpectedly · ${r.processes.start_failures.length} failed while starting (replaced)`,
  );
  for (const e of r.processes.unexpected_exits.slice(0, 5)) lines.push(`                  ${e.name} (pid ${e.pid}): ${e.exit} — ${e.stderr}`);
  lines.push('', 'invariants');
  for (const i of r.invariants) {
    lines.push(`  ${i.ok ? 'PASS' : 'FAIL'}  ${i.title}  [${i.checked}]`);
    if (!i.ok) {
      lines.push(`        ${i.violations} counter-example(s):`);
      for (const e of i.examples) lines.push(`          - ${e}`);
    }
  }
  const failed = r.invariants.filter((i) => !i.ok).length;
  lines.push('', failed === 0 ? `result: PASS — all ${r.invariants.length} invariants hold (${secs(r.elapsed_ms)})` : `result: FAIL — ${failed} of ${r.invariants.length} invariants violated`);
  return lines.join('\n');
}
