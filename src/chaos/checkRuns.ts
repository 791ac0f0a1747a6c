/** SPEC §12 for runs, JobRuns, post_sync deliveries, unit counts and watermarks, from rows and their audit log. */
import type { Db } from '../db/types.js';
import { aggregateRun, jobRunStatusFor } from '../domain/aggregate.js';
import { isTerminalRun, WATERMARK_MODES, type RunStatus } from '../domain/statuses.js';
import { METRICS_ROLLUP } from '../providers/synthetic/metricsRollup.js';
import { auditTables } from './database.js';
import { chaosDeliveryHandler } from './deliveries.js';
import { finding, type CheckContext, type InvariantResult } from './findings.js';

const TERMINAL = "('success','partial_failed','failed','cancelled')";
const JOB_TERMINAL = "('success','failed','cancelled')";

export async function checkTerminalWithinBound(db: Db, ctx: CheckContext): Promise<InvariantResult> {
  const { rows } = await db.query<{ id: string; status: string; completed_at: Date | null }>(
    `SELECT id, status, completed_at FROM ${db.schema.sync_runs} WHERE org_id = $1`,
    [ctx.orgId],
  );
  const examples: string[] = [];
  const seen = new Set(rows.map((r) => r.id));
  for (const id of ctx.runs.keys()) if (!seen.has(id)) examples.push(`run ${id}: triggered but not in the database`);
  for (const r of rows) {
    const terminal = ['success', 'partial_failed', 'failed', 'cancelled'].includes(r.status);
    if (!terminal || !r.completed_at) {
      examples.push(`run ${r.id}: still ${r.status}; ${await whyOpen(db, r.id)}`);
      continue;
    }
    const late = r.completed_at.getTime() - ctx.faultsStoppedAt - ctx.boundMs;
    if (late > 0 && !ctx.unbounded?.has(r.id)) {
      const after = Math.round((r.completed_at.getTime() - ctx.faultsStoppedAt) / 100) / 10;
      examples.push(
        `run ${r.id}: terminal ${after} s after the faults stopped (bound ${ctx.boundMs / 1000} s); ` +
          `${await whyOpen(db, r.id)}`,
      );
    }
  }
  return finding(
    'runs_terminal_within_bound',
    'every committed run terminal within lease + reconcile interval + slack after the faults stop',
    {
      checked: `${rows.length} runs, bound ${ctx.boundMs / 1000} s`,
      examples,
    },
  );
}

/** What a late or open run was waiting for: its units and the last changes of its outbox rows. */
async function whyOpen(db: Db, runId: string): Promise<string> {
  const s = db.schema;
  const a = auditTables(s);
  const { rows: units } = await db.query<{ status: string; n: number; last: Date | null }>(
    `SELECT u.status, count(*)::int AS n, max(e.at) AS last FROM ${s.sync_run_units} u
       LEFT JOIN LATERAL (SELECT at FROM ${a.unitEvents} e WHERE e.unit_id = u.id ORDER BY e.id DESC LIMIT 1) e ON true
      WHERE u.sync_run_id = $1 GROUP BY u.status`,
    [runId],
  );
  type OutboxEvent = {
    at: Date;
    kind: string;
    status: string;
    attempts: number;
    claimed: boolean;
    available_at: Date;
    last_error: string | null;
  };
  const { rows: outbox } = await db.query<OutboxEvent>(
    `SELECT * FROM (SELECT at, kind, status, attempts, claimed, available_at, last_error FROM ${a.outboxEvents}
                      WHERE run_id = $1 ORDER BY id DESC LIMIT 6) x ORDER BY at`,
    [runId],
  );
  const t = (d: Date) => d.toISOString().slice(11, 23);
  const u = units.map((x) => `${x.n} ${x.status} (last change ${x.last ? t(x.last) : '-'})`);
  const o = outbox.map(
    (x) =>
      `${t(x.at)} ${x.kind} ${x.status}${x.claimed ? ' claimed' : ''} attempts ${x.attempts} ` +
      `due ${t(x.available_at)}${x.last_error ? ` error "${x.last_error}"` : ''}`,
  );
  const last = await lastUnitHistory(db, runId);
  return `units: ${u.join(', ')}; last outbox changes: ${o.join(' | ') || 'none'}; last unit's changes: ${last}`;
}

