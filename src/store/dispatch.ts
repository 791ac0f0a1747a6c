/** The statements dispatch_sync_run runs inside its one transaction. */
import type { Tx } from '../db/types.js';
import { UNIT_STATUSES, UNIT_TRANSITIONS, type UnitStatus } from '../domain/statuses.js';
import type { Bucket, DispatchedUnit } from './rows.js';
import { bucketKey } from './rows.js';
import { DISPATCH, KEYED, sqlEach, sqlList, sqlLit, STALE, UNIT_LEASED, UNIT_OPEN, UNIT_PUBLISHED } from './sql.js';

const T = UNIT_TRANSITIONS;
/** Where dispatch and redispatch_stale move units (one statement does both, so one status). */
const DISPATCH_TO = sqlLit(T.dispatch.to);
/** Units with dispatch work: planned, (stale or unpublished) dispatching, retrying — in the index's order. */
const CANDIDATE_FROM: readonly UnitStatus[] = [...T.dispatch.from, ...T.redispatch_stale.from];
const CANDIDATE_STATUSES = sqlList(UNIT_STATUSES.filter((u) => CANDIDATE_FROM.includes(u)));
/** Total-cap denial: planned and retrying units (due or not) at once, dispatching ones once stale. */
const DENY = { ...sqlEach(T.deny.from, 'planned', 'retrying', 'dispatching'), to: sqlLit(T.deny.to) };

if (T.redispatch_stale.to !== T.dispatch.to) {
  throw new Error('dispatch and redispatch_stale must move a unit to one status: claimDispatchCandidates does both');
}

/**
 * Takes transaction-scoped advisory locks on the buckets, in sorted order (no deadlocks between
 * dispatchers and the reconciler). Locks: one advisory lock per bucket until commit.
 */
export async function lockBuckets(tx: Tx, buckets: readonly Bucket[]): Promise<void> {
  const keys = [...new Set(buckets.map(bucketKey))].sort();
  for (const key of keys) {
    await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [tx.schema.lockKey(`bucket:${key}`)]);
  }
}

/** Buckets of this run's units that could be dispatched. Locks nothing. */
export async function candidateBuckets(tx: Tx, runId: string): Promise<Bucket[]> {
  const { rows } = await tx.query<Bucket>(
    `SELECT DISTINCT org_id, provider, cost_class FROM ${tx.schema.sync_run_units}
      WHERE sync_run_id = $1 AND status IN ${CANDIDATE_STATUSES}`,
    [runId],
  );
  return rows;
}

/**
 * Active units of a bucket across all runs: fresh dispatching, and running with a live or NULL
 * lease. Locks nothing (the bucket's advisory lock serialises dispatchers).
 */
