/** The reconciler's scans: expired leases, materialization, pass log. */
import type { Tx } from '../db/types.js';
import { UNIT_TRANSITIONS } from '../domain/statuses.js';
import type { UnitRow } from './rows.js';
import {
  DISPATCH,
  OUTBOX_DISPATCHED,
  OUTBOX_PENDING,
  RUN_OPEN,
  RUN_TERMINAL,
  sqlFrom,
  sqlKeyedIn,
  sqlLit,
  STALE,
  UNIT_LEASED,
  UNIT_OPEN,
  UNIT_PUBLISHED,
} from './sql.js';

const T = UNIT_TRANSITIONS;
/** The units lease expiry takes (whichever way each goes: retry or fail). */
const EXPIRE_FROM = sqlFrom(T.expire_retry, T.expire_fail);
// The expiries find their unit by id: its status is guarded through sqlKeyedIn (see there).
const EXPIRE_RETRY = { from: sqlKeyedIn(T.expire_retry.from), to: sqlLit(T.expire_retry.to) };
const EXPIRE_FAIL = { from: sqlKeyedIn(T.expire_fail.from), to: sqlLit(T.expire_fail.to) };

/** Running units whose lease expired under a live run, oldest first. Locks nothing. */
export async function findExpiredUnits(tx: Tx, now: Date, batch: number): Promise<UnitRow[]> {
  const s = tx.schema;
  const { rows } = await tx.query<UnitRow>(
    `SELECT u.* FROM ${s.sync_run_units} u JOIN ${s.sync_runs} r ON r.id = u.sync_run_id
      WHERE u.status IN ${EXPIRE_FROM} AND u.lease_expires_at <= $1 AND r.status NOT IN ${RUN_TERMINAL}
      ORDER BY u.lease_expires_at, u.id LIMIT $2`,
    [now, batch],
  );
  return rows;
}

export interface ExpireArgs {
  unitId: string;
  /** The owner and expiry observed by the scan: the CAS only succeeds if nothing changed. */
  owner: string;
  now: Date;
}

/**
 * Expired lease → retrying (eligible): lease cleared, count+1, reason expired_lease. The unit's
 * resume checkpoint is kept: why it is still valid, src/domain/checkpoint.ts.
 * Locks: the unit row. Returns the unit, or null if it changed since the scan.
 */
export async function expireToRetrying(tx: Tx, a: ExpireArgs & { availableAt: Date }): Promise<UnitRow | null> {
  const s = tx.schema;
  const { rows } = await tx.query<UnitRow>(
    `UPDATE ${s.sync_run_units} u
        SET status = ${EXPIRE_RETRY.to}, lease_owner = NULL, lease_expires_at = NULL,
            expired_lease_retry_count = u.expired_lease_retry_count + 1,
            last_retry_reason = 'expired_lease', available_at = $4, updated_at = $3
       FROM ${s.sync_runs} r
      WHERE u.id = $1 AND u.lease_owner = $2 AND u.status ${EXPIRE_RETRY.from} AND u.lease_expires_at <= $3
        AND r.id = u.sync_run_id AND r.status NOT IN ${RUN_TERMINAL}
      RETURNING u.*`,
    [a.unitId, a.owner, a.now, a.availableAt],
  );
  return rows[0] ?? null;
}

/**
 * Expired lease → failed (`worker_lost` or `worker_lost_retry_exhausted`); the checkpoint is cleared.
 * Locks: the unit row. Returns the unit, or null if it changed since the scan.
 */