/** The status and owner changes of the run's unit that changed last: where its time went. */
async function lastUnitHistory(db: Db, runId: string): Promise<string> {
  const s = db.schema;
  const a = auditTables(s);
  const { rows } = await db.query<{
    at: Date;
    old_status: string | null;
    new_status: string;
    new_owner: string | null;
  }>(
    `SELECT e.at, e.old_status, e.new_status, e.new_owner FROM ${a.unitEvents} e
      WHERE e.unit_id = (SELECT e2.unit_id FROM ${a.unitEvents} e2 JOIN ${s.sync_run_units} u ON u.id = e2.unit_id
                          WHERE u.sync_run_id = $1 ORDER BY e2.id DESC LIMIT 1)
      ORDER BY e.id DESC LIMIT 12`,
    [runId],
  );
  const t = (d: Date) => d.toISOString().slice(11, 23);
  return (
    rows
      .reverse()
      .filter((r) => r.old_status !== r.new_status || r.new_owner !== null)
      .map((r) => `${t(r.at)} ${r.old_status ?? '-'}→${r.new_status}${r.new_owner ? ` (${r.new_owner})` : ''}`)
      .join(' | ') || 'none'
  );
}

/** Each run became terminal exactly once and never changed after; its one JobRun agrees with it. */
export async function checkTerminalOnce(db: Db, ctx: CheckContext): Promise<InvariantResult> {
  const s = db.schema;
  const a = auditTables(s);
  const { rows } = await db.query<{
    id: string;
    status: RunStatus;
    completed_units: number;
    failed_units: number;
    became: number;
    left: number;
    jobs: number;
    job_id: string | null;
    job_status: string | null;
    job_completed: string | null;
    job_failed: string | null;
    job_became: number;
    job_left: number;
  }>(
    `SELECT r.id, r.status, r.completed_units, r.failed_units,
            (SELECT count(*)::int FROM ${a.runEvents} e WHERE e.run_id = r.id AND e.new_status IN ${TERMINAL}
               AND (e.old_status IS NULL OR e.old_status NOT IN ${TERMINAL})) AS became,
            (SELECT count(*)::int FROM ${a.runEvents} e
              WHERE e.run_id = r.id AND e.old_status IN ${TERMINAL}) AS left,
            (SELECT count(*)::int FROM ${s.job_runs} j WHERE j.result ->> 'sync_run_id' = r.id::text) AS jobs,
            j.id AS job_id, j.status AS job_status, j.result ->> 'completed_units' AS job_completed,
            j.result ->> 'failed_units' AS job_failed,
            (SELECT count(*)::int FROM ${a.jobRunEvents} e
              WHERE e.job_run_id = j.id AND e.new_status IN ${JOB_TERMINAL}) AS job_became,
            (SELECT count(*)::int FROM ${a.jobRunEvents} e
              WHERE e.job_run_id = j.id AND e.old_status IN ${JOB_TERMINAL}) AS job_left
       FROM ${s.sync_runs} r
       LEFT JOIN LATERAL (SELECT * FROM ${s.job_runs} j WHERE j.result ->> 'sync_run_id' = r.id::text
                           ORDER BY j.created_at LIMIT 1) j ON true
      WHERE r.org_id = $1`,
    [ctx.orgId],
  );
  const examples: string[] = [];
  for (const r of rows) {
    // A run still open at the check is the liveness invariant's finding, not this one's.
    const open = !isTerminalRun(r.status);
    if (r.became > 1 || (r.became === 0 && !open)) examples.push(`run ${r.id}: became terminal ${r.became} times`);
    if (r.left > 0) examples.push(`run ${r.id}: changed status ${r.left} times after it was terminal`);
    if (r.jobs !== 1) {
      examples.push(`run ${r.id}: ${r.jobs} JobRuns`);
      continue;
    }
    if (r.job_status !== jobRunStatusFor(r.status))
      examples.push(`run ${r.id} is ${r.status} but JobRun ${String(r.job_id)} is ${String(r.job_status)}`);
    if (r.job_completed !== null && Number(r.job_completed) !== r.completed_units) {
      examples.push(
        `run ${r.id}: ${r.completed_units} completed units but JobRun ${String(r.job_id)} says ${r.job_completed}`,
      );
    }
    if (r.job_failed !== null && Number(r.job_failed) !== r.failed_units) {
      examples.push(`run ${r.id}: ${r.failed_units} failed units but JobRun ${String(r.job_id)} says ${r.job_failed}`);
    }
    if (r.job_became > 1 || (r.job_became === 0 && !open) || r.job_left > 0) {
      examples.push(
        `JobRun ${String(r.job_id)} (run ${r.id}): became terminal ${r.job_became} times, ` +
          `changed ${r.job_left} times after`,
      );
    }
  }
  return finding('run_terminal_once_job_run_agrees', 'each run terminal exactly once; its JobRun agrees', {
    checked: `${rows.length} runs and their JobRuns`,
    examples,
  });
}

