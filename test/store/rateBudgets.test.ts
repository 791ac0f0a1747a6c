/** rate_budgets: merged observations of one credential's budget, and the probe lease. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  claimRateBudgetProbe,
  readRateBudget,
  recordRateBudget,
  type BudgetObservation,
} from '../../src/store/rateBudgets.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const KEY = { orgId: 'org-b', provider: 'github', credentialId: 'cred-b' };
const T0 = Date.UTC(2026, 2, 2, 12);
const at = (s: number) => new Date(T0 + s * 1000);

function seen(o: Partial<BudgetObservation>): BudgetObservation {
  return { remaining: 100, limit: 5000, resetAt: at(3600), limitedUntil: null, observedAt: at(0), ...o };
}

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t.drop();
});
beforeEach(async () => {
  await t.db.exec('TRUNCATE syncrelay.rate_budgets');
});

describe('recordRateBudget', () => {
  it('keeps budgets apart per (org, provider, credential)', async () => {
    await recordRateBudget(t.db, KEY, seen({ remaining: 7 }), 'u1');
    await recordRateBudget(t.db, { ...KEY, credentialId: 'other' }, seen({ remaining: 9 }), 'u1');
    expect((await readRateBudget(t.db, KEY))!.remaining).toBe(7);
    expect(await readRateBudget(t.db, { ...KEY, orgId: 'org-c' })).toBeNull();
  });

  it('one window keeps the lower remaining; a later window replaces it; an earlier one changes nothing', async () => {
    await recordRateBudget(t.db, KEY, seen({ remaining: 40 }), 'u1');
    await recordRateBudget(t.db, KEY, seen({ remaining: 55, observedAt: at(5) }), 'u2'); // arrived late
    expect((await readRateBudget(t.db, KEY))!.remaining).toBe(40);
    await recordRateBudget(t.db, KEY, seen({ remaining: 4999, resetAt: at(7200), observedAt: at(3601) }), 'u1');
    expect(await readRateBudget(t.db, KEY)).toMatchObject({ remaining: 4999, resetAt: at(7200) });
    await recordRateBudget(t.db, KEY, seen({ remaining: 1, resetAt: at(3600) }), 'u3');
    expect(await readRateBudget(t.db, KEY)).toMatchObject({ remaining: 4999, resetAt: at(7200), observedAt: at(3601) });
  });

  it('resets within the resolution are one window: the lower remaining and the earlier reset', async () => {
    const ms = (n: number) => new Date(at(3600).getTime() + n);
    await recordRateBudget(t.db, KEY, seen({ remaining: 40, resetAt: ms(700) }), 'u1', 2000);
    await recordRateBudget(t.db, KEY, seen({ remaining: 52, resetAt: ms(1500), observedAt: at(5) }), 'u2', 2000);
    expect(await readRateBudget(t.db, KEY)).toMatchObject({ remaining: 40, resetAt: ms(700) });
    await recordRateBudget(t.db, KEY, seen({ remaining: 31, resetAt: ms(0), limit: null }), 'u3', 2000);
    expect(await readRateBudget(t.db, KEY)).toMatchObject({ remaining: 31, resetAt: ms(0), limit: 5000 });
    await recordRateBudget(t.db, KEY, seen({ remaining: 149, resetAt: ms(60_000), observedAt: at(3601) }), 'u1', 2000);
    expect(await readRateBudget(t.db, KEY)).toMatchObject({ remaining: 149, resetAt: ms(60_000) });
    // Without a resolution the same two answers read as two windows: the later reset's count wins.
    await t.db.exec('TRUNCATE syncrelay.rate_budgets');
    await recordRateBudget(t.db, KEY, seen({ remaining: 40, resetAt: ms(700) }), 'u1');
    await recordRateBudget(t.db, KEY, seen({ remaining: 52, resetAt: ms(1500) }), 'u2');
    expect(await readRateBudget(t.db, KEY)).toMatchObject({ remaining: 52, resetAt: ms(1500) });
  });

  it('a limit only moves later, and a response observed after it lifts clears it', async () => {
    await recordRateBudget(t.db, KEY, seen({ limitedUntil: at(60) }), 'u1');
    await recordRateBudget(t.db, KEY, seen({ limitedUntil: at(30) }), 'u2');
    expect((await readRateBudget(t.db, KEY))!.limitedUntil).toEqual(at(60));
    await recordRateBudget(t.db, KEY, seen({ observedAt: at(59) }), 'u2');
    expect((await readRateBudget(t.db, KEY))!.limitedUntil).toEqual(at(60));
    await recordRateBudget(t.db, KEY, seen({ observedAt: at(61) }), 'u2');
    expect((await readRateBudget(t.db, KEY))!.limitedUntil).toBeNull();
  });
});

describe('claimRateBudgetProbe', () => {
  it('one owner at a time until the lease expires; the owner’s recorded response ends it', async () => {
    await recordRateBudget(t.db, KEY, seen({ remaining: 0, resetAt: at(-1) }), 'seed');
    expect(await claimRateBudgetProbe(t.db, KEY, 'a', at(0), at(15))).toBe(true);
    expect(await claimRateBudgetProbe(t.db, KEY, 'b', at(1), at(16))).toBe(false);
    expect(await claimRateBudgetProbe(t.db, KEY, 'a', at(1), at(16))).toBe(true);
    expect(await claimRateBudgetProbe(t.db, KEY, 'b', at(16), at(31))).toBe(true); // a's lease expired
    await recordRateBudget(t.db, KEY, seen({ remaining: 10, resetAt: at(3600), observedAt: at(17) }), 'a');
    expect((await readRateBudget(t.db, KEY))!.probeOwner).toBe('b'); // not a's to end
    await recordRateBudget(t.db, KEY, seen({ remaining: 9, resetAt: at(3600), observedAt: at(18) }), 'b');
    expect(await readRateBudget(t.db, KEY)).toMatchObject({ probeOwner: null, probeUntil: null, remaining: 9 });
  });

  it('there is nothing to claim before anything was recorded', async () => {
    expect(await claimRateBudgetProbe(t.db, KEY, 'a', at(0), at(15))).toBe(false);
  });
});
