/**
 * Jira rate limits: a 429's Retry-After / X-RateLimit-Reset → RateLimitError with its lift time;
 * the shared budget (rate_budgets) keeps other units of the credential from calling until then,
 * and paces many units on one credential against the emulator's enforced budget.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { classifyError, RateLimitError } from '../../../src/errors.js';
import { jiraLimitSignal, runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { startJiraEmulator, type JiraEmulator } from '../../../src/emulators/jira/index.js';
import { jqlMinute } from '../../../src/providers/jira/timeZone.js';
import { readRateBudget } from '../../../src/store/rateBudgets.js';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js';
import { recordingSink } from '../../helpers/recordingSink.js';
import { count, ORG, truncate, unitContext, type UnitSpec } from './support.js';

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

  describe('a family unit deferred mid-window resumes after the latest update it wrote', () => {
    const SEARCH = '/rest/api/3/search/jql';
    // No reserve: the unit spends the whole budget, writing four search pages before it is deferred.
    const RESUME: JiraProviderOptions = { ...FAST, budget: { probePollMs: 20, reserve: 0 } };

    // 6 requests per 10 minutes: /myself, /status and four search pages of 25 before the limit.
    beforeEach(() => start({ rateLimit: { limit: 6, windowSeconds: 600 } }));

    /** One attempt of the family unit; its work_items writes land in `written` (issue ids, in order). */
    function attempt(written: string[], checkpoint: UnitCheckpoint | null) {
      const ctx = unitContext({
        db: t.db,
        clock,
        siteUrl: emu.url,
        token: emu.token,
        datasetKey: 'work-items',
        datasets: ['work-items', 'work-item-comments', 'work-item-history'],
        since: new Date(T0 - 30 * DAY),
        before: new Date(T0),
        checkpoint,
      });
      return runJiraUnit({ ...ctx, sink: recordingSink(ctx.sink, 'work_items', written) }, RESUME);
    }

    it('searches from the latest updated it wrote; every issue of the window lands once', async () => {
      const first: string[] = [];
      const err = await limited(attempt(first, null));
      const cp = err.checkpoint!;
      expect(first.length).toBeGreaterThanOrEqual(25); // deferred mid-window: some pages written …
      expect(first.length).toBeLessThan(130); // … not all
      const updatedOf = new Map(emu.data.projects.flatMap((p) => p.issues).map((i) => [i.id, i.updated]));
      const latest = Math.max(...first.map((id) => updatedOf.get(id)!));
      expect(cp).toMatchObject({ v: 1, from: latest, pages: first.length / 25, counts: { work_items: first.length } });
      expect(cp.tied).toEqual(first.filter((id) => updatedOf.get(id) === latest));
      expect(JSON.stringify(cp)).not.toContain(emu.token);
      const calls = emu.requestLog.length;

      clock.set(T0 + 600_001);
      const second: string[] = [];
      const result = await attempt(second, cp);
      const searches = emu.requestLog.slice(calls).filter((e) => e.path.startsWith(SEARCH));
      // Its first search starts at the latest update's minute, not at the window's start.
      expect(searches[0]!.jql).toContain(`updated >= "${jqlMinute(latest, 'UTC')}"`);
      expect(searches.length).toBeLessThan(Math.ceil(130 / 25));

      const all = [...first, ...second];
      expect(new Set(all).size).toBe(all.length); // no issue written twice
      expect(all).toHaveLength(130);
      expect(await count(t.db, 'work_items')).toBe(130);
      // The result counts the whole window: the rows before the checkpoint and after it.
      expect(result).toMatchObject({ written: { work_items: 130 } });
      expect(result.items).toBe(
        130 + (await count(t.db, 'work_item_comments')) + (await count(t.db, 'work_item_events')),
      );
    });

    it('issues changed during the wait are read again with their change; none is skipped', async () => {
      const first: string[] = [];
      const err = await limited(attempt(first, null));
      // While the unit waits, issues change (and one is created) inside its window: the changed ones
      // move to the end of the order, so a search position would now skip the ones sliding back.
      clock.set(T0 - 1000);
      const changed = emu.mutate();
      const issues = emu.data.projects.flatMap((p) => p.issues);
      const idOf = new Map(issues.map((i) => [i.key, i.id]));
      const touchedWritten = changed.touched.map((k) => idOf.get(k)!).filter((id) => first.includes(id));
      expect(touchedWritten.length).toBeGreaterThan(0);

      clock.set(T0 + 600_001);
      const second: string[] = [];
      await attempt(second, err.checkpoint);
      for (const id of touchedWritten) expect(second).toContain(id);
      const inWindow = issues.filter((i) => i.updated >= T0 - 30 * DAY && i.updated < T0).map((i) => i.id);
      expect(new Set([...first, ...second])).toEqual(new Set(inWindow));
      expect(await count(t.db, 'work_items')).toBe(inWindow.length);
    });

    it('a checkpoint not of this format is ignored: the unit reads its window from the start', async () => {
      const written: string[] = [];
      const err = await limited(attempt(written, { v: 99, from: 'elsewhere' }));
      const search = emu.requestLog.find((e) => e.path.startsWith(SEARCH))!;
      expect(search.jql).toContain(`updated >= "${jqlMinute(T0 - 30 * DAY, 'UTC')}"`);
      expect(err.checkpoint).toMatchObject({ v: 1 });
    });
  });
});
