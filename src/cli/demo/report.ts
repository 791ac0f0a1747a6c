/**
 * The demo's summary: read-only single statements over the run's units, the post-sync receipts,
 * the synthetic provider's tables and the outbox; and its text form.
 */
import type { Db } from '../../db/types.js';
import type { UnitCounts } from '../../domain/aggregate.js';
import { UNIT_STATUSES } from '../../domain/statuses.js';
import type { JobRunRow, RunRow } from '../../store/rows.js';
import { formatDuration, formatPairs, formatTable } from '../output.js';
import { pause } from '../signals.js';

export interface DemoSummary {
  run: Pick<RunRow, 'id' | 'status' | 'mode' | 'total_units' | 'completed_units' | 'failed_units' | 'error'>;
  window_days: number;
  units: UnitCounts;
  failed_by_category: Record<string, number>;
  attempts: number;
  rate_limit_deferrals: number;
  expired_lease_retries: number;
  duration_ms: number | null;
  job_run: Pick<JobRunRow, 'id' | 'status'> | null;
  post_sync: { expected: string[]; delivered: string[]; metrics_rows: number; metrics_generations: number };
  items_written: number;
  outbox: Record<string, string>;
  database: string;
  broker: string;
  /** `demo --provider github|linear|jira`: the emulator's address and what landed in the normalized tables. */
  github?: EmulatorDemoSummary;
  linear?: EmulatorDemoSummary;
  jira?: EmulatorDemoSummary;
}

/** The providers whose demo syncs an emulator, each with its part of the summary under its name. */
export const EMULATED_PROVIDERS = ['github', 'linear', 'jira'] as const;
export type EmulatedProvider = (typeof EMULATED_PROVIDERS)[number];

export interface EmulatorDemoSummary {
  /** The emulator's address. */
  emulator: string;
  /** What it is, e.g. "GitHub REST emulator". */
  emulator_name: string;
  /** Rows per normalized table for the integration. */
  tables: Record<string, number>;
  metrics_rows: number;
  metrics_generations: number;
}

/** Retry and attempt totals of a run's units. */
export async function unitTotals(db: Db, runId: string) {
  const { rows } = await db.query<{ attempts: number; deferrals: number; expired: number }>(
    `SELECT COALESCE(sum(attempts), 0)::int AS attempts, COALESCE(sum(rate_limit_deferrals), 0)::int AS deferrals,
            COALESCE(sum(expired_lease_retry_count), 0)::int AS expired
       FROM ${db.schema.sync_run_units} WHERE sync_run_id = $1`,
    [runId],
  );
  return rows[0] ?? { attempts: 0, deferrals: 0, expired: 0 };
}

/** Failed units of a run by error category. */
export async function failuresByCategory(db: Db, runId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ category: string; n: number }>(
    `SELECT COALESCE(result ->> 'error_category', 'unknown') AS category, count(*)::int AS n
       FROM ${db.schema.sync_run_units} WHERE sync_run_id = $1 AND status = 'failed' GROUP BY 1 ORDER BY 2 DESC, 1`,
    [runId],
  );
  return Object.fromEntries(rows.map((r) => [r.category, r.n]));
}

/** What post-sync did for the run: handlers with a receipt, metric rows and computed_at generations. */
export async function postSyncState(db: Db, runId: string) {
  const receipts = await db.query<{ handler: string }>(
    `SELECT handler FROM ${db.schema.post_sync_receipts} WHERE sync_run_id = $1 ORDER BY handler`,
    [runId],
  );
  const metrics = await db.query<{ rows: number; generations: number }>(
    `SELECT count(*)::int AS rows, count(DISTINCT computed_at)::int AS generations
       FROM ${db.schema.table('synthetic_metrics_daily')} WHERE sync_run_id = $1`,
    [runId],
  );
  return {
    delivered: receipts.rows.map((r) => r.handler),
    metrics_rows: metrics.rows[0]?.rows ?? 0,
    metrics_generations: metrics.rows[0]?.generations ?? 0,
  };
}

/**
 * Waits (up to `timeoutMs`) until every expected handler has its receipt and, for the metrics
 * roll-up, its rows are visible — post_sync runs just after the run turns terminal.
 */
