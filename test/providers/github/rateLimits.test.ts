/**
 * GitHub rate limits against the GitHub emulator on 127.0.0.1: each kind of limit response →
 * RateLimitError with its lift time; the shared budget (rate_budgets) keeps units of one credential
 * from calling while it is spent, lets one probe go first after a reset, and holds back an
 * integration's share.
 */
import { describe, expect, it } from 'vitest';
import { RateLimitError } from '../../../src/errors.js';
import type { FaultSpec, RateLimitSpec } from '../../../src/emulators/github/index.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { readRateBudget, recordRateBudget } from '../../../src/store/rateBudgets.js';
import { count, DAY, T0, type UnitOverrides } from '../../helpers/emulatorSuite.js';
import { rateLimitOf } from '../../helpers/failures.js';
import { CREDENTIAL_ID, ORG } from '../../helpers/unitContext.js';
import { ISSUES_ONLY, useGithubSuite } from './support.js';

const S = 1000;
const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: { probePollMs: 20 } };
const KEY = { orgId: ORG, provider: 'github', credentialId: CREDENTIAL_ID };
/** Issues updated over the day before T0. */
const DAY_OF_ISSUES = { ...ISSUES_ONLY, days: 1 };

const fx = useGithubSuite({ seed: 4, scale: DAY_OF_ISSUES });

function repoUnit(spec: Partial<UnitOverrides> = {}, opts: GithubProviderOptions = FAST) {
  return runGithubUnit(fx.unit({ datasetKey: 'repositories', ...spec }), opts);
}

describe('each kind of GitHub limit → RateLimitError with its lift time, then success', () => {
  const primary = (status: 403 | 429): RateLimitSpec => ({ limit: 5000, windowSeconds: 3600, status });
  /** The limit's answer (an injected fault), its status, and the seconds after T0 it lifts. */
  const limit = (kind: string, fault: FaultSpec, status: number, liftsIn: number, rateLimit = primary(403)) => ({
    kind,
    faults: [{ ...fault, count: 1 }],
    rateLimit,
    status,
    liftsAt: T0 + liftsIn * S,
  });
  const drained: FaultSpec = { kind: 'primary-limit', resetSeconds: 1800 };
  const cases = [
    limit('primary (403, remaining 0)', drained, 403, 1800),
    limit('primary (429, remaining 0)', drained, 429, 1800, primary(429)),
    limit('secondary (429, retry-after)', { kind: 'too-many-requests', retryAfter: 30 }, 429, 30),
    limit('secondary (403, retry-after)', { kind: 'secondary-limit', retryAfter: 45 }, 403, 45),
    limit('secondary (403, message only: at least 60 s)', { kind: 'secondary-limit' }, 403, 60),
  ];

  it.each(cases)('$kind', async (c) => {
    await fx.start({ faults: c.faults, rateLimit: c.rateLimit });
    const err = await rateLimitOf(repoUnit());
    expect(err.liftsAt!.getTime()).toBe(c.liftsAt);
    expect(err.retryAfterMs).toBe(c.liftsAt - T0);
    expect(fx.emu.log).toHaveLength(1); // not retried in place
    // A primary limit's answer says none remain; a secondary one's still counts some.
    expect(fx.emu.log[0]!.rate.remaining === 0).toBe(c.faults[0]!.kind === 'primary-limit');
    expect((await readRateBudget(fx.db, KEY))!.limitedUntil!.getTime()).toBe(c.liftsAt);

    // Before the lift, another unit of the credential is deferred without calling.
    fx.clock.set(c.liftsAt - 1);
    expect((await rateLimitOf(repoUnit())).liftsAt!.getTime()).toBe(c.liftsAt);
    expect(fx.emu.log).toHaveLength(1);

    fx.clock.set(c.liftsAt + 1);
    expect(await repoUnit()).toMatchObject({ items: 1 });
    expect(fx.emu.log.map((l) => l.status)).toEqual([c.status, 200]);
    expect((await readRateBudget(fx.db, KEY))!.limitedUntil).toBeNull();
  });
});

