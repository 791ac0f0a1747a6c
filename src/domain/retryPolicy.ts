/** Which units whose lease expired (or that hit the soft timeout) are retried instead of failed. */

export const WORK_ITEM_FAMILY = [
  'work-items',
  'work-item-labels',
  'work-item-projects',
  'work-item-history',
  'work-item-comments',
] as const;

export interface ExpiredUnitFacts {
  provider: string;
  mode: string;
  datasetKey: string;
  /** Every surface the unit's dataset declares it may write (static, not what it recorded). */
  declaredSurfaces: readonly string[];
  /** The sink's retry-safe surfaces. */
  retrySafeSurfaces: readonly string[];
}

/** A pluggable predicate: is this unit's kind of work safe to run again? */
export type RetryEligibility = (facts: ExpiredUnitFacts) => boolean;

/** The default policy (the seed's Linear backfill rule). The budget is checked separately. */
export const linearBackfillEligibility: RetryEligibility = (f) =>
  f.provider === 'linear' &&
  f.mode === 'backfill' &&
  (WORK_ITEM_FAMILY as readonly string[]).includes(f.datasetKey) &&
  f.declaredSurfaces.every((s) => f.retrySafeSurfaces.includes(s));

export type ExpiryDecision = 'retry' | 'retry_exhausted' | 'worker_lost';

/** What the reconciler does with an expired unit. */
export function decideExpiry(
  eligible: RetryEligibility,
  facts: ExpiredUnitFacts,
  retriesSoFar: number,
  maxRetries: number,
): ExpiryDecision {
  if (!eligible(facts)) return 'worker_lost';
  return retriesSoFar < maxRetries ? 'retry' : 'retry_exhausted';
}
