import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isTerminalRun,
  isTerminalUnit,
  nextUnitStatus,
  runEventAllowed,
  RUN_STATUSES,
  TERMINAL_RUN_STATUSES,
  TERMINAL_UNIT_STATUSES,
  UNIT_STATUSES,
  type RunEvent,
  type RunStatus,
  type UnitEvent,
  type UnitStatus,
} from '../../src/domain/statuses.js';

const UNIT_EVENTS: readonly UnitEvent[] = [
  'dispatch',
  'redispatch_stale',
  'claim',
  'succeed',
  'fail',
  'defer',
  'expire_retry',
  'expire_fail',
  'deny',
  'cancel',
];
const RUN_EVENTS: readonly RunEvent[] = ['start_dispatch', 'finalize', 'deny_all', 'cancel'];

/**
 * SPEC §3, unit transitions, written out cell by cell: every (from, event) pair not listed here
 * must be refused.
 */
const UNIT_TABLE: ReadonlyArray<[UnitStatus, UnitEvent, UnitStatus]> = [
  ['planned', 'dispatch', 'dispatching'],
  ['retrying', 'dispatch', 'dispatching'],
  ['dispatching', 'redispatch_stale', 'dispatching'],
  ['dispatching', 'claim', 'running'],
  ['running', 'succeed', 'success'],
  ['running', 'fail', 'failed'],
  ['running', 'defer', 'retrying'],
  ['running', 'expire_retry', 'retrying'],
  ['running', 'expire_fail', 'failed'],
  ['planned', 'deny', 'failed'],
  ['dispatching', 'deny', 'failed'],
  // A denied run is finalized at once: a retrying unit would strand it, so it is failed too.
  ['retrying', 'deny', 'failed'],
  ['planned', 'cancel', 'cancelled'],
  ['dispatching', 'cancel', 'cancelled'],
  ['running', 'cancel', 'cancelled'],
  ['retrying', 'cancel', 'cancelled'],
];

/** SPEC §3, run transitions: planned → dispatching once; any non-terminal → terminal once. */
const RUN_TABLE: ReadonlyArray<[RunStatus, RunEvent]> = [
  ['planned', 'start_dispatch'],
  ['planned', 'finalize'],
  ['dispatching', 'finalize'],
  ['planned', 'deny_all'],
  ['dispatching', 'deny_all'],
  ['planned', 'cancel'],
  ['dispatching', 'cancel'],
];

function expectedUnit(from: UnitStatus, event: UnitEvent): UnitStatus | null {
  return UNIT_TABLE.find(([f, e]) => f === from && e === event)?.[2] ?? null;
}

/** Where a run goes when an allowed event fires (finalize picks any terminal status). */
function runTargets(event: RunEvent): readonly RunStatus[] {
  switch (event) {
    case 'start_dispatch':
      return ['dispatching'];
    case 'finalize':
      return TERMINAL_RUN_STATUSES;
    case 'deny_all':
      return ['failed'];
    case 'cancel':
      return ['cancelled'];
  }
}

describe('status lists', () => {
  it('match SPEC §2', () => {
    expect([...UNIT_STATUSES].sort()).toEqual(
      ['planned', 'dispatching', 'running', 'retrying', 'success', 'failed', 'cancelled'].sort(),
    );
    expect([...TERMINAL_UNIT_STATUSES].sort()).toEqual(['cancelled', 'failed', 'success']);
    expect([...RUN_STATUSES].sort()).toEqual(
      ['planned', 'dispatching', 'success', 'partial_failed', 'failed', 'cancelled'].sort(),
    );
    expect([...TERMINAL_RUN_STATUSES].sort()).toEqual(['cancelled', 'failed', 'partial_failed', 'success']);
  });

  it.each(UNIT_STATUSES.map((s) => [s]))('isTerminalUnit(%s) agrees with the terminal list', (s) => {
    expect(isTerminalUnit(s)).toBe(['success', 'failed', 'cancelled'].includes(s));
  });

  it.each(RUN_STATUSES.map((s) => [s]))('isTerminalRun(%s) agrees with the terminal list', (s) => {
    expect(isTerminalRun(s)).toBe(['success', 'partial_failed', 'failed', 'cancelled'].includes(s));
  });
});

