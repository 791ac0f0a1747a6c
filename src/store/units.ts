/** sync_run_units: planning inserts, the claim/lease CAS, terminal writes and counts. */
import type { Tx } from '../db/types.js';
import type { UnitCounts } from '../domain/aggregate.js';
import { UNIT_TRANSITIONS, type UnitStatus } from '../domain/statuses.js';
import { armWakesSql, batchEndFactsSql, notifyArmedSql } from './endWakes.js';
import type { UnitRow } from './rows.js';
import {
  commonFrom,
  KEYED,
  RUN_TERMINAL,
  sqlKeyedIn,
  sqlList,
  sqlLit,
  UNIT_LEASED,
  UNIT_OPEN,
  UNIT_PUBLISHED,
} from './sql.js';

const T = UNIT_TRANSITIONS;
// Every statement here that finds units by id guards their status through sqlKeyedIn (see there).
/** The claim CAS (dispatching → running). */
const CLAIM = { from: sqlKeyedIn(T.claim.from), to: sqlLit(T.claim.to) };
/** The lease holder's end: succeed or fail, chosen by its values (both move from running). */
const END_FROM = sqlKeyedIn(commonFrom(T.succeed, T.fail));
/** The lease holder's deferral (running → retrying). */
const DEFER = { from: sqlKeyedIn(T.defer.from), to: sqlLit(T.defer.to) };
/** Units in a broker's or a worker's hands: published (awaiting a claim) or leased. */
const IN_FLIGHT = sqlList([T.dispatch.to, T.claim.to]);

/** What every unit of one run shares. */
export type NewUnitsRun = Pick<UnitRow, 'org_id' | 'sync_run_id' | 'integration_id' | 'provider' | 'mode'>;

/** A unit to plan: the columns that differ between the units of a run. */
export type NewUnit = Pick<UnitRow, 'source_id' | 'dataset_key' | 'carried_datasets' | 'tier' | 'cost_class'> & {
  since_at: Date | null;
  before_at: Date | null;
};

/**
 * Inserts planned units of one run in one statement: the shared columns bound once, the others as
 * one array per column (no per-unit text to build or parse). Locks nothing existing. Returns how many.
 */
export async function insertUnits(tx: Tx, run: NewUnitsRun, units: readonly NewUnit[], now: Date): Promise<number> {
  if (units.length === 0) return 0;
  const { rowCount } = await tx.query(
    `INSERT INTO ${tx.schema.sync_run_units}
       (org_id, sync_run_id, integration_id, source_id, provider, dataset_key, carried_datasets, tier,
        cost_class, mode, since_at, before_at, created_at, updated_at)
     SELECT $1, $2, $3, x.source_id, $4, x.dataset_key,
            CASE WHEN x.carried IS NULL THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(x.carried)) END,
            x.tier, x.cost_class, $5, x.since_at, x.before_at, $6, $6
       FROM unnest($7::uuid[], $8::text[], $9::jsonb[], $10::text[], $11::text[], $12::timestamptz[],
                   $13::timestamptz[]) AS x(source_id, dataset_key, carried, tier, cost_class, since_at, before_at)`,
    [
      run.org_id,
      run.sync_run_id,
      run.integration_id,
      run.provider,
      run.mode,
      now,
      units.map((u) => u.source_id),
      units.map((u) => u.dataset_key),
      units.map((u) => (u.carried_datasets.length > 0 ? JSON.stringify(u.carried_datasets) : null)),
      units.map((u) => u.tier),
      units.map((u) => u.cost_class),
      units.map((u) => u.since_at),
      units.map((u) => u.before_at),
    ],
  );
  return rowCount;
}