export async function expireToFailed(
  tx: Tx,
  a: ExpireArgs & { category: 'worker_lost' | 'worker_lost_retry_exhausted' },
): Promise<UnitRow | null> {
  const s = tx.schema;
  const { rows } = await tx.query<UnitRow>(
    `UPDATE ${s.sync_run_units} u
        SET status = ${EXPIRE_FAIL.to}, lease_expires_at = NULL, resume_checkpoint = NULL,
            error = 'lease expired: worker lost',
            result = COALESCE(u.result, '{}'::jsonb) || jsonb_build_object('error_category', $4::text),
            retry_exhausted_at = CASE WHEN $4 = 'worker_lost_retry_exhausted' THEN $3::timestamptz END,
            duration_ms = GREATEST(0, (extract(epoch FROM ($3::timestamptz - u.started_at)) * 1000)::int),
            updated_at = $3
       FROM ${s.sync_runs} r
      WHERE u.id = $1 AND u.lease_owner = $2 AND u.status ${EXPIRE_FAIL.from} AND u.lease_expires_at <= $3
        AND r.id = u.sync_run_id AND r.status NOT IN ${RUN_TERMINAL}
      RETURNING u.*`,
    [a.unitId, a.owner, a.now, a.category],
  );
  return rows[0] ?? null;
}

type RunRef = { org_id: string; sync_run_id: string };

/**
 * Live runs with no non-terminal unit and no pending finalize row. Locks nothing.
 * Bounded by live runs (partial index), not history.
 */
export async function runsNeedingFinalize(tx: Tx, batch: number): Promise<RunRef[]> {
  const s = tx.schema;
  const { rows } = await tx.query<RunRef>(
    `SELECT r.org_id, r.id AS sync_run_id FROM ${s.sync_runs} r
      WHERE r.status IN ${RUN_OPEN}
        AND NOT EXISTS (SELECT 1 FROM ${s.sync_run_units} u WHERE u.sync_run_id = r.id AND u.status IN ${UNIT_OPEN})
        AND NOT EXISTS (SELECT 1 FROM ${s.sync_dispatch_outbox} o
                         WHERE o.sync_run_id = r.id AND o.kind = 'finalize_sync_run' AND o.status = ${OUTBOX_PENDING})
      ORDER BY r.created_at LIMIT $1`,
    [batch],
  );
  return rows;
}

/**
 * Live runs with a planned, stale dispatching or due retrying unit and no pending dispatch row,
 * whose dispatch would do something now: its last dispatch message went out before `staleBefore`
 * (presumed lost, as for a dispatching unit; or there never was one), or such a unit sits in a
 * bucket with free capacity — then, oldest runs first, at most as many runs per bucket as it has
 * free slots. A run whose bucket is full and whose dispatch message is merely still queued is left
 * alone: arming it on every pass would queue a duplicate each time, and behind a backlog the
 * duplicates outgrow what the workers can take. Locks nothing.
 */
export async function runsNeedingDispatch(
  tx: Tx,
  now: Date,
  staleBefore: Date,
  batch: number,
  cap: number,
): Promise<RunRef[]> {
  const s = tx.schema;
  const { rows } = await tx.query<RunRef>(
    `WITH busy AS (
       SELECT org_id, provider, cost_class, count(*)::int AS n FROM ${s.sync_run_units}
        WHERE (status = ${UNIT_PUBLISHED} AND updated_at > $2 AND dispatched_at IS NOT NULL)
           OR (status = ${UNIT_LEASED} AND (lease_expires_at IS NULL OR lease_expires_at > $1))
        GROUP BY org_id, provider, cost_class),
     waiting AS (
       SELECT DISTINCT r.org_id AS run_org, r.id, r.created_at, u.org_id, u.provider, u.cost_class,
              EXISTS (SELECT 1 FROM ${s.sync_dispatch_outbox} d
                       WHERE d.sync_run_id = r.id AND d.kind = 'dispatch_sync_run'
                        AND d.status = ${OUTBOX_DISPATCHED} AND d.dispatched_at > $2) AS queued
         FROM ${s.sync_runs} r JOIN ${s.sync_run_units} u ON u.sync_run_id = r.id
        WHERE r.status IN ${RUN_OPEN}
          AND (u.status = ${DISPATCH.planned}
            OR (u.status = ${STALE.dispatching} AND (u.updated_at <= $2 OR u.dispatched_at IS NULL))
            OR (u.status = ${DISPATCH.retrying} AND u.available_at <= $1))
          AND NOT EXISTS (SELECT 1 FROM ${s.sync_dispatch_outbox} o
                           WHERE o.sync_run_id = r.id AND o.kind = 'dispatch_sync_run'
                             AND o.status = ${OUTBOX_PENDING})),
     ranked AS (
       SELECT w.*, row_number() OVER (PARTITION BY w.org_id, w.provider, w.cost_class ORDER BY w.created_at, w.id) AS k,
              $4::int - COALESCE(b.n, 0) AS free
         FROM waiting w
         LEFT JOIN busy b ON b.org_id = w.org_id AND b.provider = w.provider AND b.cost_class = w.cost_class
        WHERE w.queued)
     SELECT run_org AS org_id, id AS sync_run_id FROM (
       SELECT run_org, id, created_at FROM waiting WHERE NOT queued
       UNION
       SELECT run_org, id, created_at FROM ranked WHERE k <= free
     ) x ORDER BY created_at, id LIMIT $3`,
    [now, staleBefore, batch, cap],
  );
  return rows;
}

