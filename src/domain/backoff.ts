/** Outbox publish-failure backoff: min(60·2^(min(max(attempts,1)−1, 4)), 900) seconds. */
export function outboxBackoffMs(attempts: number): number {
  const exp = Math.min(Math.max(attempts, 1) - 1, 4);
  return Math.min(60 * 2 ** exp, 900) * 1000;
}

/**
 * Earliest wins: a wake-up for a row that is still pending (and not being published under a live
 * claim) keeps the earlier of the two times; a row already dispatched, or one whose current arm is
 * being published right now, takes the new time — the publish in flight covers the old one.
 */
export function mergedAvailableAt(
  existing: { pending: boolean; availableAt: number; claimLive?: boolean } | null,
  requested: number,
): number {
  if (!existing || !existing.pending || existing.claimLive) return requested;
  return Math.min(existing.availableAt, requested);
}

/** A claim survives a wake-up only while it is live. */
export function keptClaimExpiry(claimExpiresAt: number | null, now: number): number | null {
  return claimExpiresAt !== null && claimExpiresAt > now ? claimExpiresAt : null;
}

export const RATE_LIMIT_MAX_JITTER_MS = 5_000;
export const RATE_LIMIT_MAX_DEFERRALS = 10;
export const RATE_LIMIT_MAX_TOTAL_MS = 2 * 3600_000;

/** How long and how often a rate-limited unit may be deferred (SYNC_RATE_LIMIT_MAX_*). */
export interface RateLimitPolicy {
  /** Deferrals one unit may take. @default 10 */
  maxDeferrals: number;
  /** Deferred wait one unit may accumulate, from its first rate limit. @default 2 h */
  maxWaitMs: number;
}

export const DEFAULT_RATE_LIMIT_POLICY: RateLimitPolicy = {
  maxDeferrals: RATE_LIMIT_MAX_DEFERRALS,
  maxWaitMs: RATE_LIMIT_MAX_TOTAL_MS,
};

/**
 * Delay before a rate-limited unit is tried again: until the limit lifts, plus a jitter of 0–5 s
 * (or 0–`spreadMs`) so units deferred by one limit do not all come back at the same instant.
 */
export function rateLimitDelayMs(
  retryAfterMs: number,
  random: () => number = Math.random,
  spreadMs = RATE_LIMIT_MAX_JITTER_MS,
): number {
  const wait = Number.isFinite(retryAfterMs) ? Math.max(retryAfterMs, 0) : 0;
  return Math.ceil(wait) + Math.floor(random() * spreadMs);
}

/**
 * Whether one more deferral of `delayMs` exceeds the policy: more than `maxDeferrals` deferrals,
 * or a total wait (from the first rate limit to the end of this deferral) over `maxWaitMs`.
 */
export function rateLimitBudgetExceeded(
  deferralsSoFar: number,
  firstSeenAt: number | null,
  now: number,
  policy: RateLimitPolicy = DEFAULT_RATE_LIMIT_POLICY,
  delayMs = 0,
): boolean {
  if (deferralsSoFar + 1 > policy.maxDeferrals) return true;
  const waited = firstSeenAt === null ? 0 : now - firstSeenAt;
  return waited + delayMs > policy.maxWaitMs;
}