/** Unit counts of a run by status. Locks nothing. */
export async function countUnitsByStatus(tx: Tx, runId: string): Promise<UnitCounts> {
  const { rows } = await tx.query<{ status: UnitStatus; n: number }>(
    `SELECT status, count(*)::int AS n FROM ${tx.schema.sync_run_units} WHERE sync_run_id = $1 GROUP BY status`,
    [runId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** What a run's successful units of one tier covered: for its post_sync payload. */
export interface SucceededTier {
  tier: string;
  provider: string;
  /** Every dataset the tier's successful units fetched (their own and the ones they carried), sorted. */
  datasets: string[];
  /** Earliest `since_at` and latest `before_at`; null when any unit of the tier was unbounded there. */
  since_at: Date | null;
  before_at: Date | null;
}

/**
 * A run's successful units summed up per tier, in the database: a run of 100,000 units returns a
 * row or two, not 100,000. Locks nothing.
 */
export async function succeededByTier(tx: Tx, runId: string): Promise<SucceededTier[]> {
  const { rows } = await tx.query<SucceededTier>(
    `SELECT u.tier, min(u.provider) AS provider,
            array_agg(DISTINCT d.key ORDER BY d.key) AS datasets,
            CASE WHEN bool_and(u.since_at IS NOT NULL) THEN min(u.since_at) END AS since_at,
            CASE WHEN bool_and(u.before_at IS NOT NULL) THEN max(u.before_at) END AS before_at
       FROM ${tx.schema.sync_run_units} u
            CROSS JOIN LATERAL unnest(u.carried_datasets || u.dataset_key) AS d(key)
      WHERE u.sync_run_id = $1 AND u.status = ${sqlLit('success')}
      GROUP BY u.tier ORDER BY u.tier`,
    [runId],
  );
  return rows;
}

export interface ClaimArgs {
  unitId: string;
  owner: string;
  now: Date;
  leaseMs: number;
  maxLifetimeMs: number;
}

/** What a worker needs besides the unit row to run it, read in the claim's own statement. */
export interface UnitContextFacts {
  /** The unit's integration (id, org_id, provider, name, config), or null if it is gone. */
  integration: { id: string; org_id: string; provider: string; name: string; config: Record<string, unknown> } | null;
  /** The external key of the unit's source, or null (no source, or gone). */
  source_key: string | null;
  /** The integration's stored credential, still encrypted (binary parts in base64), or null when none. */
  credential: ClaimedCredential | null;
}

/** An `integration_credentials` row as the claim reads it: ciphertext, nonce and tag in base64. */
export interface ClaimedCredential {
  id: string;
  org_id: string;
  integration_id: string;
  version: number;
  key_id: string;
  nonce: string;
  ciphertext: string;
  auth_tag: string;
}

export type ClaimedUnit = UnitRow & UnitContextFacts;

/**
 * The claim CAS: dispatching → running under a new owner, attempts+1, lease = min(now+lease,
 * deadline) where the deadline is now + max lifetime. Requires the run to be non-terminal (read per
 * row, so the unit is always found through its primary key). Locks: the unit row. Returns the
 * claimed unit with its integration, source key and encrypted credential (so a worker needs no further read to start
 * it), or null when somebody else won.
 */
export async function claimUnit(tx: Tx, a: ClaimArgs): Promise<ClaimedUnit | null> {
  const [row] = await claimUnits(tx, [{ unitId: a.unitId, owner: a.owner }], a);
  return row ?? null;
}

/**
 * The claim CAS of claimUnit for several units in one statement (one commit): each row is its own
 * CAS, so a unit somebody else holds is simply not returned. If one unit is asked for twice, at
 * most one owner wins. Locks: the claimed unit rows. Returns the claimed units (with their
 * integration and source key); match them to the requests by id AND lease_owner.
 * The arrays are read through scalar subqueries, so the planner estimates the statement alike
 * with or without their values: PostgreSQL then keeps the prepared statement's generic plan
 * (the same pkey lookups) instead of planning a custom one for every batch (~0.4 ms of server
 * CPU per claim, measured by bind time in the server's statement log).
 */
export async function claimUnits(
  tx: Tx,
  claims: readonly { unitId: string; owner: string }[],
  a: Pick<ClaimArgs, 'now' | 'leaseMs' | 'maxLifetimeMs'>,
): Promise<ClaimedUnit[]> {
  if (claims.length === 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<ClaimedUnit>(
    `UPDATE ${s.sync_run_units} u
        SET status = ${CLAIM.to}, lease_owner = c.owner, attempts = u.attempts + 1, started_at = $3,
            lease_expires_at = $3::timestamptz + make_interval(secs => LEAST($4::float8, $5::float8) / 1000),
            last_heartbeat_at = $3, updated_at = $3
       FROM unnest((SELECT $1::uuid[]), (SELECT $2::text[])) AS c(id, owner)
      WHERE u.id = ANY (CAST((SELECT $1::uuid[]) AS uuid[])) AND u.id = c.id AND u.status ${CLAIM.from}
        AND (SELECT r.status FROM ${s.sync_runs} r WHERE r.id = u.sync_run_id) NOT IN ${RUN_TERMINAL}
      RETURNING u.*,
        (SELECT jsonb_build_object('id', i.id, 'org_id', i.org_id, 'provider', i.provider, 'name', i.name,
                                   'config', i.config)
           FROM ${s.integrations} i WHERE i.id = u.integration_id) AS integration,
        (SELECT s.external_key FROM ${s.integration_sources} s WHERE s.id = u.source_id) AS source_key,
        (SELECT jsonb_build_object('id', c.id, 'org_id', c.org_id, 'integration_id', c.integration_id,
                                   'version', c.version, 'key_id', c.key_id, 'nonce', encode(c.nonce, 'base64'),
                                   'ciphertext', encode(c.ciphertext, 'base64'),
                                   'auth_tag', encode(c.auth_tag, 'base64'))
           FROM ${s.integration_credentials} c WHERE c.integration_id = u.integration_id) AS credential`,
    [claims.map((c) => c.unitId), claims.map((c) => c.owner), a.now, a.leaseMs, a.maxLifetimeMs],
  );
  return rows;
}

/**
 * Heartbeat CAS: extends the lease while owner, running and liveness match, never past
 * started_at + max lifetime. Locks: the unit row. Returns the new expiry, or null if lost.
 */
export async function extendLease(tx: Tx, a: ClaimArgs): Promise<Date | null> {
  const s = tx.schema;
  const { rows } = await tx.query<{ lease_expires_at: Date }>(
    `UPDATE ${s.sync_run_units} u
        SET lease_expires_at = LEAST($3::timestamptz + make_interval(secs => $4::float8 / 1000),
                                     u.started_at + make_interval(secs => $5::float8 / 1000)),
            last_heartbeat_at = $3
       FROM ${s.sync_runs} r
      WHERE u.id = $1 AND u.lease_owner = $2 AND u.status ${KEYED.leased} AND u.lease_expires_at > $3
        AND u.started_at + make_interval(secs => $5::float8 / 1000) > $3
        AND r.id = u.sync_run_id AND r.status NOT IN ${RUN_TERMINAL}
      RETURNING u.lease_expires_at`,
    [a.unitId, a.owner, a.now, a.leaseMs, a.maxLifetimeMs],
  );
  return rows[0]?.lease_expires_at ?? null;
}

/**
 * The fence: the unit is running under `owner` with a live lease and a live run.
 * Locks: the unit row FOR SHARE until the caller's transaction ends. Returns whether it holds.
 */
export async function lockLeaseIfHeld(tx: Tx, unitId: string, owner: string, now: Date): Promise<boolean> {
  const s = tx.schema;
  const { rows } = await tx.query(
    `SELECT 1 FROM ${s.sync_run_units} u JOIN ${s.sync_runs} r ON r.id = u.sync_run_id
      WHERE u.id = $1 AND u.lease_owner = $2 AND u.status ${KEYED.leased} AND u.lease_expires_at > $3
        AND r.status NOT IN ${RUN_TERMINAL}
      FOR SHARE OF u`,
    [unitId, owner, now],
  );
  return rows.length > 0;
}

export interface FinishArgs {
  unitId: string;
  owner: string;
  now: Date;
  status: 'success' | 'failed';
  result: Record<string, unknown>;
  error: string | null;
  touchedSurfaces: readonly string[];
}

/** What the terminal CAS statement read and did about a unit's end. */
export interface EndFacts {
  /** Another unit of the run is non-terminal (at the statement's snapshot): the caller re-checks after commit. */
  others_open: boolean;
  /** Outbox rows the statement armed (for all its units together). */
  armed: number;
  /**
   * The unit's integration, when webhook deliveries of the unit's source were remembered while it
   * was read (webhook_pending_runs, at the statement's snapshot): its end may free them.
   */
  webhook_pending_integration: string | null;
}

/** What the terminal CAS returns of a unit it ended: what its wake-ups need, not the whole row. */
export type EndedUnit = Pick<
  UnitRow,
  'id' | 'org_id' | 'sync_run_id' | 'provider' | 'cost_class' | 'status' | 'lease_owner'
>;

/**
 * Terminal CAS by the lease holder (which clears the unit's checkpoint), and what its end wakes, in
 * one statement (see finishUnits).
 * Returns the ended unit's keys and whether it saw other open units, or null if the lease was lost.
 */
export async function finishUnit(tx: Tx, a: FinishArgs, wakeLimit = 1): Promise<(EndedUnit & EndFacts) | null> {
  const [row] = await finishUnits(tx, [a], a.now, wakeLimit);
  return row ?? null;
}

/**
 * The terminal CAS for several units, and every wake-up their ends arm, in ONE statement — so it
 * is atomic even outside a transaction. Each unit is its own CAS (owner, running, live lease, live
 * run): a unit whose lease was lost is simply not returned. The end facts are worked out once per
 * run and bucket (batchEndFactsSql), counting units this statement ended as closed. Wake-ups, due
 * at `now`, by the one rule of ./endWakes.ts (finalize with the unit's trace; dispatch of the runs
 * waiting for the freed slot).
 * Locks: the finished unit rows, then the armed outbox rows in (run id, kind) order, as every
 * writer of outbox rows does (upserted by armConflictSql's rule; NOTIFYs the relay on commit).
 * Reads (a primary-key probe per ended unit) whether webhook deliveries of its source were remembered.
 * Returns the ended units' keys and end facts; match them to the requests by id AND lease_owner.
 */
export async function finishUnits(
  tx: Tx,
  items: readonly (Omit<FinishArgs, 'now'> & { trace?: Record<string, string> | null })[],
  now: Date,
  wakeLimit = 1,
): Promise<(EndedUnit & EndFacts)[]> {
  if (items.length === 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<EndedUnit & EndFacts>(
    `WITH changed AS (
       UPDATE ${s.sync_run_units} u
          SET status = f.status, result = f.result, error = f.error,
              touched_surfaces = ARRAY(SELECT jsonb_array_elements_text(f.surfaces)),
              duration_ms = GREATEST(0, (extract(epoch FROM ($3::timestamptz - u.started_at)) * 1000)::int),
              lease_expires_at = NULL, resume_checkpoint = NULL, updated_at = $3
         FROM unnest($1::uuid[], $2::text[], $4::text[], $5::jsonb[], $6::text[], $7::jsonb[], $9::jsonb[])
              AS f(id, owner, status, result, error, surfaces, trace)
        WHERE u.id = ANY ($1::uuid[]) AND u.id = f.id AND u.lease_owner = f.owner
          AND u.status ${END_FROM} AND u.lease_expires_at > $3
          AND (SELECT r.status FROM ${s.sync_runs} r WHERE r.id = u.sync_run_id) NOT IN ${RUN_TERMINAL}
        RETURNING u.id, u.org_id, u.sync_run_id, u.provider, u.cost_class, u.tier, u.status, u.lease_owner, f.trace,
                  u.integration_id, u.source_id),
     ${batchEndFactsSql(s, '$8')},
     ${armWakesSql(s, '$3', { extra: false })}
     SELECT e.id, e.org_id, e.sync_run_id, e.provider, e.cost_class, e.status, e.lease_owner, e.others_open,
            CASE WHEN EXISTS (SELECT 1 FROM ${s.webhook_pending_runs} p
                               WHERE p.integration_id = e.integration_id AND p.source_id = e.source_id)
                 THEN e.integration_id END AS webhook_pending_integration,
            ${notifyArmedSql('$3', '$10')}
       FROM ended e`,
    [
      items.map((a) => a.unitId),
      items.map((a) => a.owner),
      now,
      items.map((a) => a.status),
      items.map((a) => JSON.stringify(a.result)),
      items.map((a) => a.error),
      items.map((a) => JSON.stringify(a.touchedSurfaces)),
      wakeLimit,
      items.map((a) => (a.trace ? JSON.stringify(a.trace) : null)),
      s.channel,
    ],
  );
  return rows;
}

/**
 * Of these runs, those with no non-terminal unit (the post-commit re-check). Locks nothing. The
 * array is read through a scalar subquery so the generic plan is kept (see claimUnits).
 */
export async function runsWithoutOpenUnits(tx: Tx, runIds: readonly string[]): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `SELECT r.id FROM unnest((SELECT $1::uuid[])) AS r(id)
      WHERE NOT EXISTS (SELECT 1 FROM ${tx.schema.sync_run_units} u
                         WHERE u.sync_run_id = r.id AND u.status IN ${UNIT_OPEN})`,
    [runIds],
  );
  return rows.map((r) => r.id);
}

export interface RetryArgs {
  unitId: string;
  owner: string;
  now: Date;
  availableAt: Date;
  reason: 'rate_limit' | 'soft_timeout';
  error: string | null;
  /**
   * A rate-limit deferral's checkpoint, as JSON text already bounded (src/domain/checkpoint.ts):
   * it replaces the stored one (null clears it). A soft timeout keeps the stored one and ignores this.
   */
  checkpoint?: string | null;
}

/**
 * running → retrying by the lease holder (rate-limit deferral or eligible soft timeout); clears the
 * lease and bumps the matching counter; a rate-limit deferral stores its checkpoint (or clears it).
 * Locks: the unit row. Returns the unit or null if lost (nothing stored then).
 */
export async function retryOwnUnit(tx: Tx, a: RetryArgs): Promise<UnitRow | null> {
  const s = tx.schema;
  const { rows } = await tx.query<UnitRow>(
    `UPDATE ${s.sync_run_units} u
        SET status = ${DEFER.to}, available_at = $4, last_retry_reason = $5, error = $6,
            lease_owner = NULL, lease_expires_at = NULL, updated_at = $3,
            rate_limit_deferrals = u.rate_limit_deferrals + (CASE WHEN $5 = 'rate_limit' THEN 1 ELSE 0 END),
            rate_limit_first_seen_at = CASE WHEN $5 = 'rate_limit'
              THEN COALESCE(u.rate_limit_first_seen_at, $3) ELSE u.rate_limit_first_seen_at END,
            expired_lease_retry_count = u.expired_lease_retry_count + (CASE WHEN $5 = 'soft_timeout' THEN 1 ELSE 0 END),
            resume_checkpoint = CASE WHEN $5 = 'rate_limit' THEN $7::jsonb ELSE u.resume_checkpoint END
       FROM ${s.sync_runs} r
      WHERE u.id = $1 AND u.lease_owner = $2 AND u.status ${DEFER.from} AND u.lease_expires_at > $3
        AND r.id = u.sync_run_id AND r.status NOT IN ${RUN_TERMINAL}
      RETURNING u.*`,
    [a.unitId, a.owner, a.now, a.availableAt, a.reason, a.error, a.checkpoint ?? null],
  );
  return rows[0] ?? null;
}

/** Ends the caller's own lease now (graceful abandon) so the reconciler takes the unit at once. */
export async function expireOwnLease(tx: Tx, unitId: string, owner: string, now: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.sync_run_units} SET lease_expires_at = $3, updated_at = $3
      WHERE id = $1 AND lease_owner = $2 AND status ${KEYED.leased} AND lease_expires_at > $3`,
    [unitId, owner, now],
  );
  return rowCount > 0;
}

/**
 * Embedded single-process start-up: the in-process queue died with the previous process, so every
 * dispatching unit is unpublished and every running lease belongs to nobody. Marks the former for
 * re-publishing and ends the latter now, so the first reconciler pass recovers them at once.
 * Locks: those unit rows. Returns how many units it touched.
 */
export async function recoverAfterEmbeddedRestart(tx: Tx, now: Date): Promise<number> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.sync_run_units}
        SET dispatched_at = CASE WHEN status = ${UNIT_PUBLISHED} THEN NULL ELSE dispatched_at END,
            lease_expires_at = CASE WHEN status = ${UNIT_LEASED} THEN LEAST(lease_expires_at, $1)
                                    ELSE lease_expires_at END
      WHERE status IN ${IN_FLIGHT}`,
    [now],
  );
  return rowCount;
}
