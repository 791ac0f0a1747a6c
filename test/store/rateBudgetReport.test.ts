/**
 * The operator's view of the rate-limit budgets: the samples recordRateBudget writes (one per budget
 * and minute), the per-credential view (holders' integrations, state, limit responses and
 * deferrals over the last hour and day, units waiting), org and provider scoping, and the
 * reconciler's prune of old samples. Every time comes from a ManualClock; nothing sleeps.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { EngineContext } from '../../src/context.js';
import { budgetKeyOf, parseBudgetKey } from '../../src/domain/rateBudgetKeys.js';
import { pruneBudgetSamples } from '../../src/reconciler/budgetSamples.js';
import { listBudgetSamples } from '../../src/store/rateBudgetReport.js';
import { recordRateBudget, type BudgetKey, type BudgetObservation } from '../../src/store/rateBudgets.js';
import { rateBudgetViews } from '../../src/store/rateBudgetView.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import {
  seedAppIntegration,
  seedCredentialedIntegration,
  seedLimitedUnits,
  type SeededCredential,
} from '../helpers/rateBudgets.js';

const ORG = 'org-rb';
const OTHER = 'org-rb-other';
const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = new Date('2026-03-02T12:00:00Z');
const MAX_WAIT = 2 * HOUR;

let t: TestDatabase;
let clock: ManualClock;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t.drop();
});
beforeEach(async () => {
  clock = new ManualClock(T0);
  await t.db.exec(
    'TRUNCATE syncrelay.rate_budgets, syncrelay.rate_budget_samples, syncrelay.sync_run_units, ' +
      'syncrelay.sync_runs, syncrelay.integrations CASCADE',
  );
});

/** What a unit saw now: `remaining` of 5000, resetting in an hour; `limitedForMs`: a limit response. */
function seen(remaining: number, limitedForMs = 0): BudgetObservation {
  const now = clock.now();
  return {
    remaining,
    limit: 5000,
    resetAt: new Date(T0.getTime() + HOUR),
    limitedUntil: limitedForMs > 0 ? new Date(now.getTime() + limitedForMs) : null,
    observedAt: now,
  };
}

const views = (orgId = ORG, provider: string | null = null) =>
  rateBudgetViews(t.db, { orgId, provider, now: clock.now(), maxWaitMs: MAX_WAIT });

describe('samples', () => {
  it('one row per budget and minute: the budget as recorded, observations and limit responses counted', async () => {
    const key: BudgetKey = { orgId: ORG, provider: 'github', credentialId: 'c.v1' };
    await recordRateBudget(t.db, key, seen(300), 'u1');
    clock.advance(10_000);
    await recordRateBudget(t.db, key, seen(350), 'u2'); // same window: the lower remaining stays
    clock.advance(20_000);
    await recordRateBudget(t.db, key, seen(0, 5 * MIN), 'u3');
    clock.advance(MIN);
    await recordRateBudget(t.db, key, seen(0), 'u4');

    const samples = await listBudgetSamples(t.db, { ...key, since: new Date(T0.getTime() - HOUR) });
    expect(samples).toEqual([
      {
        minute: T0,
        remaining: 0,
        request_limit: 5000,
        reset_at: new Date(T0.getTime() + HOUR),
        limited_until: new Date(T0.getTime() + 30_000 + 5 * MIN),
        observations: 3,
        limit_responses: 1,
      },
      expect.objectContaining({ minute: new Date(T0.getTime() + MIN), observations: 1, limit_responses: 0 }),
    ]);
    expect(await listBudgetSamples(t.db, { ...key, since: new Date(T0.getTime() + MIN) })).toHaveLength(1);
    expect(await listBudgetSamples(t.db, { ...key, orgId: OTHER, since: new Date(0) })).toEqual([]);
  });

  it('the reconciler prunes samples older than seven days and keeps newer ones', async () => {
    const key: BudgetKey = { orgId: ORG, provider: 'github', credentialId: 'c.v1' };
    await recordRateBudget(t.db, key, seen(10), 'u1');
    clock.advance(3 * 86_400_000);
    await recordRateBudget(t.db, key, seen(10), 'u1');
    clock.advance(5 * 86_400_000);
    const ctx = { db: t.db, clock, settings: testSettings() } as unknown as EngineContext;
    expect(await pruneBudgetSamples(ctx)).toEqual({ pruned_rate_budget_samples: 1 });
    const left = await listBudgetSamples(t.db, { ...key, since: new Date(0) });
    expect(left.map((s) => s.minute)).toEqual([new Date(T0.getTime() + 3 * 86_400_000)]);
    expect(await pruneBudgetSamples(ctx)).toEqual({ pruned_rate_budget_samples: 0 });
  });
});

