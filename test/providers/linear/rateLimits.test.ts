/**
 * Linear limits and failures against the emulator (leaky buckets: a reset is when the bucket is full
 * again): each kind of limit (HTTP 429, RATELIMITED at 400 or 200, a spent complexity budget) →
 * RateLimitError lifting at the spent bucket's reported reset, then success;
 * a spent shared budget defers other units without calling (the emulator's request log shows it);
 * auth failures name the integration, never the key; a complexity error names the query; 5xx is
 * retried in place. A unit deferred mid-window hands its deferral where its keyset read stands (the
 * oldest update it wrote), and its next attempt reads on from there (not the first page), every
 * issue written once.
 */
import { describe, expect, it } from 'vitest';
import { classifyError, NonRetryableError, RateLimitError } from '../../../src/errors.js';
import {
  authorizationHeader,
  LINEAR_COMPLEXITY_BUDGET,
  runLinearUnit,
  type LinearProviderOptions,
} from '../../../src/providers/linear/index.js';
import { parseLinearFaults } from '../../../src/emulators/linear/index.js';
import { readRateBudget, recordRateBudget } from '../../../src/store/rateBudgets.js';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import { count, DAY, T0, type UnitOverrides } from '../../helpers/emulatorSuite.js';
import { failureOf } from '../../helpers/failures.js';
import { recordingSink } from '../../helpers/recordingSink.js';
import { CREDENTIAL_ID, ORG } from '../../helpers/unitContext.js';
import { useLinearSuite } from './support.js';

const FAST: LinearProviderOptions = {
  pageSize: 10,
  nestedPageSize: 10,
  retry: { baseDelayMs: 1, maxDelayMs: 2 },
  budget: { probePollMs: 20 },
};
const REQ_KEY = { orgId: ORG, provider: 'linear', credentialId: CREDENTIAL_ID };
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history', 'work-item-labels'];

/** Units are the work-item family's over the 40 days before T0. */
const fx = useLinearSuite(
  { scale: { teams: 2, issues: 120 } },
  { datasetKey: 'work-items', datasets: FAMILY, since: new Date(T0 - 40 * DAY), before: new Date(T0) },
);

function unit(spec: Partial<UnitOverrides> = {}, opts: LinearProviderOptions = FAST) {
  return runLinearUnit(fx.unit({ datasetKey: 'work-items', ...spec }), opts);
}

describe('each kind of Linear limit → RateLimitError lifting at the reset, then success', () => {
  const cases = [
    { kind: 'HTTP 429', faults: 'too-many-requests:count=1:resetSeconds=90', status: 429 },
    { kind: 'RATELIMITED (400)', faults: 'ratelimited:count=1:resetSeconds=90', status: 400 },
    { kind: 'RATELIMITED (200)', faults: 'ratelimited:count=1:status=200:resetSeconds=90', status: 200 },
  ];

  it.each(cases)('$kind', async (c) => {
    // 5 000 requests a minute: the emptied bucket, held 90 s, is full again a minute later.
    await fx.start({ faults: parseLinearFaults(c.faults), rateLimit: { limit: 5000, windowSeconds: 60 } });
    const lifts = T0 + 150_000;
    const err = await failureOf(unit());
    expect(err).toBeInstanceOf(RateLimitError);
    expect(classifyError(err)).toBe('rate_limit');
    expect((err as RateLimitError).liftsAt!.getTime()).toBe(lifts);
    expect((err as RateLimitError).retryAfterMs).toBe(150_000);
    expect(fx.emu.requestLog.map((e) => e.status)).toEqual([c.status]); // not retried in place
    expect((await readRateBudget(fx.db, REQ_KEY))!.limitedUntil!.getTime()).toBe(lifts);

    // Before the lift, another unit of the credential is deferred without calling.
    fx.clock.set(lifts - 1);
    expect(((await failureOf(unit())) as RateLimitError).liftsAt!.getTime()).toBe(lifts);
    expect(fx.emu.requestLog).toHaveLength(1);

    fx.clock.set(lifts + 1);
    expect(await unit()).toMatchObject({ work_items: 60 });
    expect((await readRateBudget(fx.db, REQ_KEY))!.limitedUntil).toBeNull();
  });

  it('a spent complexity budget: RATELIMITED lifting at the complexity reset', async () => {
    await fx.start({
      rateLimit: { complexity: { limit: 9_000, windowSeconds: 120 }, maxQueryComplexity: 10_000 },
    });
    const err = await failureOf(unit());
    expect(err).toBeInstanceOf(RateLimitError);
    const limited = fx.emu.requestLog.find((e) => e.errorCode === 'RATELIMITED');
    expect(limited?.status).toBe(400); // 9 000 points: some pages fit, a later one does not
    const cx = await readRateBudget(fx.db, { ...REQ_KEY, provider: LINEAR_COMPLEXITY_BUDGET });
    // The bucket refills 9 000 points in 120 s: full again when what was spent has refilled.
    const spent = 9_000 - cx!.remaining!;
    expect(cx!.resetAt!.getTime()).toBe(T0 + Math.ceil((spent * 120_000) / 9_000));
    expect((err as RateLimitError).liftsAt!.getTime()).toBe(cx!.resetAt!.getTime());
    fx.clock.set(cx!.resetAt!.getTime() + 1);
    const calls = fx.emu.requestLog.length;
    await failureOf(unit()); // the next window is spent too, after some pages
    expect(fx.emu.requestLog.length).toBeGreaterThan(calls);
  });
});

