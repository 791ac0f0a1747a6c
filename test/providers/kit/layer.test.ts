/** The shared HTTP layer: failure classification, in-place retries, budget verdicts. */
import { describe, expect, it } from 'vitest';
import { classifyError, NonRetryableError, RateLimitError } from '../../../src/errors.js';
import { assessBudget, budgetThreshold, mergeObservations, reserveFor } from '../../../src/providers/kit/budget.js';
import { classifyFailure, failureError } from '../../../src/providers/kit/errors.js';
import { retryDelayMs, withRetries } from '../../../src/providers/kit/retry.js';
import type { BudgetObservation } from '../../../src/store/rateBudgets.js';

const NOW = new Date(Date.UTC(2026, 2, 2, 12));
const at = (s: number) => new Date(NOW.getTime() + s * 1000);
const subject = { integration: 'github integration "acme"', what: 'GET /repos/acme/app' };

describe('classifyFailure / failureError', () => {
  it.each([
    [{ status: 401, limit: null }, 'auth'],
    [{ status: 403, limit: null }, 'auth'],
    [{ status: 404, limit: null }, 'not_found'],
    [{ status: 500, limit: null }, 'transient'],
    [{ status: 503, limit: null }, 'transient'],
    [{ status: 429, limit: null }, 'transient'],
    [{ status: null, limit: null }, 'transient'],
    [{ status: 409, limit: null }, 'other'],
    [{ status: 422, limit: null }, 'other'],
    [{ status: 403, limit: { kind: 'primary' as const, liftsAt: at(60) } }, 'rate_limit'],
  ])('%j → %s', (facts, kind) => {
    expect(classifyFailure(facts).kind).toBe(kind);
  });

  it('ends with the error categories the engine stores, naming the integration and the call', () => {
    const limited = failureError(
      { kind: 'rate_limit', limit: { kind: 'secondary', liftsAt: at(90) } },
      subject,
      NOW,
      null,
    );
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as RateLimitError).retryAfterMs).toBe(90_000);
    expect((limited as RateLimitError).liftsAt).toEqual(at(90));
    for (const [kind, category] of [
      ['auth', 'auth'],
      ['not_found', 'not_found'],
      ['transient', 'provider_error'],
      ['other', 'provider_error'],
    ] as const) {
      const err = failureError({ kind }, subject, NOW, null);
      expect(err).toBeInstanceOf(NonRetryableError);
      expect(classifyError(err)).toBe(category);
      expect(err.message).toContain('github integration "acme": GET /repos/acme/app');
    }
  });
});

describe('withRetries', () => {
  const transient = (e: unknown) => (e as Error).message === 'transient';
  const exhausted = (e: unknown) => new Error('spent', { cause: e });
  const fast = { baseDelayMs: 1, maxDelayMs: 1 };

  it('retries transient failures up to the attempts, then throws the exhausted error', async () => {
    let calls = 0;
    const err = await withRetries(
      () => {
        calls++;
        return Promise.reject(new Error('transient'));
      },
      transient,
      exhausted,
      { ...fast, attempts: 3 },
    ).catch((e: unknown) => e);
    expect(calls).toBe(3);
    expect((err as Error).message).toBe('spent');
  });

  it('returns the first success and passes other failures through at once', async () => {
    let calls = 0;
    const ok = await withRetries(
      () => (++calls < 3 ? Promise.reject(new Error('transient')) : Promise.resolve('done')),
      transient,
      exhausted,
      fast,
    );
    expect([ok, calls]).toEqual(['done', 3]);
    calls = 0;
    const fatal = new Error('fatal');
    const err = await withRetries(
      () => {
        calls++;
        return Promise.reject(fatal);
      },
      transient,
      exhausted,
      fast,
    ).catch((e: unknown) => e);
    expect([err, calls]).toEqual([fatal, 1]);
  });

  it('an abort during the backoff ends it with the abort reason', async () => {
    const abort = new AbortController();
    const reason = new Error('lease lost');
    setTimeout(() => abort.abort(reason), 20);
    const err = await withRetries(() => Promise.reject(new Error('transient')), transient, exhausted, {
      attempts: 5,
      baseDelayMs: 60_000,
      maxDelayMs: 60_000,
      signal: abort.signal,
    }).catch((e: unknown) => e);
    expect(err).toBe(reason);
  });

  it('backs off exponentially with jitter in [cap/2, cap], capped', () => {
    const o = { baseDelayMs: 100, maxDelayMs: 1000 };
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, o, () => 0))).toEqual([50, 100, 200, 400, 500]);
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, o, () => 0.999))).toEqual([99, 199, 399, 799, 999]);
  });
});

