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

export const RATE_LIMIT_MAX_CHUNK_MS = 600_000;
export const RATE_LIMIT_MAX_JITTER_MS = 5_000;
export const RATE_LIMIT_MAX_DEFERRALS = 10;
export const RATE_LIMIT_MAX_TOTAL_MS = 2 * 3600_000;

/**
 * Delay before a rate-limited unit is tried again: the provider's wish (at most 600 s) plus a
 * jitter of up to a fifth of it, never more than 5 s — so a 500 ms retry-after stays sub-second.
 */
export function rateLimitDelayMs(retryAfterMs: number, random: () => number = Math.random): number {
  const chunk = Math.min(Math.max(retryAfterMs, 0), RATE_LIMIT_MAX_CHUNK_MS);
  return chunk + Math.floor(random() * Math.min(RATE_LIMIT_MAX_JITTER_MS, chunk / 5));
}

/** Whether one more deferral exceeds the budget (more than 10 deferrals, or 2 h since the first). */
export function rateLimitBudgetExceeded(deferralsSoFar: number, firstSeenAt: number | null, now: number): boolean {
  if (deferralsSoFar + 1 > RATE_LIMIT_MAX_DEFERRALS) return true;
  return firstSeenAt !== null && now - firstSeenAt > RATE_LIMIT_MAX_TOTAL_MS;
}
