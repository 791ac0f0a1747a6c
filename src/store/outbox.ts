/** sync_dispatch_outbox: wake-up upsert, batch claim, token-guarded mark / publish-failed, pruning. */
import type { DbSchema } from '../db/schema.js';
import type { Tx } from '../db/types.js';
import { OUTBOX_TRANSITIONS, UNIT_TRANSITIONS, type OutboxKind } from '../domain/statuses.js';
import type { OutboxRow } from './rows.js';
import { OUTBOX_DISPATCHED, OUTBOX_PENDING, RUN_OPEN, RUN_TERMINAL, sqlList, sqlLit, STALE, UNIT_OPEN } from './sql.js';

/** The arm transition (any row → pending) and the mark (pending → dispatched), as SQL. */
const ARM_TO = sqlLit(OUTBOX_TRANSITIONS.arm.to);
const MARK_FROM = sqlList(OUTBOX_TRANSITIONS.mark_dispatched.from);
const MARK_TO = sqlLit(OUTBOX_TRANSITIONS.mark_dispatched.to);
/** Units a dispatch would take, due or not (planned, retrying). */
const DISPATCH_FROM = sqlList(UNIT_TRANSITIONS.dispatch.from);

export interface ArmTarget {
  orgId: string;
  runId: string;
}

/** One wake-up: the row of (run, kind) becomes pending and due at `availableAt` (earliest wins). */
export interface Wake {
  kind: OutboxKind;
  orgId: string;
  runId: string;
  availableAt: Date;
  trace?: Record<string, string> | null;
}

/**
 * The upsert's conflict rule, shared by every statement that arms rows (`o` is the outbox row,
 * `now` the parameter holding the time): earliest wins among pending, unclaimed rows; a dispatched
 * row, or one being published under a live claim, takes the new time; an expired claim is cleared
 * and `arm_seq` bumps so a mark made under the old arm leaves the row pending.
 * A row already pending, unclaimed and due no later, asked for without a trace, is left as it is:
 * the update would change nothing the relay reads. It is still locked (ON CONFLICT locks the row
 * whether or not it updates it), so a relay claim of it waits for the caller's commit and the
 * dispatch it publishes sees what the caller freed. Without this, every unit end of a large run
 * wrote a new version of that run's one dispatch row: the ends queued on it and the relay's claims
 * walked the dead versions.
 */
export function armConflictSql(now: string): string {
  return `ON CONFLICT (sync_run_id, kind) DO UPDATE SET
         available_at = CASE
           WHEN o.status = ${OUTBOX_PENDING} AND (o.claim_expires_at IS NULL OR o.claim_expires_at <= ${now})
             THEN LEAST(o.available_at, EXCLUDED.available_at)
           ELSE EXCLUDED.available_at END,
         status = ${ARM_TO},
         dispatched_at = NULL,
         claim_token = CASE WHEN o.claim_expires_at > ${now} THEN o.claim_token END,
         claim_expires_at = CASE WHEN o.claim_expires_at > ${now} THEN o.claim_expires_at END,
         arm_seq = o.arm_seq + 1,
         trace_context = COALESCE(EXCLUDED.trace_context, o.trace_context),
         updated_at = ${now}
       WHERE NOT (o.status = ${OUTBOX_PENDING} AND o.claim_token IS NULL AND o.dispatched_at IS NULL
                  AND o.available_at <= EXCLUDED.available_at AND EXCLUDED.trace_context IS NULL)`;
}

/** armConflictSql with the time in $6, as armOutboxRows binds it. */
const ARM_CONFLICT = armConflictSql('$6');

/** The one order every writer locks outbox rows in: by run id, then kind (as the relay's marks do). */
function byRunThenKind(a: Wake, b: Wake): number {
  if (a.runId !== b.runId) return a.runId < b.runId ? -1 : 1;
  return a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0;
}