describe('budget verdicts', () => {
  const seen = (o: Partial<BudgetObservation>): BudgetObservation => ({
    remaining: 100,
    limit: 5000,
    resetAt: at(600),
    limitedUntil: null,
    observedAt: NOW,
    ...o,
  });

  it('reserve and threshold: 1 % of the limit (at least 10, at most half), plus what the share leaves', () => {
    expect([reserveFor(5000), reserveFor(60), reserveFor(15), reserveFor(100_000)]).toEqual([50, 10, 7, 1000]);
    expect(budgetThreshold(5000)).toBe(50);
    expect(budgetThreshold(5000, 0.5)).toBe(2550);
    expect(budgetThreshold(null, 0.5)).toBe(0);
  });

  it('open, wait until the reset or the lift, or probe once it passed', () => {
    expect(assessBudget(null, NOW, 50)).toEqual({ kind: 'open' });
    expect(assessBudget(seen({ remaining: 51 }), NOW, 50)).toEqual({ kind: 'open' });
    expect(assessBudget(seen({ remaining: 50 }), NOW, 50)).toEqual({ kind: 'wait', until: at(600) });
    expect(assessBudget(seen({ limitedUntil: at(30) }), NOW, 50)).toEqual({ kind: 'wait', until: at(30) });
    expect(assessBudget(seen({ remaining: 0, resetAt: at(-1) }), NOW, 50)).toEqual({ kind: 'probe' });
    expect(assessBudget(seen({ limitedUntil: at(-1) }), NOW, 50)).toEqual({ kind: 'probe' });
    expect(assessBudget(seen({ remaining: null, limit: null }), NOW, 0)).toEqual({ kind: 'open' });
  });

  it('merging: a later window wins, the same window keeps the lower remaining, a lift only moves later', () => {
    const a = seen({ remaining: 40 });
    expect(mergeObservations(a, seen({ remaining: 60 })).remaining).toBe(40);
    expect(mergeObservations(a, seen({ remaining: 4999, resetAt: at(4200) }))).toMatchObject({ remaining: 4999 });
    expect(mergeObservations(seen({ resetAt: at(4200), remaining: 4999 }), a).remaining).toBe(4999);
    const limited = seen({ limitedUntil: at(60) });
    expect(mergeObservations(limited, seen({ observedAt: at(30) })).limitedUntil).toEqual(at(60));
    expect(mergeObservations(limited, seen({ observedAt: at(61) })).limitedUntil).toBeNull();
  });

  it('resets in whole seconds: within the resolution one window, the lower remaining and the earlier reset', () => {
    const ms = (s: number) => new Date(at(600).getTime() + s);
    // The later answer's reset reads 0.9 s later (rounded up): exact resets take it as a new window.
    const first = seen({ remaining: 40, resetAt: ms(0) });
    const later = seen({ remaining: 52, resetAt: ms(900) }); // sent before the first, read after it
    expect(mergeObservations(first, later).remaining).toBe(52);
    expect(mergeObservations(first, later, 2000)).toMatchObject({ remaining: 40, resetAt: ms(0) });
    expect(mergeObservations(later, first, 2000)).toMatchObject({ remaining: 40, resetAt: ms(0) });
    expect(mergeObservations(seen({ remaining: 9, resetAt: ms(300) }), later, 2000)).toMatchObject({
      remaining: 9,
      resetAt: ms(300),
    });
    // The next window (a minute on) is no rounding: its counts replace the last one's.
    expect(mergeObservations(first, seen({ remaining: 149, resetAt: ms(60_000) }), 2000)).toMatchObject({
      remaining: 149,
      resetAt: ms(60_000),
    });
    expect(mergeObservations(seen({ remaining: 149, resetAt: ms(60_000) }), first, 2000).remaining).toBe(149);
  });
});