describe('shared budget per credential', () => {
  it('records both budgets from the response headers', async () => {
    await fx.start({
      rateLimit: { requests: { limit: 500, windowSeconds: 60 }, complexity: { limit: 90_000, windowSeconds: 60 } },
    });
    await unit();
    const last = fx.emu.requestLog[fx.emu.requestLog.length - 1]!;
    const req = (await readRateBudget(fx.db, REQ_KEY))!;
    expect(req).toMatchObject({ remaining: last.requests!.remaining, limit: 500 });
    expect(req.resetAt!.getTime()).toBe(T0 + fx.emu.requestLog.length * 120); // 500 a minute refill
    expect(req.resetAt!.getTime()).toBe(last.requests!.reset);
    const cx = (await readRateBudget(fx.db, { ...REQ_KEY, provider: LINEAR_COMPLEXITY_BUDGET }))!;
    expect(cx.limit).toBe(90_000);
    expect(cx.remaining).toBe(90_000 - fx.emu.stats().complexity);
  });

  it('a spent request budget defers the other units to the reset without calling', async () => {
    await fx.start({ rateLimit: { limit: 40, windowSeconds: 600 } });
    // Reserve for a limit of 40 is 10 requests: the first unit spends 30 and is deferred.
    const first = await failureOf(unit({}, { ...FAST, nestedPageSize: 1, budget: { flushEvery: 1 } }));
    expect(first).toBeInstanceOf(RateLimitError);
    const calls = fx.emu.requestLog.length;
    expect(calls).toBeLessThanOrEqual(30);
    expect(fx.emu.stats().limited).toBe(0);
    const reset = T0 + calls * 15_000; // 40 requests per 600 s refill: each spent one in 15 s
    expect((first as RateLimitError).liftsAt!.getTime()).toBe(reset);

    const others = await Promise.allSettled(
      ['00000000-0000-4000-8000-0000000000b2', '00000000-0000-4000-8000-0000000000b3'].map((integrationId) =>
        unit({ integrationId }),
      ),
    );
    for (const r of others) {
      expect(r.status).toBe('rejected');
      const e = (r as PromiseRejectedResult).reason as RateLimitError;
      expect(e).toBeInstanceOf(RateLimitError);
      expect(e.liftsAt!.getTime()).toBe(reset);
      expect(e.message).toMatch(/not called/);
    }
    expect(fx.emu.requestLog.length).toBe(calls); // the log proves nobody called

    fx.clock.set(reset + 1);
    expect(await unit({}, FAST)).toMatchObject({ work_items: 60 });
  });
});

describe('a unit deferred mid-window resumes after its last written page', () => {
  const LIMITED: LinearProviderOptions = { ...FAST, nestedPageSize: 1, budget: { flushEvery: 1 } };
  const ISSUES = 'SyncIssuesCommentsHistoryLabels';

  /** One attempt of the family unit whose work_items writes land in `written` (issue ids, in order). */
  function attempt(written: string[], checkpoint: UnitCheckpoint | null, opts: LinearProviderOptions) {
    const ctx = fx.unit({ datasetKey: 'work-items', checkpoint });
    return runLinearUnit({ ...ctx, sink: recordingSink(ctx.sink, 'work_items', written) }, opts);
  }

  it('asks for the page after the last one it wrote; every issue of the window lands once', async () => {
    await fx.start({ rateLimit: { limit: 40, windowSeconds: 600 } });
    const first: string[] = [];
    const err = (await failureOf(attempt(first, null, LIMITED))) as RateLimitError;
    expect(err).toBeInstanceOf(RateLimitError);
    const cp = err.checkpoint!;
    expect(cp).toMatchObject({ v: 2, pages: first.length / 10, counts: { work_items: first.length } });
    expect(first.length).toBeGreaterThanOrEqual(10); // deferred mid-window: some pages written …
    expect(first.length).toBeLessThan(60); // … not all
    const last = fx.emu.data.issueById.get(first[first.length - 1]!)!;
    // The oldest update it wrote (its last issue's), and that issue.
    expect(cp).toMatchObject({ upTo: new Date(last.updatedAt).toISOString(), atUpTo: [last.id] });
    expect(JSON.stringify(cp)).not.toContain(fx.emu.token);
    const calls = fx.emu.requestLog.length;

    fx.clock.set(T0 + 600_001);
    const second: string[] = [];
    const result = await attempt(second, cp, FAST);
    const issuePages = fx.emu.requestLog.slice(calls).filter((e) => e.operation === ISSUES);
    expect(issuePages[0]!.upTo).toBe(cp.upTo); // on from the last written issue
    expect(issuePages.map((e) => e.upTo)).not.toContain(null); // never the first page again
    expect(second).not.toEqual(expect.arrayContaining([first[0]]));

    const all = [...first, ...second];
    expect(new Set(all).size).toBe(all.length); // no issue written twice
    expect(all).toHaveLength(60);
    expect(await count(fx.db, 'work_items')).toBe(60);
    // The result counts the whole window: the rows before the checkpoint and after it.
    expect(result).toMatchObject({ work_items: 60 });
    expect(result.items).toBe(
      60 + (await count(fx.db, 'work_item_comments')) + (await count(fx.db, 'work_item_events')),
    );
  });

  it('a resumed attempt deferred before it writes a page hands back the checkpoint it started from', async () => {
    await fx.start({ rateLimit: { limit: 40, windowSeconds: 600 } });
    const err = (await failureOf(attempt([], null, LIMITED))) as RateLimitError;
    fx.clock.set(T0 + 600_001);
    fx.emu.setFaults(parseLinearFaults('ratelimited:count=1:resetSeconds=90'));
    const again = (await failureOf(attempt([], err.checkpoint, FAST))) as RateLimitError;
    expect(err.checkpoint).toMatchObject({ v: 2, upTo: expect.any(String) as string });
    expect(again.checkpoint).toEqual(err.checkpoint);
  });

  it('a checkpoint not of this format is ignored: the unit reads its window from the first page', async () => {
    await fx.start();
    const written: string[] = [];
    const result = await attempt(written, { v: 99, after: 'elsewhere' }, FAST);
    expect(fx.emu.requestLog.find((e) => e.operation === ISSUES)!.upTo).toBeNull();
    expect(result).toMatchObject({ work_items: 60 });
    expect(written).toHaveLength(60);
  });
});

