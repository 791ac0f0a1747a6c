import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideExpiry,
  linearBackfillEligibility,
  WORK_ITEM_FAMILY,
  type ExpiredUnitFacts,
} from '../../src/domain/retryPolicy.js';

const FAMILY = ['work-items', 'work-item-labels', 'work-item-projects', 'work-item-history', 'work-item-comments'];
const SURFACES = ['work_items', 'work_item_labels', 'work_item_comments', 'pull_requests', 'audit_log'];

const eligibleFacts: ExpiredUnitFacts = {
  provider: 'linear',
  mode: 'backfill',
  datasetKey: 'work-items',
  declaredSurfaces: ['work_items', 'work_item_labels'],
  retrySafeSurfaces: ['work_items', 'work_item_labels', 'work_item_comments'],
};

const facts: fc.Arbitrary<ExpiredUnitFacts> = fc.record({
  provider: fc.constantFrom('linear', 'Linear', 'github', 'jira', 'synthetic', ''),
  mode: fc.constantFrom('backfill', 'incremental', 'full_resync', 'Backfill'),
  datasetKey: fc.constantFrom(...FAMILY, 'teams', 'prs', 'work-item', 'work-items-extra', 'members'),
  declaredSurfaces: fc.uniqueArray(fc.constantFrom(...SURFACES), { maxLength: SURFACES.length }),
  retrySafeSurfaces: fc.uniqueArray(fc.constantFrom(...SURFACES), { maxLength: SURFACES.length }),
});

/** SPEC §6, stated independently of the implementation. */
function specDecision(f: ExpiredUnitFacts, retriesSoFar: number, max: number): string {
  const eligible =
    f.provider === 'linear' &&
    f.mode === 'backfill' &&
    FAMILY.includes(f.datasetKey) &&
    f.declaredSurfaces.every((s) => f.retrySafeSurfaces.includes(s));
  if (!eligible) return 'worker_lost';
  return retriesSoFar < max ? 'retry' : 'retry_exhausted';
}

describe('linearBackfillEligibility + decideExpiry (SPEC §6)', () => {
  it('the work-item family is exactly the five SPEC datasets', () => {
    expect([...WORK_ITEM_FAMILY].sort()).toEqual([...FAMILY].sort());
  });

  it('retries an eligible unit while the budget lasts, then reports it exhausted', () => {
    expect(decideExpiry(linearBackfillEligibility, eligibleFacts, 0, 1)).toBe('retry');
    expect(decideExpiry(linearBackfillEligibility, eligibleFacts, 1, 1)).toBe('retry_exhausted');
    expect(decideExpiry(linearBackfillEligibility, eligibleFacts, 0, 0)).toBe('retry_exhausted');
  });

  it.each([
    ['provider', { provider: 'github' }],
    ['mode', { mode: 'incremental' }],
    ['mode', { mode: 'full_resync' }],
    ['dataset', { datasetKey: 'teams' }],
    ['surfaces', { declaredSurfaces: ['work_items', 'pull_requests'] }],
    ['surfaces', { retrySafeSurfaces: [] }],
  ] as const)('any one condition failing (%s) → worker_lost', (_, change) => {
    expect(decideExpiry(linearBackfillEligibility, { ...eligibleFacts, ...change }, 0, 5)).toBe('worker_lost');
  });

  it('every declared surface counts, not just the ones a unit got to write', () => {
    const unsafe = { ...eligibleFacts, declaredSurfaces: ['work_items', 'audit_log'] };
    expect(linearBackfillEligibility(unsafe)).toBe(false);
  });

  it('matches the SPEC rule for every combination', () => {
    fc.assert(
      fc.property(facts, fc.nat(4), fc.nat(4), (f, retries, max) => {
        expect(decideExpiry(linearBackfillEligibility, f, retries, max)).toBe(specDecision(f, retries, max));
      }),
      { numRuns: 2000 },
    );
  });

  it('the policy is pluggable: decideExpiry asks the predicate it is given', () => {
    fc.assert(
      fc.property(facts, fc.nat(4), fc.nat(4), (f, retries, max) => {
        const budget = retries < max ? 'retry' : 'retry_exhausted';
        expect(decideExpiry(() => true, f, retries, max)).toBe(budget);
        expect(decideExpiry(() => false, f, retries, max)).toBe('worker_lost');
      }),
    );
  });
});