describe('unit transition table (SPEC §3)', () => {
  const cells = UNIT_STATUSES.flatMap((from) =>
    UNIT_EVENTS.map((event) => [from, event, expectedUnit(from, event)] as const),
  );

  it.each(cells)('%s --%s--> %s', (from, event, to) => {
    expect(nextUnitStatus(from, event)).toBe(to);
  });

  it('cancel works from every non-terminal status and from no terminal one', () => {
    for (const s of UNIT_STATUSES) {
      expect(nextUnitStatus(s, 'cancel')).toBe(isTerminalUnit(s) ? null : 'cancelled');
    }
  });

  it('a running unit is never re-dispatched: only lease expiry (or an outcome) moves it', () => {
    expect(nextUnitStatus('running', 'dispatch')).toBeNull();
    expect(nextUnitStatus('running', 'redispatch_stale')).toBeNull();
    expect(nextUnitStatus('running', 'claim')).toBeNull();
  });
});

describe('run transition table (SPEC §3)', () => {
  const cells = RUN_STATUSES.flatMap((from) =>
    RUN_EVENTS.map((event) => [from, event, RUN_TABLE.some(([f, e]) => f === from && e === event)] as const),
  );

  it.each(cells)('%s --%s--> allowed: %s', (from, event, allowed) => {
    expect(runEventAllowed(from, event)).toBe(allowed);
  });
});

const unitEvent = fc.constantFrom(...UNIT_EVENTS);
const unitStatus = fc.constantFrom(...UNIT_STATUSES);
const runEvent = fc.constantFrom(...RUN_EVENTS);

describe('unit state machine properties', () => {
  it('never leaves a terminal state, enters running only through claim, and ends at most once', () => {
    fc.assert(
      fc.property(unitStatus, fc.array(unitEvent, { maxLength: 60 }), (start, events) => {
        let status = start;
        let terminalEntries = 0;
        for (const event of events) {
          const next = nextUnitStatus(status, event);
          if (isTerminalUnit(status)) {
            expect(next).toBeNull();
            continue;
          }
          if (next === null) continue;
          if (next === 'running') {
            expect(event).toBe('claim');
            expect(status).toBe('dispatching');
          }
          if (isTerminalUnit(next)) terminalEntries++;
          status = next;
        }
        expect(terminalEntries).toBeLessThanOrEqual(1);
        expect(terminalEntries === 1).toBe(isTerminalUnit(status) && !isTerminalUnit(start));
      }),
    );
  });

  it('a refused event leaves the status unchanged, an allowed one follows the table', () => {
    fc.assert(
      fc.property(unitStatus, unitEvent, (from, event) => {
        expect(nextUnitStatus(from, event)).toBe(expectedUnit(from, event));
      }),
    );
  });

  it('cancel reaches cancelled from every state reachable from planned', () => {
    fc.assert(
      fc.property(fc.array(unitEvent, { maxLength: 40 }), (events) => {
        let status: UnitStatus = 'planned';
        for (const event of events) status = nextUnitStatus(status, event) ?? status;
        expect(nextUnitStatus(status, 'cancel')).toBe(isTerminalUnit(status) ? null : 'cancelled');
      }),
    );
  });
});

describe('run state machine properties', () => {
  it('planned → dispatching at most once; terminal is reached at most once and never left', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(runEvent, fc.nat()), { maxLength: 40 }), (steps) => {
        let status: RunStatus = 'planned';
        let starts = 0;
        let terminalEntries = 0;
        for (const [event, pick] of steps) {
          const allowed = runEventAllowed(status, event);
          if (isTerminalRun(status)) {
            expect(allowed).toBe(false);
            continue;
          }
          if (!allowed) continue;
          const targets = runTargets(event);
          const next = targets[pick % targets.length]!;
          if (next === 'dispatching') starts++;
          if (isTerminalRun(next)) terminalEntries++;
          status = next;
        }
        expect(starts).toBeLessThanOrEqual(1);
        expect(terminalEntries).toBeLessThanOrEqual(1);
      }),
    );
  });

  it('cancel is allowed from every non-terminal run status', () => {
    for (const s of RUN_STATUSES) expect(runEventAllowed(s, 'cancel')).toBe(!isTerminalRun(s));
  });
});