/** Distinct computed_at generations of the metrics roll-up per run (the readers' view of post_sync). */
/**
 * The handlers whose deliveries write a generation row: the synthetic roll-up, and the chaos
 * run's counter for a provider's runs (./deliveries.ts; work-item-metrics runs beside it).
 */
const COUNTED_HANDLERS = [METRICS_ROLLUP, chaosDeliveryHandler.name];

export async function checkPostSync(db: Db, ctx: CheckContext): Promise<InvariantResult> {
  const s = db.schema;
  const { rows } = await db.query<{ id: string; successes: number; generations: number; receipts: number }>(
    `SELECT r.id,
            (SELECT count(*)::int FROM ${s.sync_run_units} u
              WHERE u.sync_run_id = r.id AND u.status = 'success') AS successes,
            (SELECT count(DISTINCT m.computed_at)::int FROM ${s.table('synthetic_metrics_daily')} m
              WHERE m.sync_run_id = r.id) AS generations,
            (SELECT count(*)::int FROM ${s.post_sync_receipts} p
              WHERE p.sync_run_id = r.id AND p.handler = ANY($2::text[])) AS receipts
       FROM ${s.sync_runs} r WHERE r.org_id = $1`,
    [ctx.orgId, COUNTED_HANDLERS],
  );
  const exactly = ctx.postSync === 'exactly-once';
  const examples: string[] = [];
  for (const r of rows) {
    const expected = r.successes > 0 ? 1 : 0;
    if (r.generations > expected || (exactly && r.generations !== expected)) {
      examples.push(
        `run ${r.id}: ${r.generations} post_sync generations (${r.successes} successful units, ${r.receipts} receipts)`,
      );
    }
    if (exactly && r.receipts !== expected)
      examples.push(`run ${r.id}: ${r.receipts} receipts for ${expected} expected deliveries`);
  }
  const delivered = rows.filter((r) => r.generations === 1).length;
  const due = rows.filter((r) => r.successes > 0).length;
  return finding(
    exactly ? 'post_sync_exactly_once' : 'post_sync_at_most_once',
    exactly
      ? 'post_sync handlers ran exactly once per run with successful units'
      : 'post_sync handlers ran at most once per run',
    { checked: `${rows.length} runs, ${due} with successful units, ${delivered} delivered`, examples },
  );
}

/**
 * total = completed + failed + cancelled, each equal to the unit rows, the status their aggregate,
 * and the run's count of planned units (kept by planning and dispatch) back at zero.
 */
export async function checkCounts(db: Db, ctx: CheckContext): Promise<InvariantResult> {
  const { rows } = await db.query<{
    id: string;
    status: RunStatus;
    total_units: number;
    planned_units: number | null;
    completed_units: number;
    failed_units: number;
    cancelled_units: number;
    n: number;
    success: number;
    failed: number;
    cancelled: number;
    open: number;
  }>(
    `SELECT r.id, r.status, r.total_units, r.planned_units, r.completed_units, r.failed_units,
            COALESCE((r.result ->> 'cancelled_units')::int, 0) AS cancelled_units,
            count(u.id)::int AS n,
            count(u.id) FILTER (WHERE u.status = 'success')::int AS success,
            count(u.id) FILTER (WHERE u.status = 'failed')::int AS failed,
            count(u.id) FILTER (WHERE u.status = 'cancelled')::int AS cancelled,
            count(u.id) FILTER (WHERE u.status NOT IN ('success', 'failed', 'cancelled'))::int AS open
       FROM ${db.schema.sync_runs} r LEFT JOIN ${db.schema.sync_run_units} u ON u.sync_run_id = r.id
      WHERE r.org_id = $1 AND r.status IN ${TERMINAL}
      GROUP BY r.id`,
    [ctx.orgId],
  );
  const examples: string[] = [];
  for (const r of rows) {
    const stored = `total ${r.total_units} = ${r.completed_units} + ${r.failed_units} + ${r.cancelled_units}`;
    const actual = `${r.n} units: ${r.success} success, ${r.failed} failed, ${r.cancelled} cancelled, ${r.open} open`;
    if (r.total_units !== r.completed_units + r.failed_units + r.cancelled_units)
      examples.push(`run ${r.id}: ${stored} does not add up`);
    else if (
      r.total_units !== r.n ||
      r.completed_units !== r.success ||
      r.failed_units !== r.failed ||
      r.cancelled_units !== r.cancelled ||
      r.open > 0
    ) {
      examples.push(`run ${r.id}: ${stored}, but ${actual}`);
    }
    if (r.planned_units !== null && r.planned_units !== 0)
      examples.push(`run ${r.id} is ${r.status} but counts ${r.planned_units} planned units (${actual})`);
    const agg = aggregateRun({ success: r.success, failed: r.failed, cancelled: r.cancelled });
    if (r.status !== 'cancelled' && agg && agg.status !== r.status)
      examples.push(`run ${r.id} is ${r.status} but its units say ${agg.status} (${actual})`);
  }
  const what = 'total_units = completed + failed (+ cancelled), matching the unit rows; no planned unit counted';
  return finding('unit_counts_match', what, {
    checked: `${rows.length} terminal runs`,
    examples,
  });
}