/**
 * Every wake-up of the caller's transaction in ONE statement, so a transaction never holds one
 * outbox row while it waits for another in a different order than the others: rows are locked by
 * (run id, kind), the order of the relay's marks. Duplicates of one (run, kind) merge (earliest
 * time, first trace).
 * Locks: the upserted outbox rows. Earliest wins among pending, unclaimed rows; a dispatched row,
 * or one being published under a live claim, takes the new time; an expired claim is cleared and
 * `arm_seq` bumps so a mark made under the old arm leaves the row pending. NOTIFYs the relay on the
 * schema's channel (delivered only if the caller's transaction commits) when a row it changed is
 * due now. Returns the ids of the rows asked for, changed or left as they were.
 */
export async function armOutboxRows(tx: Tx, wakes: readonly Wake[], now: Date): Promise<string[]> {
  if (wakes.length === 0) return [];
  const merged = new Map<string, Wake>();
  for (const w of wakes) {
    const key = `${w.runId}/${w.kind}`;
    const seen = merged.get(key);
    if (!seen) merged.set(key, w);
    else
      merged.set(key, {
        ...seen,
        availableAt: w.availableAt < seen.availableAt ? w.availableAt : seen.availableAt,
        trace: seen.trace ?? w.trace,
      });
  }
  const sorted = [...merged.values()].sort(byRunThenKind);
  const s = tx.schema;
  const { rows } = await tx.query<{ id: string }>(
    `WITH t AS (
       SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::timestamptz[], $5::jsonb[])
                WITH ORDINALITY AS t(org_id, run_id, kind, available_at, trace, n)),
     armed AS (
       INSERT INTO ${s.sync_dispatch_outbox} AS o
         (org_id, sync_run_id, kind, status, available_at, trace_context, created_at, updated_at)
       SELECT t.org_id, t.run_id, t.kind, ${ARM_TO}, t.available_at, t.trace, $6, $6 FROM t ORDER BY t.n
       ${ARM_CONFLICT}
       RETURNING o.id, o.kind, o.available_at
     )
     SELECT id, CASE WHEN available_at <= $6 THEN pg_notify($7, kind) END AS notified FROM armed
     UNION ALL
     SELECT o.id, NULL FROM ${s.sync_dispatch_outbox} o JOIN t ON o.sync_run_id = t.run_id AND o.kind = t.kind
      WHERE o.id NOT IN (SELECT id FROM armed)`,
    [
      sorted.map((w) => w.orgId),
      sorted.map((w) => w.runId),
      sorted.map((w) => w.kind),
      sorted.map((w) => w.availableAt),
      sorted.map((w) => (w.trace ? JSON.stringify(w.trace) : null)),
      now,
      s.channel,
    ],
  );
  return rows.map((r) => r.id);
}

/** Wake-ups of one kind for several runs at one time (see armOutboxRows). */
export async function armOutbox(
  tx: Tx,
  kind: OutboxKind,
  targets: readonly ArmTarget[],
  availableAt: Date,
  now: Date,
  trace?: Record<string, string> | null,
): Promise<string[]> {
  return armOutboxRows(
    tx,
    targets.map((t) => ({ kind, orgId: t.orgId, runId: t.runId, availableAt, trace })),
    now,
  );
}

/** What the relay re-checks about a claimed row's run (read in the claim's own statement). */
export interface RunFacts {
  /** The run is planned or dispatching. */
  run_live: boolean;
  /** The run has a non-terminal unit. */
  run_open: boolean;
  /** The run has a planned, due-or-not retrying, or stale / unpublished dispatching unit. */
  run_needs_dispatch: boolean;
}

export type ClaimedOutboxRow = OutboxRow & RunFacts;

/** The default SYNC_UNIT_DISPATCH_STALE_SECONDS, for callers that do not pass their own. */
const DEFAULT_STALE_MS = 900_000;

/**
 * Claims up to `batch` due rows with a fresh claim token (clearing the last attempt's error: what
 * fails from here on records its own), and reads the facts the relay re-checks about each row's
 * run (one probe per row on the unit indexes, so the cost follows the batch).
 * Locks: the due rows (FOR UPDATE SKIP LOCKED, so replicas never block or double-claim).
 * Returns the claimed rows, attempts already incremented, in (available_at, id) order. The due ids
 * are gathered into an array first, so the update probes the primary key instead of joining the
 * whole table.
 */
