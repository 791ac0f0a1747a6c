/**
 * The statements a worker's fair share between orgs and its cancel watch run (src/worker/orgShare.ts,
 * src/worker/unitWatch.ts): which orgs have work waiting for a worker, putting a unit message back,
 * yielding a running unit's slot, and which held units were cancelled.
 */
import type { Tx } from '../db/types.js';
import { UNIT_TRANSITIONS } from '../domain/statuses.js';
import type { UnitRow } from './rows.js';
import {
  DISPATCH,
  KEYED,
  OUTBOX_DISPATCHED,
  RUN_OPEN,
  RUN_TERMINAL,
  sqlKeyedIn,
  sqlLit,
  UNIT_PUBLISHED,
} from './sql.js';

/** The lease holder's yield (running → retrying), the same move as a deferral. */
const YIELD = { from: sqlKeyedIn(UNIT_TRANSITIONS.defer.from), to: sqlLit(UNIT_TRANSITIONS.defer.to) };
const PLANNED_RUN = sqlLit('planned');
const CANCELLED_UNIT = sqlLit(UNIT_TRANSITIONS.cancel.to);
const CANCELLED_RUN = sqlLit('cancelled');

/** Why a yielded unit is retrying (`last_retry_reason`). */
export const ORG_SHARE_REASON = 'org_share';

/**
 * Up to `limit` orgs (no order) with work that has waited for a worker since `waitedSince` or
 * longer: a unit published and not claimed (dispatching, dispatched_at ≤ waitedSince), a retrying
 * unit due by then, or a planned run whose dispatch message went to the broker by then and has not
 * been handled (the run is still planned). Walks the live runs (partial index) and, per run, its
 * in-flight units (partial index). Locks nothing.
 */
export async function orgsWithWaitingWork(tx: Tx, waitedSince: Date, limit: number): Promise<string[]> {
  const s = tx.schema;
  const { rows } = await tx.query<{ org_id: string }>(
    `SELECT DISTINCT r.org_id FROM ${s.sync_runs} r
      WHERE r.status IN ${RUN_OPEN}
        AND (EXISTS (SELECT 1 FROM ${s.sync_run_units} u
                      WHERE u.sync_run_id = r.id
                        AND ((u.status = ${UNIT_PUBLISHED} AND u.dispatched_at <= $1)
                          OR (u.status = ${DISPATCH.retrying} AND u.available_at <= $1)))
          OR (r.status = ${PLANNED_RUN}
              AND EXISTS (SELECT 1 FROM ${s.sync_dispatch_outbox} o
                           WHERE o.sync_run_id = r.id AND o.kind = 'dispatch_sync_run'
                             AND o.status = ${OUTBOX_DISPATCHED} AND o.dispatched_at <= $1)))
      LIMIT $2`,
    [waitedSince, limit],
  );
  return rows.map((r) => r.org_id);
}

/**
 * A worker puts a unit message back unclaimed: its dispatching units are marked unpublished
 * (dispatched_at NULL), as after a failed publish, so the run's next dispatch publishes them again
 * (and they hold no slot of their bucket meanwhile). A unit claimed or ended meanwhile is untouched.
 * Locks: those unit rows. Returns how many it marked.
 */
export async function unpublishUnits(tx: Tx, unitIds: readonly string[]): Promise<number> {
  if (unitIds.length === 0) return 0;
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.sync_run_units} SET dispatched_at = NULL
      WHERE id = ANY ($1::uuid[]) AND status ${KEYED.published} AND dispatched_at IS NOT NULL`,
    [unitIds],
  );
  return rowCount;
}

export interface YieldArgs {
  unitId: string;
  owner: string;
  now: Date;
  availableAt: Date;
}

/**
 * running → retrying by the lease holder that gave its worker slot to another org's waiting work:
 * lease cleared, `available_at`, `last_retry_reason = 'org_share'`; no retry counter moves and the
 * stored checkpoint stays. Requires our own live lease and a live run. Locks: the unit row.
 * Returns the unit, or null if the lease was lost (nothing written then).
 */
export async function yieldOwnUnit(tx: Tx, a: YieldArgs): Promise<UnitRow | null> {
  const s = tx.schema;
  const { rows } = await tx.query<UnitRow>(
    `UPDATE ${s.sync_run_units} u
        SET status = ${YIELD.to}, available_at = $4, last_retry_reason = $5,
            lease_owner = NULL, lease_expires_at = NULL, updated_at = $3
       FROM ${s.sync_runs} r
      WHERE u.id = $1 AND u.lease_owner = $2 AND u.status ${YIELD.from} AND u.lease_expires_at > $3
        AND r.id = u.sync_run_id AND r.status NOT IN ${RUN_TERMINAL}
      RETURNING u.*`,
    [a.unitId, a.owner, a.now, a.availableAt, ORG_SHARE_REASON],
  );
  return rows[0] ?? null;
}

/**
 * Of these units (a worker's leases), those cancelled: the unit is `cancelled` or its run is.
 * Primary-key lookups. Locks nothing. Returns their ids.
 */
export async function cancelledUnits(tx: Tx, unitIds: readonly string[]): Promise<string[]> {
  if (unitIds.length === 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<{ id: string }>(
    `SELECT u.id FROM ${s.sync_run_units} u JOIN ${s.sync_runs} r ON r.id = u.sync_run_id
      WHERE u.id = ANY (CAST((SELECT $1::uuid[]) AS uuid[]))
        AND (u.status = ${CANCELLED_UNIT} OR r.status = ${CANCELLED_RUN})`,
    [unitIds],
  );
  return rows.map((r) => r.id);
}