describe('recorded complexity budget', () => {
  it('a spent complexity budget defers a unit to its reset without calling', async () => {
    await fx.start();
    const resetAt = new Date(T0 + 300_000);
    await recordRateBudget(
      fx.db,
      { ...REQ_KEY, provider: LINEAR_COMPLEXITY_BUDGET },
      { remaining: 10, limit: 250_000, resetAt, limitedUntil: null, observedAt: fx.clock.now() },
      'seed',
    );
    const err = (await failureOf(unit())) as RateLimitError;
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err.liftsAt).toEqual(resetAt);
    expect(fx.emu.requestLog).toHaveLength(0);
  });
});

describe('failures', () => {
  it('a refused key → failed `auth`, naming the integration, never the key', async () => {
    await fx.start();
    const secret = 'lin_api_THISISASECRETKEY0123456789abcdefABCDEF';
    const err = await failureOf(unit({ token: secret }));
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(classifyError(err)).toBe('auth');
    expect(err.message).toContain('linear integration "acme-linear"');
    expect(JSON.stringify({ m: err.message, c: String((err as { cause?: unknown }).cause) })).not.toContain(secret);
    expect(fx.emu.requestLog).toHaveLength(1);

    fx.emu.setFaults(parseLinearFaults('unauthenticated:count=1'));
    const injected = await failureOf(unit());
    expect(classifyError(injected)).toBe('auth');
    expect(injected.message).not.toContain(fx.emu.token);
  });

  it('an OAuth token is sent as a bearer; a personal key as is', async () => {
    await fx.start();
    expect(authorizationHeader('lin_api_abc')).toBe('lin_api_abc');
    expect(authorizationHeader('Bearer xyz')).toBe('Bearer xyz');
    expect(authorizationHeader('lin_oauth_xyz')).toBe('Bearer lin_oauth_xyz');
    expect(await unit({ token: fx.emu.oauthToken })).toMatchObject({ work_items: 60 });
  });

  it('a query-complexity error is non-retryable and names the query', async () => {
    await fx.start({ faults: parseLinearFaults('complexity:count=1') });
    const err = await failureOf(unit());
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(classifyError(err)).toBe('provider_error');
    expect(err.message).toMatch(/query SyncIssuesCommentsHistoryLabels is too complex/);
    expect(fx.emu.requestLog).toHaveLength(1);
  });

  it('no server at the address: retried in place, then provider_error', async () => {
    await fx.start();
    await fx.emu.close(); // the unit reads the closed emulator's address
    const teams = { datasetKey: 'teams', datasets: ['teams'], tier: 'reference' as const, since: null, before: null };
    const err = await failureOf(runLinearUnit(fx.unit({ ...teams, token: 'lin_api_x' }), FAST));
    expect(classifyError(err)).toBe('provider_error');
    expect(err.message).toMatch(/query SyncTeams: provider unavailable after retries/);
  });

  it('5xx is retried in place, then succeeds; 5xx every time → provider_error', async () => {
    await fx.start({ faults: parseLinearFaults('server-error:count=2:status=503') });
    expect(await unit()).toMatchObject({ work_items: 60 });
    expect(fx.emu.requestLog.slice(0, 3).map((e) => e.status)).toEqual([503, 503, 200]);
    fx.emu.setFaults(parseLinearFaults('server-error:status=502'));
    const err = await failureOf(unit());
    expect(classifyError(err)).toBe('provider_error');
    expect(err.message).toMatch(/unavailable after retries/);
    expect(await count(fx.db, 'work_items')).toBe(60);
  });
});