/** Where a ledger scan slice ends: the oldest (dispatched_at, sync_run_id) it examined. */
export interface LedgerCursor {
  at: Date;
  runId: string;
}

/**
 * One slice of the ledger repair scan: of the `examine` newest post_sync ledger rows after `since`
 * and before `cursor` (all of them up to now when null), those with no post_sync outbox row at all
 * (finalize writes both in one transaction, so this repairs rows removed by hand). Only recent rows
 * are scanned, so pruned history is never re-armed; and only a slice per call, so the cost follows
 * `examine`, never the number of runs finished per day. Locks nothing. Returns the missing runs and
 * the slice's end (null when it reached `since`: the next scan starts from the newest again).
 */
export async function ledgerRowsWithoutPostSync(
  tx: Tx,
  since: Date,
  cursor: LedgerCursor | null,
  examine: number,
): Promise<{ missing: RunRef[]; next: LedgerCursor | null }> {
  const s = tx.schema;
  const { rows } = await tx.query<{ examined: number; at: Date | null; run_id: string | null; missing: RunRef[] }>(
    `WITH slice AS (
       SELECT l.org_id, l.sync_run_id, l.dispatched_at FROM ${s.sync_run_post_dispatches} l
        WHERE l.kind = 'post_sync' AND l.dispatched_at > $1
          AND ($2::timestamptz IS NULL OR (l.dispatched_at, l.sync_run_id) < ($2::timestamptz, $3::uuid))
        ORDER BY l.dispatched_at DESC, l.sync_run_id DESC LIMIT $4)
     SELECT count(*)::int AS examined,
            (array_agg(s.dispatched_at ORDER BY s.dispatched_at, s.sync_run_id))[1] AS at,
            (array_agg(s.sync_run_id ORDER BY s.dispatched_at, s.sync_run_id))[1] AS run_id,
            COALESCE(jsonb_agg(jsonb_build_object('org_id', s.org_id, 'sync_run_id', s.sync_run_id)) FILTER (
              WHERE NOT EXISTS (SELECT 1 FROM ${s.sync_dispatch_outbox} o
                                 WHERE o.sync_run_id = s.sync_run_id AND o.kind = 'post_sync')),
              '[]'::jsonb) AS missing
       FROM slice s`,
    [since, cursor?.at ?? null, cursor?.runId ?? null, examine],
  );
  const r = rows[0]!;
  const next = r.examined < examine || !r.at || !r.run_id ? null : { at: r.at, runId: r.run_id };
  return { missing: r.missing, next };
}

/** Appends a pass's counters to reconciler_passes. */
export async function recordPass(
  tx: Tx,
  p: { reconciler: string; startedAt: Date; finishedAt: Date; counters: object; error: string | null },
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.schema.reconciler_passes} (reconciler, started_at, finished_at, duration_ms, counters, error)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6)`,
    [
      p.reconciler,
      p.startedAt,
      p.finishedAt,
      Math.max(0, p.finishedAt.getTime() - p.startedAt.getTime()),
      JSON.stringify(p.counters),
      p.error,
    ],
  );
}
