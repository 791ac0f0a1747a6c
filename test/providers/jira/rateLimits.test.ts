/**
 * Jira rate limits: a 429's Retry-After / X-RateLimit-Reset → RateLimitError with its lift time;
 * the shared budget (rate_budgets) keeps other units of the credential from calling until then,
 * and paces many units on one credential against the emulator's enforced budget.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { classifyError, RateLimitError } from '../../../src/errors.js';
import { jiraLimitSignal, runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { startJiraEmulator, type JiraEmulator } from '../../../src/providers/jira/emulator/index.js';
import { readRateBudget } from '../../../src/store/rateBudgets.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js';
import { ORG, truncate, unitContext, type UnitSpec } from './support.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const DAY = 86_400_000;
const FAST: JiraProviderOptions = {
  retry: { baseDelayMs: 1, maxDelayMs: 2 },
  budget: { probePollMs: 20 },
  pageSize: 25,
};
const KEY = { orgId: ORG, provider: 'jira', credentialId: 'cred-1' };

describe('jiraLimitSignal', () => {
  const now = new Date(T0);
  const h = (o: Record<string, string>) => new Headers(o);
  it('429: the later of Retry-After and X-RateLimit-Reset; 60 s without either', () => {
    const both = jiraLimitSignal(429, h({ 'retry-after': '30', 'x-ratelimit-reset': '2026-03-02T12:01Z' }), now);
    expect(both!.liftsAt.getTime()).toBe(T0 + 60_000);
    expect(jiraLimitSignal(429, h({ 'retry-after': '90' }), now)!.liftsAt.getTime()).toBe(T0 + 90_000);
    expect(jiraLimitSignal(429, h({}), now)!.liftsAt.getTime()).toBe(T0 + 60_000);
  });
  it('403: a limit only with Retry-After or a spent budget; otherwise not (auth)', () => {
    expect(jiraLimitSignal(403, h({}), now)).toBeNull();
    expect(
      jiraLimitSignal(403, h({ 'x-ratelimit-reset': '2026-03-02T12:01Z', 'x-ratelimit-remaining': '7' }), now),
    ).toBeNull();
    expect(jiraLimitSignal(403, h({ 'retry-after': '5' }), now)!.liftsAt.getTime()).toBe(T0 + 5000);
    expect(jiraLimitSignal(403, h({ 'x-ratelimit-reset': '2026-03-02T12:02Z' }), now)!.liftsAt.getTime()).toBe(
      T0 + 120_000,
    );
    expect(jiraLimitSignal(401, h({ 'retry-after': '5' }), now)).toBeNull();
  });
});

describe('Jira provider under rate limits', () => {
  let t: TestDatabase;
  let clock: ManualClock;
  let emu: JiraEmulator;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });
  beforeEach(async () => {
    clock = new ManualClock(T0);
    await truncate(t.db);
  });
  afterEach(async () => {
    await emu.close();
  });

  async function start(o: Parameters<typeof startJiraEmulator>[0] = {}) {
    emu = await startJiraEmulator({
      clock,
      now: new Date(T0),
      seed: 8,
      scale: { projects: 1, issues: 130, longLists: 0, days: 20 },
      ...o,
    });
  }

  function run(spec: Partial<UnitSpec> & { datasetKey: string }) {
    const ctx = unitContext({
      db: t.db,
      clock,
      siteUrl: emu.url,
      token: emu.token,
      since: new Date(T0 - 30 * DAY),
      before: new Date(T0),
      ...spec,
    });
    return runJiraUnit(ctx, FAST);
  }

  async function limited(p: Promise<unknown>): Promise<RateLimitError> {
    const err = await p.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RateLimitError);
    expect(classifyError(err)).toBe('rate_limit');
    return err as RateLimitError;
  }

  it('a 429 defers the unit to its lift time; others wait without calling; then success', async () => {
    await start();
    emu.setFaults([{ kind: 'rate-limit', count: 1, retryAfter: 30, path: '/search/jql' }]);
    const err = await limited(run({ datasetKey: 'work-items' }));
    expect(err.liftsAt!.getTime()).toBe(T0 + 30_000);
    expect(err.retryAfterMs).toBe(30_000);
    expect((await readRateBudget(t.db, KEY))!.limitedUntil!.getTime()).toBe(T0 + 30_000);
    const calls = emu.requestLog.length;

    clock.set(T0 + 29_000);
    expect((await limited(run({ datasetKey: 'projects' }))).liftsAt!.getTime()).toBe(T0 + 30_000);
    expect(emu.requestLog.length).toBe(calls);

    clock.set(T0 + 31_000);
    expect(await run({ datasetKey: 'work-items' })).toMatchObject({ items: 130 });
    expect(emu.requestLog.filter((l) => l.status === 429)).toHaveLength(1);
  });

  it('many units on one credential: at most one 429; the rest deferred to the reset without calling', async () => {
    await start({ rateLimit: { limit: 25, windowSeconds: 60 } });
    const ids = Array.from({ length: 8 }, (_, i) => `00000000-0000-4000-8000-0000000003${String(i).padStart(2, '0')}`);
    const results = await Promise.allSettled(
      ids.map((integrationId) => run({ datasetKey: 'work-items', integrationId })),
    );
    expect(emu.requestLog.filter((l) => l.status === 429).length).toBeLessThanOrEqual(1);
    const deferred = results.filter((r) => r.status === 'rejected');
    expect(deferred.length).toBeGreaterThan(0);
    const reset = T0 + 60_000;
    for (const r of deferred) {
      expect(r.reason).toBeInstanceOf(RateLimitError);
      expect((r.reason as RateLimitError).liftsAt!.getTime()).toBe(reset);
    }
    const budget = (await readRateBudget(t.db, KEY))!;
    expect(budget.remaining).toBeLessThanOrEqual(10);
    expect(budget.resetAt!.getTime()).toBe(reset);

    const calls = emu.requestLog.length;
    const later = await Promise.allSettled(
      ids.slice(0, 4).map((integrationId) => run({ datasetKey: 'projects', integrationId })),
    );
    expect(later.every((r) => r.status === 'rejected' && r.reason instanceof RateLimitError)).toBe(true);
    expect(emu.requestLog.length).toBe(calls); // the request log proves nobody called

    clock.set(reset + 1000);
    expect(await run({ datasetKey: 'projects' })).toMatchObject({ items: 1 });
    expect(emu.requestLog.length).toBe(calls + 1);
  });
});
