/**
 * Jira's limits are per endpoint: a success answer may say `X-RateLimit-Remaining: 0` (that endpoint,
 * this second) without any reset. Neither the shared budget nor the Jira reader may turn that into a
 * credential-wide stop that sends every later unit through the probe one at a time.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { BudgetLedger, RateBudget } from '../../../src/providers/kit/budget.js';
import { runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { readRateBudget } from '../../../src/store/rateBudgets.js';
import { T0 } from '../../helpers/emulatorSuite.js';
import { CREDENTIAL_ID, ORG } from '../../helpers/unitContext.js';
import { useJiraSuite } from './support.js';

// A unit waiting for another's probe defers at once (no polling): serializing shows as deferrals.
const FAST: JiraProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: { probePolls: 0 } };
const KEY = { orgId: ORG, provider: 'jira', credentialId: CREDENTIAL_ID };
const UNITS = 12;

const fx = useJiraSuite(
  {
    seed: 4,
    scale: { projects: 1, issues: 10, days: 5 },
    endpointLimits: { routes: { 'GET /rest/api/3/project/{key}': 1 } },
  },
  { tier: 'reference' },
);

describe('a remaining of 0 without a reset', () => {
  it('the shared budget: every later unit goes ahead at once, none holds or waits for a probe', async () => {
    await fx.start();
    const clock = new ManualClock(T0);
    const ledger = new BudgetLedger();
    const budget = (owner: string) =>
      new RateBudget({ db: fx.db, key: KEY, owner, clock, subject: 'test', ledger, probePolls: 0 });
    const first = budget('unit-0');
    await first.gate();
    await first.observe({ remaining: 0, limit: 350, resetAt: null, limitedUntil: null, observedAt: clock.now() });
    first.done();
    await first.flush();

    const later = Array.from({ length: UNITS }, (_, i) => budget(`unit-${i + 1}`));
    const gates = await Promise.allSettled(later.map((b) => b.gate()));
    expect(gates.filter((g) => g.status === 'rejected')).toEqual([]);
    // All of them in flight together; nobody took the probe lease; the clock never moved.
    expect(ledger.of(KEY).inFlight).toBe(UNITS);
    expect(await readRateBudget(fx.db, KEY)).toMatchObject({ probeOwner: null, probeUntil: null });
    expect(clock.now().getTime()).toBe(T0);
  });

  it('the Jira reader: after an answer spending an endpoint to 0, many units on the credential all run', async () => {
    await fx.start();
    await runJiraUnit(fx.unit({ datasetKey: 'projects' }), FAST);
    const spent = fx.emu.requestLog.find((l) => l.path === '/rest/api/3/project/ENG')!;
    expect(spent.status).toBe(200);
    const results = await Promise.allSettled(
      Array.from({ length: UNITS }, () => runJiraUnit(fx.unit({ datasetKey: 'members' }), FAST)),
    );
    expect(results.filter((r) => r.status === 'rejected').map((r) => String(r.reason))).toEqual([]);
    const members = fx.emu.requestLog.filter((l) => l.path.startsWith('/rest/api/3/user/assignable/search'));
    expect(members.length).toBe(UNITS * 10);
    expect(await readRateBudget(fx.db, KEY)).toMatchObject({ probeOwner: null, limitedUntil: null });
  });
});
