/**
 * Jira rate limits: a 429's Retry-After / X-RateLimit-Reset → RateLimitError with its lift time;
 * the shared budget (rate_budgets) keeps other units of the credential from calling until then,
 * and paces many units on one credential against the emulator's enforced budget.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { RateLimitError } from '../../../src/errors.js';
import { jiraLimitSignal, runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { jqlMinute } from '../../../src/providers/jira/timeZone.js';
import { readRateBudget } from '../../../src/store/rateBudgets.js';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import { count, DAY, T0, type UnitOverrides } from '../../helpers/emulatorSuite.js';
import { rateLimitOf } from '../../helpers/failures.js';
import { recordingSink } from '../../helpers/recordingSink.js';
import { CREDENTIAL_ID, ORG } from '../../helpers/unitContext.js';
import { useJiraSuite } from './support.js';

const FAST: JiraProviderOptions = {
  retry: { baseDelayMs: 1, maxDelayMs: 2 },
  budget: { probePollMs: 20 },
  pageSize: 25,
};
const KEY = { orgId: ORG, provider: 'jira', credentialId: CREDENTIAL_ID };

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
  const fx = useJiraSuite({ seed: 8, scale: { projects: 1, issues: 130, longLists: 0, days: 20 } });

  function run(spec: UnitOverrides) {
    return runJiraUnit(fx.unit(spec), FAST);
  }

  it('a 429 defers the unit to its lift time; others wait without calling; then success', async () => {
    await fx.start();
    fx.emu.setFaults([{ kind: 'rate-limit', count: 1, retryAfter: 30, path: '/search/jql' }]);
    const err = await rateLimitOf(run({ datasetKey: 'work-items' }));
    expect(err.liftsAt!.getTime()).toBe(T0 + 30_000);
    expect(err.retryAfterMs).toBe(30_000);
    expect((await readRateBudget(fx.db, KEY))!.limitedUntil!.getTime()).toBe(T0 + 30_000);
    const calls = fx.emu.requestLog.length;

    fx.clock.set(T0 + 29_000);
    expect((await rateLimitOf(run({ datasetKey: 'projects' }))).liftsAt!.getTime()).toBe(T0 + 30_000);
    expect(fx.emu.requestLog.length).toBe(calls);

    fx.clock.set(T0 + 31_000);
    expect(await run({ datasetKey: 'work-items' })).toMatchObject({ items: 130 });
    expect(fx.emu.requestLog.filter((l) => l.status === 429)).toHaveLength(1);
  });

  it('many units on one credential: at most one 429; the rest deferred to the reset without calling', async () => {
    await fx.start({ rateLimit: { limit: 25, windowSeconds: 60 } });
    const ids = Array.from({ length: 8 }, (_, i) => `00000000-0000-4000-8000-0000000003${String(i).padStart(2, '0')}`);
    const results = await Promise.allSettled(
      ids.map((integrationId) => run({ datasetKey: 'work-items', integrationId })),
    );
    expect(fx.emu.requestLog.filter((l) => l.status === 429).length).toBeLessThanOrEqual(1);
    const deferred = results.filter((r) => r.status === 'rejected');
    expect(deferred.length).toBeGreaterThan(0);
    const reset = T0 + 60_000;
    for (const r of deferred) {
      expect(r.reason).toBeInstanceOf(RateLimitError);
      expect((r.reason as RateLimitError).liftsAt!.getTime()).toBe(reset);
    }
    const budget = (await readRateBudget(fx.db, KEY))!;
    expect(budget.remaining).toBeLessThanOrEqual(10);
    expect(budget.resetAt!.getTime()).toBe(reset);

    const calls = fx.emu.requestLog.length;
    const later = await Promise.allSettled(
      ids.slice(0, 4).map((integrationId) => run({ datasetKey: 'projects', integrationId })),
    );
    expect(later.every((r) => r.status === 'rejected' && r.reason instanceof RateLimitError)).toBe(true);
    expect(fx.emu.requestLog.length).toBe(calls); // the request log proves nobody called

    fx.clock.set(reset + 1000);
    expect(await run({ datasetKey: 'projects' })).toMatchObject({ items: 1 });
    expect(fx.emu.requestLog.length).toBe(calls + 1);
  });

  it('answers read at fractions of a second: one window, as low as the latest answer says', async () => {
    await fx.start({ rateLimit: { limit: 100, windowSeconds: 60 } });
    // Each request 0.7 s after the one before: `t`, whole seconds to the reset rounded up, reads each
    // answer's reset up to a second later or earlier than the last one's.
    const stepping: typeof fetch = (url, init) => {
      fx.clock.advance(700);
      return fetch(url, init);
    };
    expect(await runJiraUnit(fx.unit({ datasetKey: 'work-items' }), { ...FAST, fetch: stepping })).toMatchObject({
      items: 130,
    });
    const answered = fx.emu.requestLog.filter((l) => l.auth !== null && l.status === 200);
    expect(answered.length).toBeGreaterThan(5);
    const reset = Math.ceil((Date.parse(answered[0]!.at) + 60_000) / 60_000) * 60_000; // on a whole minute
    const budget = (await readRateBudget(fx.db, KEY))!;
    expect(budget.remaining).toBe(100 - answered.length);
    expect(budget.resetAt!.getTime()).toBeGreaterThanOrEqual(reset);
    expect(budget.resetAt!.getTime()).toBeLessThan(reset + 1000);
  });

  describe('a family unit deferred mid-window resumes after the latest update it wrote', () => {
    const SEARCH = '/rest/api/3/search/jql';
    // No reserve: the unit spends the whole budget, writing four search pages before it is deferred.
    const RESUME: JiraProviderOptions = { ...FAST, budget: { probePollMs: 20, reserve: 0 } };

    // 6 requests per 10 minutes: /myself, /status and four search pages of 25 before the limit.
    beforeEach(() => fx.start({ rateLimit: { limit: 6, windowSeconds: 600 } }));

    /** One attempt of the family unit; its work_items writes land in `written` (issue ids, in order). */
    function attempt(written: string[], checkpoint: UnitCheckpoint | null) {
      const ctx = fx.unit({
        datasetKey: 'work-items',
        datasets: ['work-items', 'work-item-comments', 'work-item-history'],
        checkpoint,
      });
      return runJiraUnit({ ...ctx, sink: recordingSink(ctx.sink, 'work_items', written) }, RESUME);
    }

    it('searches from the latest updated it wrote; every issue of the window lands once', async () => {
      const first: string[] = [];
      const err = await rateLimitOf(attempt(first, null));
      const cp = err.checkpoint!;
      expect(first.length).toBeGreaterThanOrEqual(25); // deferred mid-window: some pages written …
      expect(first.length).toBeLessThan(130); // … not all
      const updatedOf = new Map(fx.emu.data.projects.flatMap((p) => p.issues).map((i) => [i.id, i.updated]));
      const latest = Math.max(...first.map((id) => updatedOf.get(id)!));
      expect(cp).toMatchObject({ v: 1, from: latest, pages: first.length / 25, counts: { work_items: first.length } });
      expect(cp.tied).toEqual(first.filter((id) => updatedOf.get(id) === latest));
      expect(JSON.stringify(cp)).not.toContain(fx.emu.token);
      const calls = fx.emu.requestLog.length;

      fx.clock.set(T0 + 600_001);
      const second: string[] = [];
      const result = await attempt(second, cp);
      const searches = fx.emu.requestLog.slice(calls).filter((e) => e.path.startsWith(SEARCH));
      // Its first search starts at the latest update's minute, not at the window's start.
      expect(searches[0]!.jql).toContain(`updated >= "${jqlMinute(latest, 'UTC')}"`);
      expect(searches.length).toBeLessThan(Math.ceil(130 / 25));

      const all = [...first, ...second];
      expect(new Set(all).size).toBe(all.length); // no issue written twice
      expect(all).toHaveLength(130);
      expect(await count(fx.db, 'work_items')).toBe(130);
      // The result counts the whole window: the rows before the checkpoint and after it.
      expect(result).toMatchObject({ written: { work_items: 130 } });
      expect(result.items).toBe(
        130 + (await count(fx.db, 'work_item_comments')) + (await count(fx.db, 'work_item_events')),
      );
    });

    it('issues changed during the wait are read again with their change; none is skipped', async () => {
      const first: string[] = [];
      const err = await rateLimitOf(attempt(first, null));
      // While the unit waits, issues change (and one is created) inside its window: the changed ones
      // move to the end of the order, so a search position would now skip the ones sliding back.
      fx.clock.set(T0 - 1000);
      const changed = fx.emu.mutate();
      const issues = fx.emu.data.projects.flatMap((p) => p.issues);
      const idOf = new Map(issues.map((i) => [i.key, i.id]));
      const touchedWritten = changed.touched.map((k) => idOf.get(k)!).filter((id) => first.includes(id));
      expect(touchedWritten.length).toBeGreaterThan(0);

      fx.clock.set(T0 + 600_001);
      const second: string[] = [];
      await attempt(second, err.checkpoint);
      for (const id of touchedWritten) expect(second).toContain(id);
      const inWindow = issues.filter((i) => i.updated >= T0 - 30 * DAY && i.updated < T0).map((i) => i.id);
      expect(new Set([...first, ...second])).toEqual(new Set(inWindow));
      expect(await count(fx.db, 'work_items')).toBe(inWindow.length);
    });

    it('a checkpoint not of this format is ignored: the unit reads its window from the start', async () => {
      const written: string[] = [];
      const err = await rateLimitOf(attempt(written, { v: 99, from: 'elsewhere' }));
      const search = fx.emu.requestLog.find((e) => e.path.startsWith(SEARCH))!;
      expect(search.jql).toContain(`updated >= "${jqlMinute(T0 - 30 * DAY, 'UTC')}"`);
      expect(err.checkpoint).toMatchObject({ v: 1 });
    });
  });
});
