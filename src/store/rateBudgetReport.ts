/**
 * The operator's view of the shared rate-limit budgets (rate_budgets): each budget of an org with the
 * integrations whose credential holds it, the limit responses sampled into rate_budget_samples, the
 * rate-limit deferrals of those integrations' units, the units waiting on a limit now, and the
 * samples over time. Reads only; the samples are written by recordRateBudget (./rateBudgets.ts) and
 * pruned by the reconciler (pruneRateBudgetSamples).
 */
import type { Tx } from '../db/types.js';
import { sqlLit } from './sql.js';

/** A budget as recorded, with the integrations that use its credential and its limit responses. */
export interface BudgetReportRow {
  provider: string;
  credential_id: string;
  remaining: number | null;
  request_limit: number | null;
  reset_at: Date | null;
  limited_until: Date | null;
  observed_at: Date;
  limit_responses_hour: number;
  limit_responses_day: number;
  integration_ids: string[];
  integration_names: string[];
}

/** The rate-limited units of one integration: deferrals since the windows' starts, units waiting now. */
export interface LimitedUnitsRow {
  integration_id: string;
  deferrals_hour: number;
  deferrals_day: number;
  waiting: number;
  next_due_at: Date | null;
}

/** One unit waiting on a rate limit: due again at `available_at`. */
export interface WaitingUnitRow {
  id: string;
  integration_id: string;
  sync_run_id: string;
  dataset_key: string;
  rate_limit_deferrals: number;
  available_at: Date | null;
}

/** One minute's sample of a budget. */
export interface BudgetSampleRow {
  minute: Date;
  remaining: number | null;
  request_limit: number | null;
  reset_at: Date | null;
  limited_until: Date | null;
  observations: number;
  limit_responses: number;
}

export interface BudgetWindows {
  orgId: string;
  /** Only this provider's budgets (`linear` takes `linear:complexity` too); null: every budget. */
  provider: string | null;
  hourSince: Date;
  daySince: Date;
}

/** Why a unit waits (sync_run_units.last_retry_reason of a rate-limit deferral). */
const RATE_LIMIT = 'rate_limit';
const TOKEN_HOLDER = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}[.]v[0-9]+$';

/**
 * The integrations of budget `b` holding its credential: the integration whose credential row the
 * holder names (`<row id>.v<version>`), or GitHub integrations signing as the App the holder names
 * (the installation when configured; else any installation of that App, found at run time).
 */
function holdersOf(tx: Tx): string {
  const s = tx.schema;
  const app = `i.config ->> 'auth' = 'app' AND b.credential_id LIKE 'app-' || (i.config ->> 'appId') || '-%'
              AND (i.config ->> 'installationId' IS NULL
                   OR b.credential_id LIKE 'app-' || (i.config ->> 'appId') || '-installation-'
                                           || (i.config ->> 'installationId') || '@%')`;
  return `SELECT array_agg(i.id::text ORDER BY i.name, i.id) AS ids, array_agg(i.name ORDER BY i.name, i.id) AS names
            FROM ${s.integrations} i
           WHERE i.org_id = b.org_id
             AND (i.id = (SELECT ic.integration_id FROM ${s.integration_credentials} ic
                           WHERE ic.org_id = b.org_id AND ic.id = CASE WHEN b.credential_id ~ '${TOKEN_HOLDER}'
                                 THEN split_part(b.credential_id, '.v', 1)::uuid END)
                  OR (${app}))`;
}

/**
 * The org's budgets (of `provider` when given), by provider and holder, each with its holders'
 * integrations and the limit responses sampled since `hourSince` and `daySince`.
 * Locks nothing. Returns one row per budget.
 */
export async function listBudgetReportRows(tx: Tx, w: BudgetWindows): Promise<BudgetReportRow[]> {
  const s = tx.schema;
  const { rows } = await tx.query<BudgetReportRow>(
    `SELECT b.provider, b.credential_id, b.remaining, b.request_limit, b.reset_at, b.limited_until, b.observed_at,
            COALESCE(n.hour, 0)::int AS limit_responses_hour, COALESCE(n.day, 0)::int AS limit_responses_day,
            COALESCE(h.ids, '{}') AS integration_ids, COALESCE(h.names, '{}') AS integration_names
       FROM ${s.rate_budgets} b
       LEFT JOIN LATERAL (
         SELECT sum(x.limit_responses) FILTER (WHERE x.minute >= $3) AS hour, sum(x.limit_responses) AS day
           FROM ${s.table('rate_budget_samples')} x
          WHERE x.org_id = b.org_id AND x.provider = b.provider AND x.credential_id = b.credential_id
            AND x.minute >= $4) n ON true
       LEFT JOIN LATERAL (${holdersOf(tx)}) h ON true
      WHERE b.org_id = $1 AND ($2::text IS NULL OR split_part(b.provider, ':', 1) = $2)
      ORDER BY b.provider, b.credential_id`,
    [w.orgId, w.provider, w.hourSince, w.daySince],
  );
  return rows;
}