export async function claimDueOutboxRows(
  tx: Tx,
  now: Date,
  claimExpiresAt: Date,
  batch: number,
  staleBefore: Date = new Date(now.getTime() - DEFAULT_STALE_MS),
): Promise<ClaimedOutboxRow[]> {
  const s = tx.schema;
  const { rows } = await tx.query<ClaimedOutboxRow>(
    `UPDATE ${s.sync_dispatch_outbox} o
        SET claim_token = gen_random_uuid(), claim_expires_at = $2, attempts = o.attempts + 1,
            claimed_arm_seq = o.arm_seq, last_error = NULL, updated_at = $1
      WHERE o.id = ANY (ARRAY(
              SELECT id FROM ${s.sync_dispatch_outbox}
               WHERE status = ${OUTBOX_PENDING} AND available_at <= $1
                 AND (claim_expires_at IS NULL OR claim_expires_at <= $1)
               ORDER BY available_at, id
               LIMIT $3
               FOR UPDATE SKIP LOCKED))
      RETURNING o.*,
        COALESCE((SELECT r.status IN ${RUN_OPEN} FROM ${s.sync_runs} r WHERE r.id = o.sync_run_id), false) AS run_live,
        EXISTS (SELECT 1 FROM ${s.sync_run_units} u WHERE u.sync_run_id = o.sync_run_id
                  AND u.status IN ${UNIT_OPEN}) AS run_open,
        EXISTS (SELECT 1 FROM ${s.sync_run_units} u WHERE u.sync_run_id = o.sync_run_id
                  AND (u.status IN ${DISPATCH_FROM}
                    OR (u.status = ${STALE.dispatching} AND (u.updated_at <= $4 OR u.dispatched_at IS NULL))))
          AS run_needs_dispatch`,
    [now, claimExpiresAt, batch, staleBefore],
  );
  return rows.sort((a, b) => a.available_at.getTime() - b.available_at.getTime() || a.id.localeCompare(b.id));
}

/**
 * Locks the still-claimed rows of ($1 ids, $2 tokens) with a live claim at $3, in
 * (sync_run_id, kind) order — the order wake-ups use — so marks and wake-ups do not deadlock.
 * Every claim gives each row its own fresh random token, so "id among ours AND token among ours"
 * holds exactly for a row still under one of our claims; both are array lookups, so the plan
 * probes the primary key whatever the batch size (a join with unnest could go quadratic).
 */
function lockClaimedSql(s: DbSchema): string {
  return `SELECT o.id FROM ${s.sync_dispatch_outbox} o
  WHERE o.id = ANY ($1::uuid[]) AND o.claim_token = ANY ($2::uuid[])
    AND o.status = ${OUTBOX_PENDING} AND o.claim_expires_at > $3
  ORDER BY o.sync_run_id, o.kind FOR UPDATE OF o`;
}

export interface ClaimRef {
  id: string;
  claimToken: string;
}

/**
 * Marks claimed rows dispatched. Guard: id, claim token, pending, live claim — a stale relay's mark
 * changes nothing. A row re-armed since it was claimed stays pending (claim cleared) and keeps the
 * error recorded since the claim: a producer whose own publish failed re-arms the row for a backoff
 * and records why, and only that error lets a pass see the row as parked and wake it once the
 * broker answers (cleared here, the row sat out the whole backoff on a healthy broker).
 * Locks: the marked rows. Returns ids whose mark took effect (dispatched or left re-armed).
 */
