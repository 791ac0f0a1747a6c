import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunkWindow, coveredWindow, DAY_MS, incrementalWindow, type Window } from '../../src/domain/windows.js';

const instant = fc.integer({ min: 0, max: 4_102_444_800_000 }); // 1970 … 2100
const span = fc.integer({ min: 1, max: 400 * DAY_MS });
/** Whole days (providers use 7 and 14) and a few fractions that are whole milliseconds. */
const days = fc.oneof(fc.integer({ min: 1, max: 30 }), fc.constantFrom(0.125, 0.25, 0.5, 1.5));

describe('chunkWindow', () => {
  it('splits a 35-day backfill into 14-day Linear chunks', () => {
    const since = new Date('2024-01-01T00:00:00Z');
    const before = new Date('2024-02-05T00:00:00Z');
    expect(chunkWindow(since, before, 14).map((w) => [w.since!.toISOString(), w.before!.toISOString()])).toEqual([
      ['2024-01-01T00:00:00.000Z', '2024-01-15T00:00:00.000Z'],
      ['2024-01-15T00:00:00.000Z', '2024-01-29T00:00:00.000Z'],
      ['2024-01-29T00:00:00.000Z', '2024-02-05T00:00:00.000Z'],
    ]);
  });

  it('chunks are contiguous, non-empty, half-open, ≤ size, and cover exactly [since, before)', () => {
    fc.assert(
      fc.property(instant, span, days, (start, length, size) => {
        const since = new Date(start);
        const before = new Date(start + length);
        const chunks = chunkWindow(since, before, size);
        const sizeMs = size * DAY_MS;
        expect(chunks.length).toBeGreaterThan(0);
        expect(chunks[0]!.since!.getTime()).toBe(since.getTime());
        expect(chunks.at(-1)!.before!.getTime()).toBe(before.getTime());
        chunks.forEach((w, i) => {
          const a = w.since!.getTime();
          const b = w.before!.getTime();
          expect(a).toBeLessThan(b);
          expect(b - a).toBeLessThanOrEqual(sizeMs);
          if (i > 0) expect(a).toBe(chunks[i - 1]!.before!.getTime());
        });
        expect(chunks.length).toBe(Math.ceil(length / sizeMs));
      }),
    );
  });

  it('every instant in [since, before) lies in exactly one chunk; before lies in none', () => {
    fc.assert(
      fc.property(
        instant,
        span,
        days,
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (start, length, size, f) => {
          const chunks = chunkWindow(new Date(start), new Date(start + length), size);
          const inside = (t: number) => chunks.filter((w) => w.since!.getTime() <= t && t < w.before!.getTime()).length;
          expect(inside(start + Math.floor(f * length))).toBe(1);
          expect(inside(start + length)).toBe(0);
          expect(inside(start - 1)).toBe(0);
        },
      ),
    );
  });

  it('an empty or inverted range has no chunks', () => {
    fc.assert(
      fc.property(instant, fc.integer({ min: 0, max: DAY_MS * 10 }), days, (t, back, size) => {
        expect(chunkWindow(new Date(t), new Date(t - back), size)).toEqual([]);
      }),
    );
  });

  it('rejects a size that is not positive', () => {
    const a = new Date(0);
    const b = new Date(DAY_MS);
    for (const bad of [0, -1, Number.NaN]) expect(() => chunkWindow(a, b, bad)).toThrow(RangeError);
  });
});

describe('coveredWindow', () => {
  it('is [since, before) of the range that was chunked', () => {
    fc.assert(
      fc.property(instant, span, days, (start, length, size) => {
        const covered = coveredWindow(chunkWindow(new Date(start), new Date(start + length), size));
        expect(covered.from!.getTime()).toBe(start);
        expect(covered.to!.getTime()).toBe(start + length);
      }),
    );
  });

  it('is min since and max before of any bounded windows, in any order', () => {
    const bounded = fc
      .tuple(instant, fc.integer({ min: 1, max: 100 * DAY_MS }))
      .map(([a, len]): Window => ({ since: new Date(a), before: new Date(a + len) }));
    fc.assert(
      fc.property(fc.array(bounded, { minLength: 1, maxLength: 20 }), (ws) => {
        const c = coveredWindow(ws);
        expect(c.from!.getTime()).toBe(Math.min(...ws.map((w) => w.since!.getTime())));
        expect(c.to!.getTime()).toBe(Math.max(...ws.map((w) => w.before!.getTime())));
        expect(coveredWindow([...ws].reverse())).toEqual(c);
      }),
    );
  });

  it('covers a quarter of a million windows (a spread of that many arguments overflows the stack)', () => {
    const ws = Array.from({ length: 250_000 }, (_, i) => ({
      since: new Date(i * DAY_MS),
      before: new Date((i + 1) * DAY_MS),
    }));
    expect(coveredWindow(ws)).toEqual({ from: new Date(0), to: new Date(250_000 * DAY_MS) });
  });

  it('is unbounded (both null) when there are no windows or any bound is null', () => {
    expect(coveredWindow([])).toEqual({ from: null, to: null });
    const w = { since: new Date(0), before: new Date(DAY_MS) };
    expect(coveredWindow([w, { since: null, before: new Date(5) }])).toEqual({ from: null, to: null });
    expect(coveredWindow([{ since: new Date(5), before: null }, w])).toEqual({ from: null, to: null });
  });
});

describe('incrementalWindow', () => {
  it('runs from the watermark to now', () => {
    fc.assert(
      fc.property(instant, instant, fc.integer({ min: 1, max: 365 }), (wm, now, depth) => {
        const w = incrementalWindow(new Date(wm), new Date(now), depth);
        expect(w.since!.getTime()).toBe(wm);
        expect(w.before!.getTime()).toBe(now);
      }),
    );
  });

  it('reaches back the overlap before the watermark, never before the initial depth without one', () => {
    fc.assert(
      fc.property(instant, instant, fc.integer({ min: 0, max: 86_400_000 }), (wm, now, overlap) => {
        const w = incrementalWindow(new Date(wm), new Date(now), 30, overlap);
        expect(w.since!.getTime()).toBe(wm - overlap);
        expect(w.before!.getTime()).toBe(now);
        expect(incrementalWindow(null, new Date(now), 30, overlap).since!.getTime()).toBe(now - 30 * DAY_MS);
      }),
    );
  });

  it('without a watermark starts the initial depth before now', () => {
    const now = new Date('2024-03-31T12:00:00Z');
    const w = incrementalWindow(null, now, 30);
    expect(w.since!.toISOString()).toBe('2024-03-01T12:00:00.000Z');
    expect(w.before).toEqual(now);
  });
});
