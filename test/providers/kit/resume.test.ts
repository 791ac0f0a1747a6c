/**
 * The keyset progress a deferred read hands its next attempt (src/providers/kit/resume.ts): the
 * edge in either order, the items tied at it, and checkpoints that are refused.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  checkpointOf,
  freshProgress,
  progressFrom,
  wrote,
  writtenBefore,
  type KeysetFormat,
} from '../../../src/providers/kit/resume.js';

const ASC: KeysetFormat = { v: 1, order: 'asc', surfaces: ['work_items', 'commits'] };
const DESC: KeysetFormat = { v: 3, order: 'desc', surfaces: ['commits'], maxTied: 2 };

describe('keyset progress', () => {
  it('ascending: the edge is the latest time written, with the ids written at it', () => {
    const p = freshProgress(ASC);
    wrote(ASC, p, 'a', 10);
    wrote(ASC, p, 'b', 20);
    wrote(ASC, p, 'c', 20);
    p.pages = 2;
    p.counts.work_items = 3;
    const cp = checkpointOf(ASC, p)!;
    expect(cp).toEqual({ v: 1, from: 20, tied: ['b', 'c'], pages: 2, counts: { work_items: 3, commits: 0 } });
    const back = progressFrom(ASC, cp)!;
    expect(['a', 'b', 'c', 'd'].map((id, i) => writtenBefore(ASC, back, id, [10, 20, 20, 20][i]!))).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(writtenBefore(ASC, back, 'a', 21)).toBe(false); // edited since: read again
  });

  it('descending: the edge is the earliest time written; too many ties or an order broken hand none', () => {
    const p = freshProgress(DESC);
    wrote(DESC, p, 'x', 30);
    wrote(DESC, p, 'y', 20);
    expect(checkpointOf(DESC, p)).toMatchObject({ from: 20, tied: ['y'] });
    expect(writtenBefore(DESC, progressFrom(DESC, checkpointOf(DESC, p))!, 'x', 30)).toBe(true);
    wrote(DESC, p, 'z', 20);
    wrote(DESC, p, 'w', 20);
    expect(checkpointOf(DESC, p)).toBeNull(); // three at the edge, two kept at most
    const q = freshProgress(DESC);
    wrote(DESC, q, 'x', 20);
    wrote(DESC, q, 'y', 30); // newer after older: out of the list's order
    expect(checkpointOf(DESC, q)).toBeNull();
    expect(checkpointOf(DESC, freshProgress(DESC))).toBeNull(); // nothing written
  });

  it('a later pass, or the second phase, hands a checkpoint before its listing wrote anything', () => {
    const p = freshProgress(ASC);
    expect(checkpointOf(ASC, p)).toBeNull(); // nothing written: start over
    p.pass = 1;
    const cp = checkpointOf(ASC, p)!;
    expect(cp).toEqual({ v: 1, from: null, tied: [], pages: 0, counts: { work_items: 0, commits: 0 }, pass: 1 });
    expect(progressFrom(ASC, cp)).toMatchObject({ edge: null, pass: 1 });
    p.pass = 0;
    p.after = 'x-1';
    expect(progressFrom(ASC, checkpointOf(ASC, p))).toMatchObject({ edge: null, after: 'x-1' });
    expect(progressFrom(ASC, { ...cp, pass: 0 })).toBeNull(); // no time and nothing past the first listing
    expect(progressFrom(ASC, { ...cp, pass: -1 })).toBeNull();
    expect(progressFrom(ASC, { ...cp, pass: '1' })).toBeNull();
  });

  it('a checkpoint of another version, or with counts not of the format, is refused', () => {
    const cp = { v: 1, from: 5, tied: ['a'], pages: 0, counts: { work_items: 1, commits: 0 } };
    expect(progressFrom(ASC, cp)).not.toBeNull();
    expect(progressFrom(DESC, cp)).toBeNull();
    expect(progressFrom(ASC, { ...cp, counts: { work_items: 1 } })).toBeNull();
    expect(progressFrom(ASC, { ...cp, counts: { work_items: 1, commits: 0, extra: 1 } })).toBeNull();
    expect(progressFrom(ASC, { ...cp, counts: { work_items: -1, commits: 0 } })).toBeNull();
    expect(progressFrom(ASC, { ...cp, tied: [''] })).toBeNull();
    expect(progressFrom(ASC, { ...cp, from: 1.5 })).toBeNull();
    expect(progressFrom(ASC, null)).toBeNull();
  });

  it('any ascending read resumed from its checkpoint writes each remaining item exactly once', () => {
    const times = fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(times, fc.nat(), (ts, cut) => {
        const items = [...ts].sort((a, b) => a - b).map((t, i) => ({ id: `i${i}`, t }));
        const stop = cut % items.length;
        const p = freshProgress(ASC);
        for (const it of items.slice(0, stop)) wrote(ASC, p, it.id, it.t);
        const cp = checkpointOf(ASC, p);
        const resumed = cp ? progressFrom(ASC, cp)! : null;
        const from = resumed?.edge ?? -Infinity;
        // The next attempt asks from the edge, inclusive, and skips what it wrote there.
        const again = items.filter((it) => it.t >= from && !(resumed && writtenBefore(ASC, resumed, it.id, it.t)));
        const ids = [...items.slice(0, resumed ? stop : 0), ...again].map((it) => it.id);
        expect(ids).toEqual(items.map((it) => it.id));
      }),
    );
  });
});
