/**
 * The Jira emulator reads JQL dates with its own code (src/emulators/jira/time.ts), not the
 * provider's: the two must name the same instant for every wall-clock minute, in zones with clock
 * changes and with half-hour offsets alike, and write timestamps the provider reads back.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jiraTimestamp, jqlDateInstant, knownTimeZone } from '../../../src/emulators/jira/time.js';
import { jqlMinute, jqlWallToInstant, parseJiraTime } from '../../../src/providers/jira/timeZone.js';

const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/St_Johns'];
const FROM = Date.UTC(2024, 0, 1);
const TO = Date.UTC(2027, 0, 1);

describe('the Jira emulator clock', () => {
  it('names the instant the provider names for every JQL minute, clock changes included', () => {
    fc.assert(
      fc.property(fc.integer({ min: FROM, max: TO }), fc.constantFrom(...ZONES), (ms, zone) => {
        const text = jqlMinute(ms, zone);
        expect(jqlDateInstant(text, zone)).toBe(jqlWallToInstant(text, zone));
        expect(jqlDateInstant(text.slice(0, 10), zone)).toBe(jqlWallToInstant(text.slice(0, 10), zone));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads the repeated and the skipped hour of a clock change', () => {
    // Berlin: 2026-10-25 02:30 happens twice (the earlier is 00:30Z); 2026-03-29 02:30 never (read as 01:30Z).
    expect(new Date(jqlDateInstant('2026-10-25 02:30', 'Europe/Berlin')).toISOString()).toBe(
      '2026-10-25T00:30:00.000Z',
    );
    expect(new Date(jqlDateInstant('2026-03-29 02:30', 'Europe/Berlin')).toISOString()).toBe(
      '2026-03-29T01:30:00.000Z',
    );
    expect(jqlDateInstant('yesterday', 'UTC')).toBeNaN();
  });

  it('writes timestamps the provider reads back, and knows zones as the runtime does', () => {
    fc.assert(
      fc.property(fc.integer({ min: FROM, max: TO }), (ms) => {
        expect(parseJiraTime(jiraTimestamp(ms))).toBe(ms);
      }),
    );
    expect(knownTimeZone('Europe/Berlin')).toBe(true);
    expect(knownTimeZone('Mars/Olympus_Mons')).toBe(false);
  });
});
