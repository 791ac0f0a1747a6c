/**
 * JQL building: no value can leave its quotes (property tests against the emulator's JQL tokenizer),
 * and the minute-rounded window always covers [since, before) in the caller's time zone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inWindow, issuesJql, jqlString } from '../../../src/providers/jira/jql.js';
import { parseJql, tokenize } from '../../../src/emulators/jira/jql.js';
import { jqlMinute, jqlWallToInstant, parseJiraTime } from '../../../src/providers/jira/timeZone.js';

const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Chatham'];
const NASTY = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({
    unit: fc.constantFrom('"', "'", '\\', ' ', 'A', 'N', 'D', '\n', '\u0000', ')', '=', 'u'),
    maxLength: 30,
  }),
);

describe('jqlString', () => {
  it('every value is one string token that reads back as itself', () => {
    fc.assert(
      fc.property(NASTY, (value) => {
        const toks = tokenize(jqlString(value));
        expect(toks).toHaveLength(1);
        expect(toks[0]).toMatchObject({ kind: 'string', text: value });
      }),
      { numRuns: 2000 },
    );
  });

  it('a value in the project clause stays the project: nothing it holds becomes a clause', () => {
    fc.assert(
      fc.property(NASTY, fc.constantFrom(...ZONES), (value, tz) => {
        const jql = issuesJql({ project: value, since: new Date(0), before: new Date(86_400_000), timeZone: tz });
        const parsed = parseJql(jql, tz);
        expect(parsed.project).toBe(value);
        expect(parsed.updated).toHaveLength(2);
        expect(parsed.order).toBe('ASC');
      }),
      { numRuns: 1000 },
    );
  });

  it('escapes quotes and backslashes', () => {
    expect(jqlString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(issuesJql({ project: 'ENG', since: null, before: null, timeZone: 'UTC' })).toBe(
      'project = "ENG" ORDER BY updated ASC',
    );
  });
});

describe('window bounds', () => {
  const instant = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) });

  // Near a clock change the bound moves an hour, and a local time in a repeated hour reads as its
  // earlier occurrence: up to two hours (and a minute of rounding) wider there, never narrower.
  it('the JQL bounds cover [since, before) in whole minutes of any time zone, at most two hours wider', () => {
    fc.assert(
      fc.property(instant, fc.integer({ min: 1, max: 40 * 86_400_000 }), fc.constantFrom(...ZONES), (s, len, tz) => {
        const since = new Date(s);
        const before = new Date(s + len);
        const parsed = parseJql(issuesJql({ project: 'ENG', since, before, timeZone: tz }), tz);
        const from = parsed.updated.find((u) => u.op === '>=')!.ms;
        const to = parsed.updated.find((u) => u.op === '<')!.ms;
        expect(from).toBeLessThanOrEqual(since.getTime());
        expect(to).toBeGreaterThanOrEqual(before.getTime());
        expect(since.getTime() - from).toBeLessThanOrEqual(7_260_000);
        expect(to - before.getTime()).toBeLessThanOrEqual(7_260_000);
      }),
      { numRuns: 1000 },
    );
  });

  it('inWindow keeps exactly [since, before)', () => {
    const since = new Date(Date.UTC(2026, 2, 2, 12, 0, 30));
    const before = new Date(Date.UTC(2026, 2, 2, 12, 5, 30));
    expect(inWindow(since.getTime() - 1, since, before)).toBe(false);
    expect(inWindow(since.getTime(), since, before)).toBe(true);
    expect(inWindow(before.getTime() - 1, since, before)).toBe(true);
    expect(inWindow(before.getTime(), since, before)).toBe(false);
    expect(inWindow(Number.NaN, null, null)).toBe(false);
  });

  it('wall-clock dates round-trip through a zone, and Jira timestamps parse with +0000 offsets', () => {
    const t = Date.UTC(2026, 2, 29, 0, 30);
    expect(jqlMinute(t, 'Europe/Berlin')).toBe('2026-03-29 01:30');
    expect(jqlWallToInstant('2026-03-29 01:30', 'Europe/Berlin')).toBe(t);
    expect(parseJiraTime('2026-03-02T12:00:00.000+0000')).toBe(Date.UTC(2026, 2, 2, 12));
    expect(parseJiraTime('2026-03-02T13:00:00.000+0100')).toBe(Date.UTC(2026, 2, 2, 12));
    expect(parseJiraTime('not a time')).toBeNaN();
  });
});