export async function countActiveInBucket(tx: Tx, b: Bucket, now: Date, staleBefore: Date): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${tx.schema.sync_run_units}
      WHERE org_id = $1 AND provider = $2 AND cost_class = $3
        AND ((status = ${UNIT_PUBLISHED} AND updated_at > $5 AND dispatched_at IS NOT NULL)
          OR (status = ${UNIT_LEASED} AND (lease_expires_at IS NULL OR lease_expires_at > $4)))`,
    [b.org_id, b.provider, b.cost_class, now, staleBefore],
  );
  return rows[0]?.n ?? 0;
}

export interface CandidateArgs {
  runId: string;
  bucket: Bucket;
  limit: number;
  now: Date;
  staleBefore: Date;
  /** False while reference-tier units of the run are unfinished: work items wait for them. */
  includeWorkItems: boolean;
}

/**
 * Moves up to `limit` candidates (planned, stale dispatching, due retrying; reference tier first,
 * then by id) to dispatching, and takes the planned ones off the run's count. Locks: the claimed
 * unit rows (SKIP LOCKED) and the run row (its dispatcher holds it already). Returns what a
 * dispatch needs of them (DispatchedUnit).
 */
export async function claimDispatchCandidates(tx: Tx, a: CandidateArgs): Promise<DispatchedUnit[]> {
  if (a.limit <= 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<DispatchedUnit>(
    `WITH c AS (
       SELECT id, status FROM ${s.sync_run_units}
        WHERE sync_run_id = $1 AND org_id = $2 AND provider = $3 AND cost_class = $4
          AND ($8 OR tier = 'reference')
          AND (status = ${DISPATCH.planned}
            OR (status = ${STALE.dispatching} AND (updated_at <= $6 OR dispatched_at IS NULL))
            OR (status = ${DISPATCH.retrying} AND available_at <= $5))
        ORDER BY tier = 'reference' DESC, id
        LIMIT $7
        FOR UPDATE SKIP LOCKED),
     counted AS (
       UPDATE ${s.sync_runs}
          SET planned_units = planned_units - (SELECT count(*) FROM c WHERE c.status = ${DISPATCH.planned})
        WHERE id = $1 AND planned_units IS NOT NULL)
     UPDATE ${s.sync_run_units} u SET status = ${DISPATCH_TO}, dispatched_at = $5, updated_at = $5
       FROM c
      WHERE u.id = c.id
      RETURNING u.id, u.org_id, u.sync_run_id, u.status, u.tier, u.dispatched_at, u.updated_at`,
    [
      a.runId,
      a.bucket.org_id,
      a.bucket.provider,
      a.bucket.cost_class,
      a.now,
      a.staleBefore,
      a.limit,
      a.includeWorkItems,
    ],
  );
  return rows;
}

export interface DispatchState {
  /** planned units, plus stale dispatching and due retrying ones: what could still be dispatched. */
  waiting: number;
  /** retrying units not yet due, and the earliest time one comes due. */
  notDueRetrying: number;
  nextRetryAt: Date | null;
  /** fresh dispatching + running units. */
  inFlight: number;
  /** unfinished reference-tier units. */
  openReference: number;
  total: number;
}

/** What is left of a run after dispatching. Locks nothing. */
export async function dispatchState(tx: Tx, runId: string, now: Date, staleBefore: Date): Promise<DispatchState> {
  const { rows } = await tx.query<DispatchState>(
    `SELECT
       count(*) FILTER (WHERE status = ${DISPATCH.planned}
                          OR (status = ${STALE.dispatching} AND (updated_at <= $3 OR dispatched_at IS NULL))
                          OR (status = ${DISPATCH.retrying} AND available_at <= $2))::int AS waiting,
       count(*) FILTER (WHERE status = ${DISPATCH.retrying} AND available_at > $2)::int AS "notDueRetrying",
       min(available_at) FILTER (WHERE status = ${DISPATCH.retrying} AND available_at > $2) AS "nextRetryAt",
       count(*) FILTER (WHERE (status = ${UNIT_PUBLISHED} AND updated_at > $3 AND dispatched_at IS NOT NULL)
                          OR status = ${UNIT_LEASED})::int AS "inFlight",
       count(*) FILTER (WHERE tier = 'reference' AND status IN ${UNIT_OPEN})::int AS "openReference",
       count(*)::int AS total
     FROM ${tx.schema.sync_run_units} WHERE sync_run_id = $1`,
    [runId, now, staleBefore],
  );
  return rows[0]!;
}

/**
 * Total-cap denial: planned and stale dispatching units → failed (`dispatch_denied`), checkpoints
 * cleared; none is planned any more. Locks: those unit rows and the run row (its dispatcher holds
 * it). Returns their ids.
 */
export async function denyUnits(tx: Tx, runId: string, now: Date, staleBefore: Date): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `WITH counted AS (
       UPDATE ${tx.schema.sync_runs} SET planned_units = 0 WHERE id = $1 AND planned_units IS NOT NULL)
     UPDATE ${tx.schema.sync_run_units} SET status = ${DENY.to}, error = 'run exceeds SYNC_RUN_MAX_UNITS',
            result = jsonb_build_object('error_category', 'dispatch_denied'), resume_checkpoint = NULL,
            updated_at = $2
      WHERE sync_run_id = $1
        AND (status IN (${DENY.planned}, ${DENY.retrying})
          OR (status = ${DENY.dispatching} AND (updated_at <= $3 OR dispatched_at IS NULL)))
      RETURNING id`,
    [runId, now, staleBefore],
  );
  return rows.map((r) => r.id);
}

/**
 * The publish of these units failed: mark them unpublished (dispatched_at NULL) so the re-armed
 * dispatch re-publishes them at once instead of waiting for the stale threshold. Guarded by the
 * dispatch time we set, so a unit already claimed is untouched. Locks: those rows.
 */
export async function markUnitsUnpublished(
  tx: Tx,
  units: readonly { id: string; dispatched_at: Date | null }[],
): Promise<number> {
  if (units.length === 0) return 0;
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.sync_run_units} u SET dispatched_at = NULL
       FROM unnest($1::uuid[], $2::timestamptz[]) AS p(id, at)
      WHERE u.id = p.id AND u.status ${KEYED.published} AND u.dispatched_at = p.at`,
    [units.map((x) => x.id), units.map((x) => x.dispatched_at)],
  );
  return rowCount;
}