describe('rateBudgetViews', () => {
  let acme: SeededCredential;

  beforeEach(async () => {
    acme = await seedCredentialedIntegration(t.db, ORG, 'Acme GitHub');
  });

  it("shows a credential's budget: its integration, state, limit responses, deferrals, units waiting", async () => {
    const key: BudgetKey = { orgId: ORG, provider: 'github', credentialId: acme.holder };
    // Two hours ago: one limit response (in the day, not the hour).
    clock.advance(-2 * HOUR);
    await recordRateBudget(t.db, key, seen(0, MIN), 'u0');
    clock.advance(2 * HOUR - 10 * MIN);
    await recordRateBudget(t.db, key, seen(0, 30 * MIN), 'u1');
    await recordRateBudget(t.db, key, seen(0, 30 * MIN), 'u2');
    clock.advance(10 * MIN);
    const now = clock.now();
    const i = { orgId: ORG, integrationId: acme.integrationId };
    await seedLimitedUnits(t.db, i, [
      { deferrals: 2, firstSeenAt: new Date(now.getTime() - 10 * MIN), dueAt: new Date(now.getTime() + 20 * MIN) },
      { deferrals: 1, firstSeenAt: new Date(now.getTime() - 5 * MIN), dueAt: new Date(now.getTime() + 5 * MIN) },
      { deferrals: 4, firstSeenAt: new Date(now.getTime() - 3 * HOUR), dueAt: null },
      { deferrals: 9, firstSeenAt: new Date(now.getTime() - 30 * HOUR), dueAt: null },
    ]);

    const [v, ...more] = await views();
    expect(more).toEqual([]);
    expect(v).toMatchObject({
      key: budgetKeyOf('github', acme.holder),
      provider: 'github',
      credential: {
        holder: acme.holder,
        kind: 'token',
        integrations: [{ id: acme.integrationId, name: 'Acme GitHub' }],
      },
      state: 'limited',
      remaining: 0,
      limit: 5000,
      limited_until: new Date(now.getTime() + 20 * MIN),
      limit_responses: { last_hour: 2, last_day: 3 },
      deferrals: { last_hour: 3, last_day: 7 },
      waiting: { units: 2, next_due_at: new Date(now.getTime() + 5 * MIN) },
    });
    expect(v!.waiting.shown.map((u) => u.rate_limit_deferrals)).toEqual([1, 2]);
    expect(JSON.stringify(v)).not.toMatch(/ciphertext|secret/i);
    expect(parseBudgetKey(v!.key)).toEqual({ provider: 'github', holder: acme.holder });

    clock.advance(21 * MIN); // the limit has lifted, the window has not reset: exhausted
    expect((await views())[0]).toMatchObject({ state: 'exhausted' });
    clock.advance(HOUR);
    expect((await views())[0]).toMatchObject({ state: 'ok', limit_responses: { last_hour: 0, last_day: 3 } });
  });

  it("never shows another org's budgets or units, and filters by provider", async () => {
    const theirs = await seedCredentialedIntegration(t.db, OTHER, 'Their GitHub');
    await recordRateBudget(t.db, { orgId: OTHER, provider: 'github', credentialId: theirs.holder }, seen(5), 'u');
    // A budget of our org under their credential's holder: still only our org's integrations.
    await recordRateBudget(t.db, { orgId: ORG, provider: 'linear', credentialId: theirs.holder }, seen(5), 'u');
    await recordRateBudget(
      t.db,
      { orgId: ORG, provider: 'linear:complexity', credentialId: acme.holder },
      seen(5),
      'u',
    );
    await recordRateBudget(t.db, { orgId: ORG, provider: 'github', credentialId: acme.holder }, seen(5), 'u');
    await seedLimitedUnits(t.db, { orgId: OTHER, integrationId: theirs.integrationId }, [
      { deferrals: 3, firstSeenAt: clock.now(), dueAt: new Date(T0.getTime() + MIN) },
    ]);

    const mine = await views();
    expect(mine.map((v) => `${v.provider} ${v.credential.holder}`)).toEqual([
      `github ${acme.holder}`,
      `linear ${theirs.holder}`,
      `linear:complexity ${acme.holder}`,
    ]);
    expect(mine[1]!.credential.integrations).toEqual([]);
    expect(mine.every((v) => v.waiting.units === 0 && v.deferrals.last_day === 0)).toBe(true);
    expect((await views(ORG, 'linear')).map((v) => v.provider)).toEqual(['linear', 'linear:complexity']);
    expect(await views(ORG, 'jira')).toEqual([]);
    const theirViews = await views(OTHER);
    expect(theirViews).toHaveLength(1);
    expect(theirViews[0]).toMatchObject({ deferrals: { last_hour: 3 }, waiting: { units: 1 } });
  });

  it('names a GitHub App installation and finds the integrations signing as that App', async () => {
    const pinned = await seedAppIntegration(t.db, ORG, 'Pinned App', 42, 7);
    const found = await seedAppIntegration(t.db, ORG, 'Found App', 42, null);
    await seedAppIntegration(t.db, ORG, 'Other installation', 42, 8);
    await seedAppIntegration(t.db, ORG, 'Other App', 43, 7);
    const holder = 'app-42-installation-7@api.github.com';
    await recordRateBudget(t.db, { orgId: ORG, provider: 'github', credentialId: holder }, seen(100), 'u');
    const [v] = await views();
    expect(v!.credential).toEqual({
      holder,
      kind: 'app_installation',
      label: 'GitHub App 42, installation 7 (api.github.com)',
      integrations: [
        { id: found, name: 'Found App' },
        { id: pinned, name: 'Pinned App' },
      ],
    });
    expect(v!.state).toBe('ok');
  });
});
