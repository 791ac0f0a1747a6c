import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  keptClaimExpiry,
  mergedAvailableAt,
  outboxBackoffMs,
  RATE_LIMIT_MAX_DEFERRALS,
  RATE_LIMIT_MAX_JITTER_MS,
  RATE_LIMIT_MAX_TOTAL_MS,
  rateLimitBudgetExceeded,
  rateLimitDelayMs,
} from '../../src/domain/backoff.js';

const S = 1000;
const attempts = fc.integer({ min: -1_000, max: 1_000_000 });
const time = fc.integer({ min: 0, max: 4_102_444_800_000 }); // up to 2100-01-01

describe('outboxBackoffMs (SPEC §4)', () => {
  it('follows 60, 120, 240, 480, 900, 900 … seconds', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 10, 100].map(outboxBackoffMs)).toEqual(
      [60, 120, 240, 480, 900, 900, 900, 900, 900].map((s) => s * S),
    );
  });

  it('treats attempts ≤ 0 as 1', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1_000_000, max: 0 }), (a) => {
        expect(outboxBackoffMs(a)).toBe(60 * S);
      }),
    );
  });

  it('is monotone non-decreasing', () => {
    fc.assert(
      fc.property(attempts, attempts, (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(outboxBackoffMs(lo)).toBeLessThanOrEqual(outboxBackoffMs(hi));
      }),
    );
  });

  it('is capped at 900 s and never below 60 s', () => {
    fc.assert(
      fc.property(attempts, (a) => {
        const ms = outboxBackoffMs(a);
        expect(ms).toBeGreaterThanOrEqual(60 * S);
        expect(ms).toBeLessThanOrEqual(900 * S);
      }),
    );
    expect(outboxBackoffMs(Number.MAX_SAFE_INTEGER)).toBe(900 * S);
  });

  it('equals the SPEC formula min(60·2^(min(max(a,1)−1, 4)), 900) s', () => {
    fc.assert(
      fc.property(attempts, (a) => {
        expect(outboxBackoffMs(a)).toBe(Math.min(60 * 2 ** Math.min(Math.max(a, 1) - 1, 4), 900) * S);
      }),
    );
  });
});

describe('mergedAvailableAt (earliest wins)', () => {
  it('a new row takes the requested time', () => {
    fc.assert(
      fc.property(time, (r) => {
        expect(mergedAvailableAt(null, r)).toBe(r);
      }),
    );
  });

  it('a pending row keeps the earlier time: result ≤ both and equal to one of them', () => {
    fc.assert(
      fc.property(time, time, (existing, requested) => {
        const out = mergedAvailableAt({ pending: true, availableAt: existing }, requested);
        expect(out).toBeLessThanOrEqual(existing);
        expect(out).toBeLessThanOrEqual(requested);
        expect([existing, requested]).toContain(out);
      }),
    );
  });

  it('a dispatched row takes the requested time, even a later one', () => {
    fc.assert(
      fc.property(time, time, (existing, requested) => {
        expect(mergedAvailableAt({ pending: false, availableAt: existing }, requested)).toBe(requested);
      }),
    );
  });

  it('is idempotent: repeating a wake-up changes nothing', () => {
    fc.assert(
      fc.property(fc.option(fc.record({ pending: fc.boolean(), availableAt: time })), time, (existing, r) => {
        const once = mergedAvailableAt(existing, r);
        expect(mergedAvailableAt({ pending: true, availableAt: once }, r)).toBe(once);
      }),
    );
  });

  it('is commutative for pending rows: the order of two wake-ups does not matter', () => {
    fc.assert(
      fc.property(time, time, time, (a, r1, r2) => {
        expect(mergedAvailableAt({ pending: true, availableAt: a }, r1)).toBe(
          mergedAvailableAt({ pending: true, availableAt: r1 }, a),
        );
        const ab = mergedAvailableAt(
          { pending: true, availableAt: mergedAvailableAt({ pending: true, availableAt: a }, r1) },
          r2,
        );
        const ba = mergedAvailableAt(
          { pending: true, availableAt: mergedAvailableAt({ pending: true, availableAt: a }, r2) },
          r1,
        );
        expect(ab).toBe(ba);
      }),
    );
  });
});

describe('keptClaimExpiry', () => {
  it('keeps a live claim and clears an expired or absent one', () => {
    expect(keptClaimExpiry(null, 1000)).toBeNull();
    expect(keptClaimExpiry(1001, 1000)).toBe(1001);
    expect(keptClaimExpiry(1000, 1000)).toBeNull();
    expect(keptClaimExpiry(999, 1000)).toBeNull();
  });

  it('kept iff strictly in the future, and idempotent', () => {
    fc.assert(
      fc.property(fc.option(time), time, (claim, now) => {
        const kept = keptClaimExpiry(claim, now);
        expect(kept).toBe(claim !== null && claim > now ? claim : null);
        expect(keptClaimExpiry(kept, now)).toBe(kept);
      }),
    );
  });
});