export async function markOutboxDispatched(tx: Tx, refs: readonly ClaimRef[], now: Date): Promise<string[]> {
  if (refs.length === 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<{ id: string }>(
    `WITH locked AS (${lockClaimedSql(s)})
     UPDATE ${s.sync_dispatch_outbox} o
        SET status = CASE WHEN o.arm_seq = o.claimed_arm_seq THEN ${MARK_TO} ELSE ${OUTBOX_PENDING} END,
            dispatched_at = CASE WHEN o.arm_seq = o.claimed_arm_seq THEN $3::timestamptz END,
            claim_token = NULL, claim_expires_at = NULL,
            last_error = CASE WHEN o.arm_seq = o.claimed_arm_seq THEN NULL ELSE o.last_error END, updated_at = $3
       FROM locked WHERE o.id = locked.id
      RETURNING o.id`,
    [refs.map((r) => r.id), refs.map((r) => r.claimToken), now],
  );
  return rows.map((r) => r.id);
}

export interface PublishFailure extends ClaimRef {
  retryAt: Date;
  error: string;
}

/**
 * Returns claimed rows to pending without a claim, with `last_error` and a backoff time.
 * Same guard as the mark. Locks: those rows. Returns the ids it changed.
 */
export async function markOutboxPublishFailed(
  tx: Tx,
  failures: readonly PublishFailure[],
  now: Date,
): Promise<string[]> {
  if (failures.length === 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<{ id: string }>(
    `WITH f AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[])
                  AS f(id, token, retry_at, error)),
          locked AS (SELECT o.id FROM ${s.sync_dispatch_outbox} o JOIN f ON f.id = o.id AND f.token = o.claim_token
                      WHERE o.status = ${OUTBOX_PENDING} AND o.claim_expires_at > $5
                      ORDER BY o.sync_run_id, o.kind FOR UPDATE OF o)
     UPDATE ${s.sync_dispatch_outbox} o
        SET claim_token = NULL, claim_expires_at = NULL, available_at = f.retry_at,
            last_error = left(f.error, 2000), updated_at = $5
       FROM f, locked WHERE o.id = f.id AND o.id = locked.id
      RETURNING o.id`,
    [
      failures.map((f) => f.id),
      failures.map((f) => f.claimToken),
      failures.map((f) => f.retryAt),
      failures.map((f) => f.error),
      now,
    ],
  );
  return rows.map((r) => r.id);
}

/** Pending rows a failed publish parked: last_error set, due later, no live claim. */
const PARKED = `status = ${OUTBOX_PENDING} AND last_error IS NOT NULL AND available_at > $1
   AND (claim_expires_at IS NULL OR claim_expires_at <= $1)`;

/** Whether a failed publish parked any row. Locks nothing. */
export async function hasParkedOutboxRows(tx: Tx, now: Date): Promise<boolean> {
  const s = tx.schema;
  const { rows } = await tx.query<{ parked: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${s.sync_dispatch_outbox} WHERE ${PARKED}) AS parked`,
    [now],
  );
  return rows[0]?.parked ?? false;
}

/**
 * Rows a failed publish parked, last changed before `failedBefore`, come due now (those due first,
 * at most `limit`): the broker has taken messages again, so their backoff has nothing left to
 * spare it. Locks: those rows (SKIP LOCKED: a row another transaction holds is left as it is).
 * Returns how many.
 */
export async function wakeParkedOutboxRows(tx: Tx, now: Date, failedBefore: Date, limit: number): Promise<number> {
  const s = tx.schema;
  const { rowCount } = await tx.query(
    `UPDATE ${s.sync_dispatch_outbox} o SET available_at = $1, updated_at = $1
       FROM (SELECT id FROM ${s.sync_dispatch_outbox} WHERE ${PARKED} AND updated_at <= $2
              ORDER BY available_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) p
      WHERE o.id = p.id`,
    [now, failedBefore, limit],
  );
  return rowCount;
}

/** Records why a producer's own publish failed on the row it re-armed (as the relay does). Locks: that row. */
export async function recordOutboxError(tx: Tx, runId: string, kind: OutboxKind, error: string): Promise<void> {
  await tx.query(
    `UPDATE ${tx.schema.sync_dispatch_outbox} SET last_error = left($3, 2000) WHERE sync_run_id = $1 AND kind = $2`,
    [runId, kind, error],
  );
}

/** When the next pending row comes due (index-only on the pending partial index), or null. */
export async function nextDueAt(tx: Tx): Promise<Date | null> {
  const { rows } = await tx.query<{ at: Date | null }>(
    `SELECT min(available_at) AS at FROM ${tx.schema.sync_dispatch_outbox} WHERE status = ${OUTBOX_PENDING}`,
  );
  return rows[0]?.at ?? null;
}

/**
 * Deletes up to `batch` dispatched rows of runs terminal since before `cutoff`.
 * Locks: the deleted rows. Returns how many were deleted.
 */
export async function pruneDispatchedOutbox(tx: Tx, cutoff: Date, batch: number): Promise<number> {
  const s = tx.schema;
  const { rowCount } = await tx.query(
    `DELETE FROM ${s.sync_dispatch_outbox} WHERE id IN (
       SELECT o.id FROM ${s.sync_dispatch_outbox} o JOIN ${s.sync_runs} r ON r.id = o.sync_run_id
        WHERE o.status = ${OUTBOX_DISPATCHED} AND o.dispatched_at < $1
          AND r.status IN ${RUN_TERMINAL} AND r.completed_at < $1
        LIMIT $2)`,
    [cutoff, batch],
  );
  return rowCount;
}

/** The outbox row of one run and kind, if any. Locks nothing. */
export async function getOutboxRow(tx: Tx, runId: string, kind: OutboxKind): Promise<OutboxRow | null> {
  const { rows } = await tx.query<OutboxRow>(
    `SELECT * FROM ${tx.schema.sync_dispatch_outbox} WHERE sync_run_id = $1 AND kind = $2`,
    [runId, kind],
  );
  return rows[0] ?? null;
}

/**
 * Exactly-once post_sync: after publishing, the row stays pending without a claim until the task
 * acknowledges it; if the message is lost it comes due again at `redeliverAt`. Same guard as the
 * mark. Locks: those rows. Returns the ids it changed.
 */
export async function awaitOutboxAck(
  tx: Tx,
  refs: readonly ClaimRef[],
  redeliverAt: Date,
  now: Date,
): Promise<string[]> {
  if (refs.length === 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<{ id: string }>(
    `WITH locked AS (${lockClaimedSql(s)})
     UPDATE ${s.sync_dispatch_outbox} o
        SET claim_token = NULL, claim_expires_at = NULL, available_at = $4, last_error = NULL, updated_at = $3
       FROM locked WHERE o.id = locked.id
      RETURNING o.id`,
    [refs.map((r) => r.id), refs.map((r) => r.claimToken), now, redeliverAt],
  );
  return rows.map((r) => r.id);
}

/** The post_sync task acknowledges its delivery: the run's post_sync row → dispatched. Locks: that row. */
export async function ackPostSync(tx: Tx, runId: string, now: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.sync_dispatch_outbox} SET status = ${MARK_TO}, dispatched_at = $2, claim_token = NULL,
            claim_expires_at = NULL, last_error = NULL, updated_at = $2
      WHERE sync_run_id = $1 AND kind = 'post_sync' AND status IN ${MARK_FROM}`,
    [runId, now],
  );
  return rowCount > 0;
}

/**
 * Gives claims back without publishing (the relay failed before it could mark): rows stay pending
 * and due at their time. Same guard as the mark. Locks: those rows. Returns the ids released.
 */
export async function releaseOutboxClaims(tx: Tx, refs: readonly ClaimRef[], now: Date): Promise<string[]> {
  if (refs.length === 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<{ id: string }>(
    `WITH locked AS (${lockClaimedSql(s)})
     UPDATE ${s.sync_dispatch_outbox} o SET claim_token = NULL, claim_expires_at = NULL, updated_at = $3
       FROM locked WHERE o.id = locked.id
      RETURNING o.id`,
    [refs.map((r) => r.id), refs.map((r) => r.claimToken), now],
  );
  return rows.map((r) => r.id);
}
