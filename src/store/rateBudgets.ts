/**
 * rate_budgets: a provider's rate-limit budget per (org, provider, credential), shared by every unit
 * calling the provider with that credential, and the probe lease that lets one unit go first after
 * a reset.
 */
import type { Tx } from '../db/types.js';

export interface BudgetKey {
  orgId: string;
  provider: string;
  credentialId: string;
}

/** What one response (or a batch of them) showed about the budget. */
export interface BudgetObservation {
  remaining: number | null;
  limit: number | null;
  resetAt: Date | null;
  /** A limit response: when the limit lifts. */
  limitedUntil: Date | null;
  observedAt: Date;
}

export interface BudgetRow extends BudgetObservation {
  probeUntil: Date | null;
  probeOwner: string | null;
}

interface Raw {
  remaining: number | null;
  request_limit: number | null;
  reset_at: Date | null;
  limited_until: Date | null;
  probe_until: Date | null;
  probe_owner: string | null;
  observed_at: Date;
}

/** The recorded budget of `key`, or null when nothing was recorded. Locks nothing. */
export async function readRateBudget(tx: Tx, key: BudgetKey): Promise<BudgetRow | null> {
  const { rows } = await tx.query<Raw>(
    `SELECT remaining, request_limit, reset_at, limited_until, probe_until, probe_owner, observed_at
       FROM ${tx.schema.rate_budgets} WHERE org_id = $1 AND provider = $2 AND credential_id = $3`,
    [key.orgId, key.provider, key.credentialId],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    remaining: r.remaining,
    limit: r.request_limit,
    resetAt: r.reset_at,
    limitedUntil: r.limited_until,
    observedAt: r.observed_at,
    probeUntil: r.probe_until,
    probeOwner: r.probe_owner,
  };
}

/**
 * Records an observation, merged with what is there (responses of concurrent units arrive out of
 * order): a later reset window replaces the counts, the same window (resets at most `resolutionMs`
 * apart: budget.ts mergeObservations) keeps the lower remaining and the earlier reset, an earlier
 * window changes nothing; a limit's lift time only moves later, and is cleared by a response
 * observed after it. When `owner` holds the probe lease, the lease ends (its response is recorded).
 * Then the budget as it now stands is sampled (sampleRateBudget).
 * Locks: the budget row. Returns nothing.
 */
export async function recordRateBudget(
  tx: Tx,
  key: BudgetKey,
  o: BudgetObservation,
  owner: string,
  resolutionMs = 0,
): Promise<void> {
  const b = tx.schema.rate_budgets;
  const same = `abs(extract(epoch FROM EXCLUDED.reset_at - b.reset_at)) * 1000 <= $10`;
  const { rows } = await tx.query<RecordedBudget>(
    `INSERT INTO ${b} AS b (org_id, provider, credential_id, remaining, request_limit, reset_at, limited_until,
                            observed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (org_id, provider, credential_id) DO UPDATE SET
       remaining = CASE
         WHEN EXCLUDED.reset_at IS NULL THEN b.remaining
         WHEN b.reset_at IS NULL THEN EXCLUDED.remaining
         WHEN ${same} THEN LEAST(b.remaining, EXCLUDED.remaining)
         WHEN EXCLUDED.reset_at > b.reset_at THEN EXCLUDED.remaining
         ELSE b.remaining END,
       request_limit = CASE
         WHEN EXCLUDED.reset_at IS NULL THEN b.request_limit
         WHEN b.reset_at IS NULL THEN EXCLUDED.request_limit
         WHEN ${same} THEN COALESCE(EXCLUDED.request_limit, b.request_limit)
         WHEN EXCLUDED.reset_at > b.reset_at THEN EXCLUDED.request_limit
         ELSE b.request_limit END,
       reset_at = CASE
         WHEN EXCLUDED.reset_at IS NULL THEN b.reset_at
         WHEN b.reset_at IS NULL THEN EXCLUDED.reset_at
         WHEN ${same} THEN LEAST(b.reset_at, EXCLUDED.reset_at)
         WHEN EXCLUDED.reset_at > b.reset_at THEN EXCLUDED.reset_at
         ELSE b.reset_at END,
       limited_until = CASE
         WHEN EXCLUDED.limited_until IS NOT NULL THEN GREATEST(b.limited_until, EXCLUDED.limited_until)
         WHEN b.limited_until IS NOT NULL AND EXCLUDED.observed_at >= b.limited_until THEN NULL
         ELSE b.limited_until END,
       probe_until = CASE WHEN b.probe_owner = $9 THEN NULL ELSE b.probe_until END,
       probe_owner = CASE WHEN b.probe_owner = $9 THEN NULL ELSE b.probe_owner END,
       observed_at = GREATEST(b.observed_at, EXCLUDED.observed_at)
     RETURNING remaining, request_limit, reset_at, limited_until`,
    [
      key.orgId,
      key.provider,
      key.credentialId,
      o.remaining,
      o.limit,
      o.resetAt,
      o.limitedUntil,
      o.observedAt,
      owner,
      resolutionMs,
    ],
  );
  await sampleRateBudget(tx, key, rows[0]!, o);
}

/** The budget as recordRateBudget left it. */
export interface RecordedBudget {
  remaining: number | null;
  request_limit: number | null;
  reset_at: Date | null;
  limited_until: Date | null;
}

/**
 * Samples the budget as `recorded` into the minute of the observation `o` (rate_budget_samples: the
 * latest figures, `observations` + 1, `limit_responses` + 1 when `o` carried a limit still ahead).
 * Locks: the minute's sample row. Returns nothing.
 */
export async function sampleRateBudget(
  tx: Tx,
  key: BudgetKey,
  recorded: RecordedBudget,
  o: BudgetObservation,
): Promise<void> {
  const limitResponse = o.limitedUntil !== null && o.limitedUntil > o.observedAt ? 1 : 0;
  await tx.query(
    `INSERT INTO ${tx.schema.table('rate_budget_samples')} AS s
       (org_id, provider, credential_id, minute, remaining, request_limit, reset_at, limited_until,
        observations, limit_responses)
     VALUES ($1, $2, $3, to_timestamp(floor(extract(epoch FROM $4::timestamptz) / 60) * 60), $5, $6, $7, $8, 1, $9)
     ON CONFLICT (org_id, provider, credential_id, minute) DO UPDATE SET
       remaining = EXCLUDED.remaining,
       request_limit = EXCLUDED.request_limit,
       reset_at = EXCLUDED.reset_at,
       limited_until = EXCLUDED.limited_until,
       observations = s.observations + 1,
       limit_responses = s.limit_responses + EXCLUDED.limit_responses`,
    [
      key.orgId,
      key.provider,
      key.credentialId,
      o.observedAt,
      recorded.remaining,
      recorded.request_limit,
      recorded.reset_at,
      recorded.limited_until,
      limitResponse,
    ],
  );
}

/**
 * Takes the probe lease of `key` for `owner` until `until`, when no one else holds a live one.
 * Locks: the budget row. Returns whether `owner` holds the lease.
 */
export async function claimRateBudgetProbe(
  tx: Tx,
  key: BudgetKey,
  owner: string,
  now: Date,
  until: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.rate_budgets} SET probe_until = $5, probe_owner = $4
      WHERE org_id = $1 AND provider = $2 AND credential_id = $3
        AND (probe_until IS NULL OR probe_until <= $6 OR probe_owner = $4)`,
    [key.orgId, key.provider, key.credentialId, owner, until, now],
  );
  return rowCount > 0;
}
