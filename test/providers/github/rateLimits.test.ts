/**
 * GitHub rate limits: each kind of limit response → RateLimitError with its lift time; the shared
 * budget (rate_budgets) keeps units of one credential from calling while it is spent, lets one probe
 * go first after a reset, and holds back an integration's share.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { classifyError, RateLimitError } from '../../../src/errors.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { readRateBudget, recordRateBudget } from '../../../src/store/rateBudgets.js';
import type { TestDatabase } from '../../helpers/pg.js';
import { FakeGithub } from './fakeGithub.js';
import { count, ORG, TOKEN, unitContext, useGithubDatabase, type UnitSpec } from './support.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const S = 1000;
const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: { probePollMs: 20 } };
const KEY = { orgId: ORG, provider: 'github', credentialId: 'cred-1' };

const database = useGithubDatabase();
let t: TestDatabase;
let clock: ManualClock;
let gh: FakeGithub;

beforeEach(() => {
  t = database();
  clock = new ManualClock(T0);
});
afterEach(async () => {
  await gh.close();
});

async function start(limit = 5000, windowMs = 3600 * S): Promise<FakeGithub> {
  gh = await new FakeGithub({ token: TOKEN, clock, limit, windowMs }).start();
  return gh;
}

function repoUnit(spec: Partial<UnitSpec> = {}, opts: GithubProviderOptions = FAST) {
  return runGithubUnit(unitContext({ db: t.db, clock, baseUrl: gh.url, datasetKey: 'repositories', ...spec }), opts);
}

async function rejection(p: Promise<unknown>): Promise<RateLimitError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RateLimitError);
  expect(classifyError(err)).toBe('rate_limit');
  return err as RateLimitError;
}

describe('each kind of GitHub limit → RateLimitError with its lift time, then success', () => {
  const resetSec = Math.ceil((T0 + 1800 * S) / 1000);
  const cases: { kind: string; status: number; headers: Record<string, string>; body: unknown; liftsAt: number }[] = [
    {
      kind: 'primary (403, remaining 0)',
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-limit': '5000', 'x-ratelimit-reset': String(resetSec) },
      body: { message: 'API rate limit exceeded for user ID 1.' },
      liftsAt: resetSec * 1000,
    },
    {
      kind: 'primary (429, remaining 0)',
      status: 429,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-limit': '5000', 'x-ratelimit-reset': String(resetSec) },
      body: { message: 'API rate limit exceeded' },
      liftsAt: resetSec * 1000,
    },
    {
      kind: 'secondary (429, retry-after)',
      status: 429,
      headers: { 'retry-after': '30' },
      body: { message: 'Too many requests' },
      liftsAt: T0 + 30 * S,
    },
    {
      kind: 'secondary (403, retry-after)',
      status: 403,
      headers: { 'retry-after': '45', 'x-ratelimit-remaining': '4000' },
      body: { message: 'You have exceeded a secondary rate limit.' },
      liftsAt: T0 + 45 * S,
    },
    {
      kind: 'secondary (403, message only: at least 60 s)',
      status: 403,
      headers: {},
      body: { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.' },
      liftsAt: T0 + 60 * S,
    },
  ];

  it.each(cases)('$kind', async (c) => {
    await start();
    gh.faults.push({ match: /^\/repos\/acme\/app$/, status: c.status, headers: c.headers, body: c.body });
    const err = await rejection(repoUnit());
    expect(err.liftsAt!.getTime()).toBe(c.liftsAt);
    expect(err.retryAfterMs).toBe(c.liftsAt - T0);
    expect(gh.log).toHaveLength(1); // not retried in place
    expect((await readRateBudget(t.db, KEY))!.limitedUntil!.getTime()).toBe(c.liftsAt);

    // Before the lift, another unit of the credential is deferred without calling.
    clock.set(c.liftsAt - 1);
    expect((await rejection(repoUnit())).liftsAt!.getTime()).toBe(c.liftsAt);
    expect(gh.log).toHaveLength(1);

    clock.set(c.liftsAt + 1);
    expect(await repoUnit()).toMatchObject({ items: 1 });
    expect(gh.log.map((l) => l.status)).toEqual([c.status, 200]);
    expect((await readRateBudget(t.db, KEY))!.limitedUntil).toBeNull();
  });
});

describe('shared budget per credential', () => {
  function seedIssues(n: number): void {
    for (let i = 1; i <= n; i++) {
      gh.issues.push({
        number: i,
        title: `i${i}`,
        state: 'open',
        created_at: new Date(T0 - 86_400_000).toISOString(),
        updated_at: new Date(T0 - 3600_000 + i * 1000).toISOString(),
      });
    }
  }
  const issuesUnit = (integrationId: string, opts = FAST) =>
    runGithubUnit(
      unitContext({
        db: t.db,
        clock,
        baseUrl: gh.url,
        datasetKey: 'work-items',
        integrationId,
        since: new Date(T0 - 86_400_000),
        before: new Date(T0),
      }),
      opts,
    );
  const integrationIds = Array.from(
    { length: 10 },
    (_, i) => `00000000-0000-4000-8000-0000000001${String(i).padStart(2, '0')}`,
  );

  it('many units on one token: no burst of limit responses; the rest wait for the reset without calling', async () => {
    await start(25);
    seedIssues(300); // 3 pages per unit
    const results = await Promise.allSettled(integrationIds.map((id) => issuesUnit(id)));
    expect(gh.log.filter((l) => l.limited).length).toBeLessThanOrEqual(1);
    expect(gh.log.filter((l) => !l.limited).length).toBeLessThanOrEqual(25);
    const deferred = results.filter((r) => r.status === 'rejected');
    expect(deferred.length).toBeGreaterThan(0);
    const reset = Math.ceil(gh.resetAt / 1000) * 1000;
    for (const r of deferred) {
      const err = r.reason as RateLimitError;
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err.liftsAt!.getTime()).toBe(reset);
    }
    const recorded = (await readRateBudget(t.db, KEY))!;
    expect(recorded.remaining).toBeLessThanOrEqual(10);
    expect(recorded.resetAt!.getTime()).toBe(reset);

    // Later units of the same credential are deferred to the reset without calling the API.
    const calls = gh.log.length;
    const later = await Promise.allSettled(integrationIds.slice(0, 5).map((id) => issuesUnit(id)));
    expect(later.every((r) => r.status === 'rejected' && r.reason instanceof RateLimitError)).toBe(true);
    expect(gh.log.length).toBe(calls);

    // After the reset one probe calls first; the others wait for its response to be recorded.
    clock.set(reset + 1);
    gh.log.length = 0;
    let first = true;
    gh.beforeAnswer = async () => {
      if (!first) return;
      first = false;
      await new Promise((r) => setTimeout(r, 150));
    };
    const after = await Promise.allSettled(integrationIds.slice(0, 6).map((id) => issuesUnit(id)));
    const [probe, ...rest] = [...gh.log].sort((a, b) => a.startedAt - b.startedAt);
    expect(rest.length).toBeGreaterThan(0);
    for (const r of rest) expect(r.startedAt).toBeGreaterThanOrEqual(probe!.endedAt);
    expect(gh.log.filter((l) => l.limited)).toHaveLength(0);
    expect(after.filter((r) => r.status === 'fulfilled').length).toBeGreaterThan(0);
  });

  it('a unit holding back budgetShare of the budget is deferred while another integration goes on', async () => {
    await start(100);
    await recordRateBudget(
      t.db,
      KEY,
      { remaining: 50, limit: 100, resetAt: new Date(T0 + 600 * S), limitedUntil: null, observedAt: clock.now() },
      'seed',
    );
    const halfShare = await rejection(repoUnit({ config: { budgetShare: 0.5 } }));
    expect(halfShare.liftsAt!.getTime()).toBe(T0 + 600 * S);
    expect(gh.log).toHaveLength(0);
    expect(await repoUnit()).toMatchObject({ items: 1 });
    expect(await count(t.db, 'repositories')).toBe(1);
  });

  it('records the budget once per batch of responses, and at once when it is spent', async () => {
    await start(5000);
    seedIssues(550); // 6 pages
    const writes: number[] = [];
    const db = t.db;
    const counting = Object.create(db) as typeof db;
    counting.query = (text: string, values?: readonly unknown[]) => {
      if (text.includes('rate_budgets') && text.trimStart().startsWith('INSERT')) writes.push(1);
      return db.query(text, values);
    };
    await runGithubUnit(
      unitContext({ db: counting, clock, baseUrl: gh.url, datasetKey: 'work-items', since: new Date(T0 - 86_400_000) }),
      { ...FAST, budget: { flushEvery: 4 } },
    );
    expect(gh.log).toHaveLength(6);
    expect(writes).toHaveLength(2); // after 4 responses, then the rest when the unit ends
    expect((await readRateBudget(t.db, KEY))!.remaining).toBe(4994);
  });
});
