import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { RateLimitError } from '../../../src/errors.js';
import { BudgetLedger, RateBudget } from '../../../src/providers/kit/budget.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js';

const T0 = new Date('2026-12-01T12:00:00Z');
const key = { orgId: 'org-ledger', provider: 'github', credentialId: 'cred-1.v1' };

describe('units of one process share what they know of a budget', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  const budget = (owner: string, clock: ManualClock, ledger?: BudgetLedger) =>
    new RateBudget({ db: t.db, key, owner, clock, subject: 'test', reserve: 2, ...(ledger ? { ledger } : {}) });

  it('a call in flight counts against the remaining requests another unit last saw', async () => {
    const clock = new ManualClock(T0);
    const ledger = new BudgetLedger();
    const a = budget('unit-a', clock, ledger);
    const b = budget('unit-b', clock, ledger);
    await a.gate();
    await b.gate();
    a.done();
    b.done();
    // 4 left in this window, 2 kept back: two more calls may be in flight, not three.
    const seen = { remaining: 4, limit: 100, resetAt: new Date(T0.getTime() + 60_000), limitedUntil: null };
    await a.observe({ ...seen, observedAt: clock.now() });
    await a.gate();
    await b.gate();
    const refused = await a.gate().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitError);
    expect((refused as RateLimitError).liftsAt).toEqual(seen.resetAt);
    expect((refused as RateLimitError).spreadMs).toBeNull(); // the engine's jitter
    // One call ends: a slot is free again.
    b.done();
    await expect(b.gate()).resolves.toBeUndefined();
  });

  it('a budget with its own deferral spread hands it to the units it defers', async () => {
    const clock = new ManualClock(T0);
    const b = new RateBudget({
      db: t.db,
      key: { ...key, credentialId: 'cred-s.v1' },
      owner: 'unit-s',
      clock,
      subject: 'test',
      reserve: 2,
      deferralSpreadMs: 500,
    });
    await b.gate();
    const seen = { remaining: 2, limit: 100, resetAt: new Date(T0.getTime() + 60_000), limitedUntil: null };
    await b.observe({ ...seen, observedAt: clock.now() });
    b.done();
    const refused = await b.gate().catch((e: unknown) => e);
    expect((refused as RateLimitError).spreadMs).toBe(500);
  });

  it('without a shared ledger each unit judges by its own responses only', async () => {
    const clock = new ManualClock(T0);
    const a = budget('unit-c', clock);
    const b = budget('unit-d', clock);
    await a.gate();
    await b.gate();
    const seen = { remaining: 4, limit: 100, resetAt: new Date(T0.getTime() + 60_000), limitedUntil: null };
    await a.observe({ ...seen, observedAt: clock.now() });
    await a.gate();
    await a.gate();
    await expect(a.gate()).resolves.toBeUndefined();
  });
});
