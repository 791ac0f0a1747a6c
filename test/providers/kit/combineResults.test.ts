/**
 * A unit of several jobs (an integration-wide reference dataset, one job per source) combines their
 * results: items summed, surfaces merged, a verify's counts summed, an incomplete listing kept.
 */
import { describe, expect, it } from 'vitest';
import { combineResults } from '../../../src/providers/kit/unitScaffold.js';

const counts = (n: number) => ({ checked: 10 * n, missing: n, stale: 0, restored: 0, deleted: 2 * n });

describe('combineResults', () => {
  it('sums the verify counts of every job, and keeps an incomplete listing', () => {
    const cut = { surface: 'members', reason: 'cap' };
    const r = combineResults([
      { items: 1, touchedSurfaces: ['members'], verify: counts(1) },
      { items: 0, touchedSurfaces: [], verify: counts(2), incomplete: cut },
      { items: 2, touchedSurfaces: ['members'], verify: counts(3) },
    ]);
    expect(r).toEqual({
      items: 3,
      touchedSurfaces: ['members'],
      verify: { checked: 60, missing: 6, stale: 0, restored: 0, deleted: 12 },
      incomplete: cut,
    });
  });

  it('results without verify counts combine without them; one result is itself', () => {
    expect(combineResults([{ items: 1 }, { items: 2, touchedSurfaces: ['a'] }])).toEqual({
      items: 3,
      touchedSurfaces: ['a'],
    });
    const one = { items: 5, verify: counts(1) };
    expect(combineResults([one])).toBe(one);
  });
});
