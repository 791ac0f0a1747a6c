/**
 * The GitHub provider against the GitHub REST emulator (src/emulators/github) on 127.0.0.1:
 * real GitHub shapes, Link pagination, an enforced primary rate limit and injected faults.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, type Clock } from '../../../src/clock.js';
import { classifyError, RateLimitError } from '../../../src/errors.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { startGithubEmulator, type GithubEmulator } from '../../../src/emulators/github/index.js';
import { readRateBudget } from '../../../src/store/rateBudgets.js';
import type { TestDatabase } from '../../helpers/pg.js';
import { count, ORG, unitContext, useGithubDatabase, type UnitSpec } from './support.js';

type Emulator = GithubEmulator;
const start = (opts: Parameters<typeof startGithubEmulator>[0] & { clock: Clock }) => startGithubEmulator(opts);

const T0 = Date.UTC(2026, 2, 2, 12);
const DAY = 86_400_000;
const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: { probePollMs: 20 } };
const SCALE = {
  repos: 1,
  issues: 520,
  pulls: 20,
  maxComments: 2,
  maxReviews: 2,
  directCommits: 30,
  members: 5,
  days: 20,
};

describe('GitHub provider against the emulator', () => {
  const database = useGithubDatabase();
  let t: TestDatabase;
  let clock: ManualClock;
  let emu: Emulator;

  beforeEach(() => {
    t = database();
    clock = new ManualClock(T0);
  });
  afterEach(async () => {
    await emu.close();
  });

  function unit(spec: Partial<UnitSpec> & { datasetKey: string }) {
    const repo = emu.data.repos[0]!;
    return unitContext({
      db: t.db,
      clock,
      baseUrl: emu.url,
      token: emu.token,
      sourceKey: `${emu.data.org.login}/${repo.name}`,
      since: new Date(T0 - 30 * DAY),
      before: new Date(T0 + 1000),
      ...spec,
    });
  }

  it('reads every dataset; issues across ≥ 5 pages, pull requests left out of work_items', async () => {
    emu = await start({ clock, now: new Date(T0), scale: SCALE, seed: 7 });
    const issues = emu.data.repos[0]!.items.filter((i) => !i.pull).length;
    expect(await runGithubUnit(unit({ datasetKey: 'work-items' }), FAST)).toMatchObject({ items: issues });
    expect(emu.log.filter((l) => l.path.includes('/issues?')).length).toBeGreaterThanOrEqual(5);
    expect(await count(t.db, 'work_items')).toBe(issues);
    for (const key of [
      'repositories',
      'members',
      'work-item-comments',
      'work-item-history',
      'pull-requests',
      'pull-request-reviews',
      'commits',
    ]) {
      const r = await runGithubUnit(unit({ datasetKey: key }), FAST);
      expect(r.items, key).toBeGreaterThan(0);
    }
    expect(await count(t.db, 'pull_requests')).toBe(20);
    expect(emu.log.every((l) => l.status === 200)).toBe(true);
  });

  it('many units on one token: at most one limit response per window, the rest deferred without calling', async () => {
    emu = await start({
      clock,
      now: new Date(T0),
      scale: SCALE,
      seed: 7,
      rateLimit: { limit: 25, windowSeconds: 3600 },
    });
    const ids = Array.from({ length: 10 }, (_, i) => `00000000-0000-4000-8000-0000000002${String(i).padStart(2, '0')}`);
    const results = await Promise.allSettled(
      ids.map((integrationId) => runGithubUnit(unit({ datasetKey: 'work-items', integrationId }), FAST)),
    );
    const limited = () => emu.log.filter((l) => l.status === 403 || l.status === 429);
    expect(limited().length).toBeLessThanOrEqual(1);
    expect(results.some((r) => r.status === 'rejected' && r.reason instanceof RateLimitError)).toBe(true);
    const budget = (await readRateBudget(t.db, { orgId: ORG, provider: 'github', credentialId: 'cred-1' }))!;
    expect(budget.remaining).toBeLessThanOrEqual(10);

    const calls = emu.log.length;
    const later = await Promise.allSettled(
      ids.slice(0, 4).map((integrationId) => runGithubUnit(unit({ datasetKey: 'work-items', integrationId }), FAST)),
    );
    expect(later.every((r) => r.status === 'rejected' && r.reason instanceof RateLimitError)).toBe(true);
    expect(emu.log.length).toBe(calls);

    clock.set(budget.resetAt!.getTime() + 1);
    expect(await runGithubUnit(unit({ datasetKey: 'repositories' }), FAST)).toMatchObject({ items: 1 });
    expect(limited().length).toBeLessThanOrEqual(1);
  });

  it('an injected secondary limit lifts at its retry-after; 5xx retried in place; a bad token fails auth', async () => {
    emu = await start({ clock, now: new Date(T0), scale: SCALE, seed: 7 });
    emu.setFaults([{ kind: 'secondary-limit', count: 1, retryAfter: 30 }]);
    const err = await runGithubUnit(unit({ datasetKey: 'repositories' }), FAST).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).liftsAt!.getTime()).toBe(T0 + 30_000);
    clock.set(T0 + 31_000);
    expect(await runGithubUnit(unit({ datasetKey: 'repositories' }), FAST)).toMatchObject({ items: 1 });

    emu.setFaults([{ kind: 'server-error', count: 2, status: 503 }]);
    expect(await runGithubUnit(unit({ datasetKey: 'repositories' }), FAST)).toMatchObject({ items: 1 });

    const bad = await runGithubUnit(unit({ datasetKey: 'repositories', token: 'ghp_not_a_token_0000' }), FAST).catch(
      (e: unknown) => e,
    );
    expect(classifyError(bad)).toBe('auth');
    expect((bad as Error).message).not.toContain('ghp_not_a_token_0000');
  });
});