describe('rate-limit helpers (SPEC §5.6, §9)', () => {
  const unit = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

  it('delay = until the limit lifts (never negative), plus jitter in [0, 5 s)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -10_000_000, max: 10_000_000 }), unit, (retryAfter, r) => {
        const wait = Math.max(retryAfter, 0);
        const d = rateLimitDelayMs(retryAfter, () => r);
        expect(d).toBeGreaterThanOrEqual(wait);
        expect(d).toBeLessThan(wait + RATE_LIMIT_MAX_JITTER_MS);
        expect(Number.isInteger(d)).toBe(true);
      }),
    );
  });

  it('the jitter spans a tenth of the wait: at least 250 ms, at most 5 s (or the spread given)', () => {
    expect(rateLimitDelayMs(500, () => 0)).toBe(500);
    expect(rateLimitDelayMs(500, () => 0.999_999)).toBe(500 + 249); // at least 250 ms
    expect(rateLimitDelayMs(8 * S, () => 0.999_999)).toBe(8 * S + 799); // a tenth of 8 s
    expect(rateLimitDelayMs(60 * S, () => 0.999_999)).toBe(60 * S + 4999); // at most 5 s
    expect(rateLimitDelayMs(3600 * S, () => 0)).toBe(3600 * S);
    expect(rateLimitDelayMs(3600 * S, () => 0.5)).toBe(3600 * S + 2500);
    expect(rateLimitDelayMs(60 * S, () => 0.999_999, 500)).toBe(60 * S + 499);
    expect(rateLimitDelayMs(2 * S, () => 0.999_999, 500)).toBe(2 * S + 249);
  });

  it('uses the stated defaults', () => {
    expect(RATE_LIMIT_MAX_JITTER_MS).toBe(5 * S);
    expect(RATE_LIMIT_MAX_DEFERRALS).toBe(10);
    expect(RATE_LIMIT_MAX_TOTAL_MS).toBe(2 * 3600 * S);
  });

  it('more than 10 deferrals exceeds the budget', () => {
    const now = 10_000_000;
    for (let n = 0; n < 10; n++) expect(rateLimitBudgetExceeded(n, null, now)).toBe(false);
    expect(rateLimitBudgetExceeded(10, null, now)).toBe(true);
    expect(rateLimitBudgetExceeded(25, now, now)).toBe(true);
  });

  it('a total wait past 2 h (elapsed since the first limit plus this delay) exceeds the budget', () => {
    const first = 1_000_000;
    expect(rateLimitBudgetExceeded(1, first, first + RATE_LIMIT_MAX_TOTAL_MS)).toBe(false);
    expect(rateLimitBudgetExceeded(1, first, first + RATE_LIMIT_MAX_TOTAL_MS + 1)).toBe(true);
    const policy = { maxDeferrals: 10, maxWaitMs: RATE_LIMIT_MAX_TOTAL_MS };
    expect(rateLimitBudgetExceeded(1, first, first + 3600 * S, policy, 3600 * S)).toBe(false);
    expect(rateLimitBudgetExceeded(1, first, first + 3600 * S, policy, 3600 * S + 1)).toBe(true);
    expect(rateLimitBudgetExceeded(0, null, first, policy, RATE_LIMIT_MAX_TOTAL_MS + 1)).toBe(true);
  });

  it('follows a configured policy', () => {
    const policy = { maxDeferrals: 2, maxWaitMs: 60 * S };
    expect(rateLimitBudgetExceeded(1, null, 0, policy, 30 * S)).toBe(false);
    expect(rateLimitBudgetExceeded(2, null, 0, policy, 30 * S)).toBe(true);
    expect(rateLimitBudgetExceeded(1, 0, 40 * S, policy, 30 * S)).toBe(true);
  });

  it('exceeded iff deferrals + 1 > max or elapsed + delay > max wait', () => {
    fc.assert(
      fc.property(fc.nat(30), fc.option(time), time, fc.nat(10_000_000), (n, first, now, delay) => {
        const policy = { maxDeferrals: 10, maxWaitMs: RATE_LIMIT_MAX_TOTAL_MS };
        const expected = n + 1 > 10 || (first === null ? 0 : now - first) + delay > RATE_LIMIT_MAX_TOTAL_MS;
        expect(rateLimitBudgetExceeded(n, first, now, policy, delay)).toBe(expected);
      }),
    );
  });
});