/**
 * Per integration of `integrationIds` (the org's): rate-limit deferrals of units first limited since
 * `hourSince` / `daySince`, and units waiting on a rate limit now (retrying for one, first limited
 * since `waitingSince`) with the earliest due time. Reads only rate-limited units (their index).
 * Locks nothing. Returns one row per integration with any such unit.
 */
export async function countRateLimitedUnits(
  tx: Tx,
  w: BudgetWindows & { integrationIds: string[]; waitingSince: Date },
): Promise<LimitedUnitsRow[]> {
  const waiting = `u.status = ${sqlLit('retrying')} AND u.last_retry_reason = $6`;
  const { rows } = await tx.query<LimitedUnitsRow>(
    `SELECT u.integration_id::text AS integration_id,
            COALESCE(sum(u.rate_limit_deferrals) FILTER (WHERE u.rate_limit_first_seen_at >= $3), 0)::int
              AS deferrals_hour,
            COALESCE(sum(u.rate_limit_deferrals) FILTER (WHERE u.rate_limit_first_seen_at >= $4), 0)::int
              AS deferrals_day,
            count(*) FILTER (WHERE ${waiting})::int AS waiting,
            min(u.available_at) FILTER (WHERE ${waiting}) AS next_due_at
       FROM ${tx.schema.sync_run_units} u
      WHERE u.integration_id = ANY ($2::uuid[]) AND u.org_id = $1
        AND u.rate_limit_first_seen_at >= LEAST($4::timestamptz, $5::timestamptz)
      GROUP BY u.integration_id`,
    [w.orgId, w.integrationIds, w.hourSince, w.daySince, w.waitingSince, RATE_LIMIT],
  );
  return rows;
}

/**
 * Units of `integrationIds` (the org's) waiting on a rate limit now, first limited since
 * `waitingSince`: soonest due first, at most `limit`. Locks nothing. Returns the units.
 */
export async function listUnitsWaitingOnLimits(
  tx: Tx,
  q: { orgId: string; integrationIds: string[]; waitingSince: Date; limit: number },
): Promise<WaitingUnitRow[]> {
  const { rows } = await tx.query<WaitingUnitRow>(
    `SELECT u.id::text AS id, u.integration_id::text AS integration_id, u.sync_run_id::text AS sync_run_id,
            u.dataset_key, u.rate_limit_deferrals, u.available_at
       FROM ${tx.schema.sync_run_units} u
      WHERE u.integration_id = ANY ($2::uuid[]) AND u.org_id = $1 AND u.rate_limit_first_seen_at >= $3
        AND u.status = ${sqlLit('retrying')} AND u.last_retry_reason = $4
      ORDER BY u.available_at NULLS LAST, u.id
      LIMIT $5`,
    [q.orgId, q.integrationIds, q.waitingSince, RATE_LIMIT, q.limit],
  );
  return rows;
}

/**
 * The samples of one budget of the org since `since`, oldest first.
 * Locks nothing. Returns one row per sampled minute.
 */
export async function listBudgetSamples(
  tx: Tx,
  q: { orgId: string; provider: string; credentialId: string; since: Date },
): Promise<BudgetSampleRow[]> {
  const { rows } = await tx.query<BudgetSampleRow>(
    `SELECT minute, remaining, request_limit, reset_at, limited_until, observations, limit_responses
       FROM ${tx.schema.table('rate_budget_samples')}
      WHERE org_id = $1 AND provider = $2 AND credential_id = $3 AND minute >= $4
      ORDER BY minute`,
    [q.orgId, q.provider, q.credentialId, q.since],
  );
  return rows;
}

/**
 * Retention: deletes up to `limit` samples of minutes before `cutoff`, oldest first.
 * Locks: the deleted rows (rows another transaction holds are skipped, left for a later batch).
 * Returns how many it deleted.
 */
export async function pruneRateBudgetSamples(tx: Tx, cutoff: Date, limit: number): Promise<number> {
  const t = tx.schema.table('rate_budget_samples');
  const { rowCount } = await tx.query(
    `DELETE FROM ${t} WHERE (org_id, provider, credential_id, minute) IN (
       SELECT org_id, provider, credential_id, minute FROM ${t}
        WHERE minute < $1 ORDER BY minute LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [cutoff, limit],
  );
  return rowCount;
}

/** The orgs with a recorded budget, in order. Locks nothing. Returns their ids. */
export async function listBudgetOrgs(tx: Tx): Promise<string[]> {
  const { rows } = await tx.query<{ org_id: string }>(
    `SELECT DISTINCT org_id FROM ${tx.schema.rate_budgets} ORDER BY org_id`,
  );
  return rows.map((r) => r.org_id);
}