/**
 * Every watermark change moved it forward, was made in the transaction of a successful unit of a
 * mode that moves watermarks (WATERMARK_MODES: incremental, full_resync; never a backfill or a
 * verify) of that source and dataset (to that unit's window end), and each watermark ends at the
 * furthest such window end.
 */
export async function checkWatermarks(db: Db): Promise<InvariantResult> {
  const s = db.schema;
  const a = auditTables(s);
  // Unit ends may share a transaction (group commit): a change is attributed to the units of its
  // transaction that ended successfully on that source and dataset with a window holding the new
  // watermark — at its end, or short of it where the provider read less than the window completely
  // (a list still changing, a page cap: it hands back how far it read, the window's start at least).
  type Change = {
    id: string;
    source_id: string;
    dataset_key: string;
    old_at: Date | null;
    new_at: Date;
    writers: number;
    /** Successful units of that transaction whose mode moves no watermark: `<mode> unit <id>`. */
    others: string[] | null;
  };
  const { rows: changes } = await db.query<Change>(
    `SELECT w.id::text, w.source_id, w.dataset_key, w.old_at, w.new_at,
            count(u.id) FILTER (WHERE u.mode = ANY ($1::text[]))::int AS writers,
            array_agg(u.mode || ' unit ' || u.id::text) FILTER (WHERE NOT u.mode = ANY ($1::text[])) AS others
       FROM ${a.watermarkEvents} w
       LEFT JOIN ${a.unitEvents} e ON e.tx = w.tx AND e.new_status = 'success'
       LEFT JOIN ${s.sync_run_units} u ON u.id = e.unit_id AND u.source_id = w.source_id
                                 AND (u.dataset_key = w.dataset_key OR w.dataset_key = ANY (u.carried_datasets))
                                 AND w.new_at <= u.before_at AND (u.since_at IS NULL OR w.new_at >= u.since_at)
      GROUP BY w.id ORDER BY w.id`,
    [WATERMARK_MODES],
  );
  const examples: string[] = [];
  for (const c of changes) {
    const what = `watermark of source ${c.source_id} / ${c.dataset_key} (change ${c.id})`;
    if (c.old_at && c.new_at.getTime() <= c.old_at.getTime())
      examples.push(`${what} moved back from ${c.old_at.toISOString()} to ${c.new_at.toISOString()}`);
    if (c.writers === 0 && c.others?.length)
      examples.push(`${what} moved to ${c.new_at.toISOString()} by ${String(c.others[0])}`);
    else if (c.writers === 0)
      examples.push(
        `${what} moved to ${c.new_at.toISOString()} without a successful incremental / full_resync unit ending there`,
      );
  }
  type Final = { source_id: string; dataset_key: string; watermark_at: Date; furthest: Date | null };
  const { rows: finals } = await db.query<Final>(
    `SELECT w.source_id, w.dataset_key, w.watermark_at,
            (SELECT max(u.before_at) FROM ${s.sync_run_units} u
              WHERE u.integration_id = w.integration_id AND u.source_id = w.source_id
               AND (u.dataset_key = w.dataset_key OR w.dataset_key = ANY (u.carried_datasets))
               AND u.status = 'success' AND u.mode = ANY ($1::text[])) AS furthest
       FROM ${s.sync_watermarks} w`,
    [WATERMARK_MODES],
  );
  // A watermark never passes the furthest window read completely; it may stay short of it where the
  // unit of that window read less (each change above is checked to lie in its writer's window).
  for (const f of finals) {
    if (!f.furthest || f.watermark_at.getTime() > f.furthest.getTime()) {
      examples.push(
        `watermark of source ${f.source_id} / ${f.dataset_key} is ${f.watermark_at.toISOString()}, ` +
          `past the furthest successful incremental / full_resync window end ${f.furthest?.toISOString() ?? '(none)'}`,
      );
    }
  }
  return finding(
    'watermarks_forward_never_backfill',
    'watermarks only moved forward and never for a backfill or a verify',
    {
      checked: `${changes.length} watermark changes, ${finals.length} watermarks`,
      examples,
    },
  );
}
