import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { PostgresSink } from '../../src/sinks/postgres.js';
import { cleanJson, wellFormed } from '../../src/sinks/text.js';
import { openPglite, openPostgres, useSinkFixture, type OpenDb } from '../sinks/normalizedHelpers.js';

const ORG = 'org-surrogates';
const T0 = Date.UTC(2026, 0, 10, 12);
const HIGH = '\ud800';
const LOW = '\udc00';
const EMOJI = '😀';
const FFFD = '\ufffd';

/** Whether `text` holds a surrogate without its partner, checked code unit by code unit. */
function hasLoneSurrogate(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return true;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      return true;
    }
  }
  return false;
}

/** Strings of any UTF-16 code units, surrogates drawn often. */
const codeUnits = fc
  .array(fc.oneof(fc.integer({ min: 0xd800, max: 0xdfff }), fc.integer({ min: 0, max: 0xffff })), { maxLength: 40 })
  .map((units) => String.fromCharCode(...units));

describe('wellFormed', () => {
  it('leaves no lone surrogate, keeps the length, and returns a string that had none unchanged', () => {
    fc.assert(
      fc.property(codeUnits, (text) => {
        const out = wellFormed(text);
        expect(hasLoneSurrogate(out)).toBe(false);
        expect(out.length).toBe(text.length);
        if (!hasLoneSurrogate(text)) expect(out).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('replaces each lone surrogate with U+FFFD and keeps pairs', () => {
    expect(wellFormed(HIGH)).toBe(FFFD);
    expect(wellFormed(LOW)).toBe(FFFD);
    expect(wellFormed(`a${HIGH}b`)).toBe(`a${FFFD}b`);
    expect(wellFormed(`${LOW}${HIGH}`)).toBe(`${FFFD}${FFFD}`);
    expect(wellFormed(`${HIGH}${HIGH}${LOW}`)).toBe(`${FFFD}${HIGH}${LOW}`);
    expect(wellFormed(`x${EMOJI}y`)).toBe(`x${EMOJI}y`);
  });

  it('cleanJson cleans every string and key at any depth', () => {
    const text = cleanJson({ [`k${LOW}`]: [{ [HIGH]: `a${HIGH}b` }], e: EMOJI }, wellFormed);
    expect(JSON.parse(text!)).toEqual({ [`k${FFFD}`]: [{ [FFFD]: `a${FFFD}b` }], e: EMOJI });
  });
});

/** The surrogate checks, run against PostgreSQL and against PGlite. */
function surrogateSuite(label: string, open: OpenDb): void {
  describe(`lone surrogates written through the sinks (${label})`, () => {
    const f = useSinkFixture(open, ORG, new ManualClock(T0));

    it('stores a work item whose title, labels and raw carry lone surrogates, with U+FFFD in their place', async () => {
      const row = {
        org_id: ORG,
        integration_id: f.integrationId,
        provider: 'github',
        external_id: 'lone-1',
        last_synced_at: new Date(T0),
        title: `${HIGH} ${LOW} a${HIGH}b ${EMOJI}`,
        labels: [HIGH, LOW, `a${HIGH}b`, EMOJI],
        raw: { nested: { deep: [HIGH, `a${HIGH}b`] }, [`key${LOW}`]: LOW, emoji: EMOJI },
      };
      await expect(f.sink.write(f.guard(), 'work_items', [row])).resolves.toBe(1);
      const { rows } = await f.db.query<{ title: string; labels: string[]; raw: unknown }>(
        `SELECT title, labels, raw FROM ${f.db.schema.table('work_items')} WHERE external_id = 'lone-1'`,
      );
      expect(rows).toEqual([
        {
          title: `${FFFD} ${FFFD} a${FFFD}b ${EMOJI}`,
          labels: [FFFD, FFFD, `a${FFFD}b`, EMOJI],
          raw: { nested: { deep: [FFFD, `a${FFFD}b`] }, [`key${FFFD}`]: FFFD, emoji: EMOJI },
        },
      ]);
    });

    it('the generic Postgres sink stores text and jsonb with U+FFFD in place of lone surrogates', async () => {
      await f.db.exec(
        `CREATE TABLE ${f.db.schema.table('surrogate_things')} (key text PRIMARY KEY, label text, doc jsonb)`,
      );
      const generic = new PostgresSink(f.db, {
        things: {
          table: 'surrogate_things',
          conflictColumns: ['key'],
          columns: ['key', 'label', 'doc'],
          retrySafe: true,
          jsonColumns: ['doc'],
        },
      });
      await generic.write(f.guard(), 'things', [
        { key: `k${HIGH}`, label: `a${HIGH}b ${EMOJI}`, doc: { [LOW]: [`x${HIGH}`, EMOJI] } },
      ]);
      const { rows } = await f.db.query(`SELECT key, label, doc FROM ${f.db.schema.table('surrogate_things')}`);
      expect(rows).toEqual([{ key: `k${FFFD}`, label: `a${FFFD}b ${EMOJI}`, doc: { [FFFD]: [`x${FFFD}`, EMOJI] } }]);
    });
  });
}

surrogateSuite('PostgreSQL', openPostgres);
surrogateSuite('PGlite', openPglite);
