import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregateRun, jobRunStatusFor, type UnitCounts } from '../../src/domain/aggregate.js';
import { RUN_STATUSES, UNIT_STATUSES } from '../../src/domain/statuses.js';

const count = fc.nat(50);
/** Random counts; a status may be missing entirely, as in a GROUP BY over unit rows. */
const counts: fc.Arbitrary<UnitCounts> = fc.record(
  Object.fromEntries(UNIT_STATUSES.map((s) => [s, count])) as Record<(typeof UNIT_STATUSES)[number], typeof count>,
  { requiredKeys: [] },
);
const terminalCounts: fc.Arbitrary<UnitCounts> = fc.record(
  { success: count, failed: count, cancelled: count },
  { requiredKeys: [] },
);

describe('aggregateRun (SPEC §3)', () => {
  it('zero units → failed, "no sync units planned"', () => {
    expect(aggregateRun({})).toEqual({
      status: 'failed',
      total: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
      error: 'no sync units planned',
    });
  });

  it('examples', () => {
    expect(aggregateRun({ success: 3 })?.status).toBe('success');
    expect(aggregateRun({ failed: 2 })?.status).toBe('failed');
    expect(aggregateRun({ success: 1, failed: 1 })?.status).toBe('partial_failed');
    expect(aggregateRun({ success: 2, cancelled: 1 })?.status).toBe('success');
    expect(aggregateRun({ cancelled: 4 })?.status).toBe('cancelled');
    expect(aggregateRun({ success: 5, running: 1 })).toBeNull();
  });

  it('is terminal only when no unit is open', () => {
    fc.assert(
      fc.property(counts, (c) => {
        const open = (c.planned ?? 0) + (c.dispatching ?? 0) + (c.running ?? 0) + (c.retrying ?? 0);
        expect(aggregateRun(c) === null).toBe(open > 0);
      }),
    );
  });

  it('total = completed + failed + cancelled, and the counts match the unit rows', () => {
    fc.assert(
      fc.property(terminalCounts, (c) => {
        const out = aggregateRun(c)!;
        expect(out.total).toBe(out.completed + out.failed + out.cancelled);
        expect(out.completed).toBe(c.success ?? 0);
        expect(out.failed).toBe(c.failed ?? 0);
        expect(out.cancelled).toBe(c.cancelled ?? 0);
      }),
    );
  });

  it('success iff no unit failed and some succeeded; failed iff failures and no successes (or no units)', () => {
    fc.assert(
      fc.property(terminalCounts, (c) => {
        const s = c.success ?? 0;
        const f = c.failed ?? 0;
        const x = c.cancelled ?? 0;
        const out = aggregateRun(c)!;
        expect(out.status === 'success').toBe(f === 0 && s > 0);
        expect(out.status === 'partial_failed').toBe(f > 0 && s > 0);
        expect(out.status === 'failed').toBe(s === 0 && (f > 0 || x === 0));
        expect(out.status === 'cancelled').toBe(s === 0 && f === 0 && x > 0);
        expect(out.error === null).toBe(out.status === 'success' || out.status === 'cancelled');
      }),
    );
  });
});

describe('jobRunStatusFor (SPEC §3, JobRun observer)', () => {
  const expected = {
    planned: 'pending',
    dispatching: 'running',
    success: 'success',
    partial_failed: 'failed',
    failed: 'failed',
    cancelled: 'cancelled',
  } as const;

  it.each(RUN_STATUSES.map((s) => [s, expected[s]]))('%s → %s', (run, job) => {
    expect(jobRunStatusFor(run)).toBe(job);
  });
});