describe('shared budget per credential', () => {
  const issuesUnit = (integrationId: string, opts = FAST) =>
    runGithubUnit(
      fx.unit({ datasetKey: 'work-items', integrationId, since: new Date(T0 - DAY), before: new Date(T0) }),
      opts,
    );
  const integrationIds = Array.from(
    { length: 10 },
    (_, i) => `00000000-0000-4000-8000-0000000001${String(i).padStart(2, '0')}`,
  );
  const limited = (status: number) => status === 403 || status === 429;

  it('many units on one token: no burst of limit responses; the rest wait for the reset without calling', async () => {
    await fx.start({ scale: { ...DAY_OF_ISSUES, issues: 300 }, rateLimit: { limit: 25, windowSeconds: 3600 } });
    const results = await Promise.allSettled(integrationIds.map((id) => issuesUnit(id))); // 3 pages each
    expect(fx.emu.log.filter((l) => limited(l.status)).length).toBeLessThanOrEqual(1);
    expect(fx.emu.log.filter((l) => l.status === 200).length).toBeLessThanOrEqual(25);
    const deferred = results.filter((r) => r.status === 'rejected');
    expect(deferred.length).toBeGreaterThan(0);
    const reset = fx.emu.log[0]!.rate.reset * 1000; // the window started with the first request
    expect(reset).toBe(T0 + 3600 * S);
    for (const r of deferred) {
      const err = r.reason as RateLimitError;
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err.liftsAt!.getTime()).toBe(reset);
    }
    const recorded = (await readRateBudget(fx.db, KEY))!;
    expect(recorded.remaining).toBeLessThanOrEqual(10);
    expect(recorded.resetAt!.getTime()).toBe(reset);

    // Later units of the same credential are deferred to the reset without calling the API.
    const calls = fx.emu.log.length;
    const later = await Promise.allSettled(integrationIds.slice(0, 5).map((id) => issuesUnit(id)));
    expect(later.every((r) => r.status === 'rejected' && r.reason instanceof RateLimitError)).toBe(true);
    expect(fx.emu.log.length).toBe(calls);

    // After the reset one probe calls first; the others wait for its response to be recorded. The
    // probe's answer is held 150 ms: a request sent meanwhile would be answered, and logged, first.
    fx.clock.set(reset + 1);
    fx.emu.setFaults([{ kind: 'slow', count: 1, delayMs: 150 }]);
    const after = await Promise.allSettled(integrationIds.slice(0, 6).map((id) => issuesUnit(id)));
    const [probe, ...rest] = fx.emu.log.slice(calls);
    expect(probe).toMatchObject({ fault: 'slow' });
    expect(rest.length).toBeGreaterThan(0);
    for (const r of rest) expect(r.seq).toBeGreaterThan(probe!.seq);
    expect(fx.emu.log.slice(calls).filter((l) => limited(l.status))).toHaveLength(0);
    expect(after.filter((r) => r.status === 'fulfilled').length).toBeGreaterThan(0);
  });

  it('a unit holding back budgetShare of the budget is deferred while another integration goes on', async () => {
    await fx.start({ rateLimit: { limit: 100, windowSeconds: 3600 } });
    await recordRateBudget(
      fx.db,
      KEY,
      { remaining: 50, limit: 100, resetAt: new Date(T0 + 600 * S), limitedUntil: null, observedAt: fx.clock.now() },
      'seed',
    );
    const halfShare = await rateLimitOf(repoUnit({ config: { budgetShare: 0.5 } }));
    expect(halfShare.liftsAt!.getTime()).toBe(T0 + 600 * S);
    expect(fx.emu.log).toHaveLength(0);
    expect(await repoUnit()).toMatchObject({ items: 1 });
    expect(await count(fx.db, 'repositories')).toBe(1);
  });

  it('records the budget once per batch of responses, and at once when it is spent', async () => {
    await fx.start({ scale: { ...DAY_OF_ISSUES, issues: 550 } }); // 6 pages
    const writes: number[] = [];
    const db = fx.db;
    const counting = Object.create(db) as typeof db;
    counting.query = (text: string, values?: readonly unknown[]) => {
      if (text.includes('rate_budgets') && text.trimStart().startsWith('INSERT')) writes.push(1);
      return db.query(text, values);
    };
    const c = fx.unit({ datasetKey: 'work-items', since: new Date(T0 - DAY) });
    await runGithubUnit({ ...c, db: counting }, { ...FAST, budget: { flushEvery: 4 } });
    expect(fx.emu.log).toHaveLength(6);
    expect(writes).toHaveLength(2); // after 4 responses, then the rest when the unit ends
    expect((await readRateBudget(fx.db, KEY))!.remaining).toBe(4994);
  });
});
