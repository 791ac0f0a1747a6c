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

/** The jitter of a rate-limit deferral as a share of its wait, and the least it spans. */
export const RATE_LIMIT_JITTER_SHARE = 0.1;
export const RATE_LIMIT_MIN_JITTER_MS = 250;

/**
 * Delay before a rate-limited unit is tried again: until the limit lifts, plus a jitter so units
 * deferred by one limit do not all come back at the same instant. The jitter spans a tenth of the
 * wait, at least 250 ms and at most 5 s (or `spreadMs`): an hour's window keeps the whole 0–5 s,
 * while a wait of a few seconds is not stretched by more than its tenth — the units deferred to
 * one reset come back spread over a tenth of the wait, and the first of them (the probe:
 * ../providers/kit/budget.ts) starts the window's work that much sooner.
 */
export function rateLimitDelayMs(
  retryAfterMs: number,
  random: () => number = Math.random,
  spreadMs = RATE_LIMIT_MAX_JITTER_MS,
): number {
  const wait = Number.isFinite(retryAfterMs) ? Math.max(retryAfterMs, 0) : 0;
  const spread = Math.min(spreadMs, Math.max(RATE_LIMIT_MIN_JITTER_MS, Math.ceil(wait * RATE_LIMIT_JITTER_SHARE)));
  return Math.ceil(wait) + Math.floor(random() * spread);
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
