/** Cron math of schedules: validation naming the field, next slots in a time zone, DST. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors.js';
import { nextSlot, normalizeTimezone, validateSchedule } from '../../src/planning/scheduleCron.js';
import { validateScheduleMode } from '../../src/planning/schedules.js';

const NOW = new Date('2026-03-27T12:00:00Z');

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).field;
  }
  throw new Error('expected a ValidationError');
}

/** The next `n` slots after `from`. */
function slots(cron: string, tz: string, from: Date, n: number): string[] {
  const out: string[] = [];
  let at: Date | null = from;
  for (let i = 0; i < n && at; i++) {
    at = nextSlot(cron, tz, at);
    if (at) out.push(at.toISOString());
  }
  return out;
}

describe('validateSchedule', () => {
  it('accepts five fields and nicknames, collapsing whitespace and naming the zone as IANA spells it', () => {
    expect(validateSchedule('  0  *  * * * ', 'utc', NOW)).toEqual({ cron: '0 * * * *', timezone: 'UTC' });
    expect(validateSchedule('@hourly', 'europe/berlin', NOW)).toEqual({ cron: '@hourly', timezone: 'Europe/Berlin' });
    expect(validateSchedule('*/15 9-17 * * MON-FRI', 'America/New_York', NOW).cron).toBe('*/15 9-17 * * MON-FRI');
  });

  it.each([
    ['61 * * * *'],
    ['* * * * * *'],
    ['0 0 * *'],
    [''],
    ['hello'],
    ['2026-05-01T00:00:00'],
    ['@reboot'],
    ['0 0 30 2 *'],
    ['x'.repeat(201)],
  ])('refuses cron %j naming `cron`', (cron) => {
    expect(fieldOf(() => validateSchedule(cron, 'UTC', NOW))).toBe('cron');
  });

  it.each([['Mars/Olympus'], ['+01:00'], [''], ['Europe/Berlin; DROP TABLE x']])(
    'refuses timezone %j naming `timezone`',
    (tz) => {
      expect(fieldOf(() => validateSchedule('0 * * * *', tz, NOW))).toBe('timezone');
      expect(fieldOf(() => normalizeTimezone(tz))).toBe('timezone');
    },
  );

  it('refuses a scheduled backfill with a reason, and unknown modes', () => {
    expect(fieldOf(() => validateScheduleMode('backfill'))).toBe('mode');
    expect(() => validateScheduleMode('backfill')).toThrow(/window/);
    expect(fieldOf(() => validateScheduleMode('hourly'))).toBe('mode');
    expect(validateScheduleMode('full_resync')).toBe('full_resync');
  });
});

describe('nextSlot', () => {
  it('is strictly after the instant, also exactly on a slot', () => {
    expect(nextSlot('0 * * * *', 'UTC', new Date('2026-01-01T10:00:00.000Z'))!.toISOString()).toBe(
      '2026-01-01T11:00:00.000Z',
    );
    expect(nextSlot('0 * * * *', 'UTC', new Date('2026-01-01T09:59:59.999Z'))!.toISOString()).toBe(
      '2026-01-01T10:00:00.000Z',
    );
  });

  it('keeps 09:00 Europe/Berlin local across both DST changes of 2026', () => {
    // Spring forward on 29 March: CET (UTC+1) → CEST (UTC+2).
    expect(slots('0 9 * * *', 'Europe/Berlin', NOW, 3)).toEqual([
      '2026-03-28T08:00:00.000Z',
      '2026-03-29T07:00:00.000Z',
      '2026-03-30T07:00:00.000Z',
    ]);
    // Fall back on 25 October: CEST → CET.
    expect(slots('0 9 * * *', 'Europe/Berlin', new Date('2026-10-23T12:00:00Z'), 3)).toEqual([
      '2026-10-24T07:00:00.000Z',
      '2026-10-25T08:00:00.000Z',
      '2026-10-26T08:00:00.000Z',
    ]);
  });

  it('fires a daily job whose local time falls in the spring-forward gap once that day', () => {
    const day = slots('30 2 * * *', 'Europe/Berlin', new Date('2026-03-28T12:00:00Z'), 2);
    expect(day).toHaveLength(2);
    expect(day[0]!.startsWith('2026-03-29')).toBe(true);
    expect(day[1]!.startsWith('2026-03-30')).toBe(true);
  });

  const nextHourlySlot =
    'property: the next hourly slot is the first whole hour after any instant, in any zone with whole-hour offsets';
  it(nextHourlySlot, () => {
    const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo'];
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2060, 0, 1) }),
        fc.constantFrom(...zones),
        (ms, tz) => {
          const next = nextSlot('0 * * * *', tz, new Date(ms))!.getTime();
          expect(next).toBe((Math.floor(ms / 3_600_000) + 1) * 3_600_000);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('property: slots increase strictly and each is the next after the one before', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2040, 0, 1) }),
        fc.constantFrom('*/5 * * * *', '0 9 * * 1-5', '15 3 1 * *', '@daily'),
        fc.constantFrom('UTC', 'Europe/Berlin', 'Australia/Lord_Howe'),
        (ms, cron, tz) => {
          const a = nextSlot(cron, tz, new Date(ms))!;
          const b = nextSlot(cron, tz, a)!;
          expect(a.getTime()).toBeGreaterThan(ms);
          expect(b.getTime()).toBeGreaterThan(a.getTime());
          // Nothing between the instant and its next slot: the slot is also next after just before it.
          expect(nextSlot(cron, tz, new Date(a.getTime() - 1000))!.getTime()).toBe(a.getTime());
        },
      ),
      { numRuns: 300 },
    );
  });
});