export async function awaitPostSync(
  db: Db,
  runId: string,
  expected: readonly string[],
  timeoutMs: number,
  signal: AbortSignal,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await postSyncState(db, runId);
    const allReceipts = expected.every((h) => state.delivered.includes(h));
    const metricsDone = !expected.includes('metrics-rollup') || state.metrics_rows > 0;
    if ((allReceipts && metricsDone) || Date.now() >= deadline || signal.aborted) return state;
    await pause(100, signal);
  }
}

export async function itemsWritten(db: Db, integrationId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${db.schema.table('synthetic_items')} WHERE integration_id = $1`,
    [integrationId],
  );
  return rows[0]?.n ?? 0;
}

export async function outboxState(db: Db, runId: string): Promise<Record<string, string>> {
  const { rows } = await db.query<{ kind: string; status: string }>(
    `SELECT kind, status FROM ${db.schema.sync_dispatch_outbox} WHERE sync_run_id = $1 ORDER BY kind`,
    [runId],
  );
  return Object.fromEntries(rows.map((r) => [r.kind, r.status]));
}

/** The emulator part of a summary, if the demo synced an emulator. */
export function emulatedPart(s: DemoSummary): EmulatorDemoSummary | undefined {
  for (const p of EMULATED_PROVIDERS) if (s[p]) return s[p];
  return undefined;
}

/** The summary table printed when the demo's run is terminal. */
export function formatSummary(s: DemoSummary, lookAgain: string): string {
  const emu = emulatedPart(s);
  const counts = UNIT_STATUSES.filter((st) => (s.units[st] ?? 0) > 0).map((status) => ({
    status,
    n: s.units[status]!,
  }));
  const total = counts.reduce((a, c) => a + c.n, 0);
  const failedNote = Object.entries(s.failed_by_category)
    .map(([c, n]) => `${c} ${n}`)
    .join(', ');
  const unitRows = [...counts, { status: 'total', n: total }];
  const unitTable = formatTable(
    unitRows,
    [
      { header: 'units by status', value: (r) => r.status },
      { header: 'units', value: (r) => r.n, align: 'right' },
      { header: '', value: (r) => (r.status === 'failed' && failedNote ? `(${failedNote})` : '') },
    ],
    '  ',
  );
  const ps = s.post_sync;
  const metrics = emu
    ? { rows: emu.metrics_rows, table: 'work_item_metrics_daily', generations: emu.metrics_generations }
    : { rows: ps.metrics_rows, table: 'synthetic_metrics_daily', generations: ps.metrics_generations };
  const postSync =
    ps.expected.length === 0
      ? 'nothing to deliver (no successful units)'
      : `${ps.delivered.length}/${ps.expected.length} handlers delivered (${ps.delivered.join(', ') || 'none yet'})` +
        ` · ${metrics.rows} rows in ${metrics.table}` +
        ` · ${metrics.generations} computed_at generation${metrics.generations === 1 ? '' : 's'}`;
  const items = emu
    ? `${s.items_written} rows in the normalized tables for this integration`
    : `${s.items_written} rows in synthetic_items for this integration`;
  const pairs = formatPairs(
    [
      ['run', `${s.run.id} (${s.run.mode}, ${s.window_days} days)`],
      ['status', s.run.status + (s.run.error ? ` — ${s.run.error}` : '')],
      ['job run', s.job_run ? `${s.job_run.id} (${s.job_run.status})` : '-'],
      ['retries', `${s.rate_limit_deferrals} rate-limit deferrals · ${s.expired_lease_retries} expired-lease retries`],
      ['attempts', `${s.attempts} for ${total} units`],
      ['run duration', formatDuration(s.duration_ms)],
      ['post-sync', postSync],
      ['items', items],
      ...(emu ? [['emulator', `${emu.emulator} (${emu.emulator_name} in this process)`] as [string, string]] : []),
      [
        'outbox',
        Object.entries(s.outbox)
          .map(([k, v]) => `${k} ${v}`)
          .join(' · ') || '-',
      ],
      ['database', s.database],
      ['broker', s.broker],
    ],
    '  ',
  );
  const tables = emu
    ? '\n\n' +
      formatTable(
        Object.entries(emu.tables).map(([table, rows]) => ({ table, rows })),
        [
          { header: 'normalized table', value: (r) => r.table },
          { header: 'rows', value: (r) => r.rows, align: 'right' },
        ],
        '  ',
      )
    : '';
  return `\nsyncrelay demo summary\n\n${unitTable}${tables}\n\n${pairs}\n\nlook again: ${lookAgain}`;
}
