import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffListing, type ListedItem, type StoredItem } from '../../src/domain/verify.js';

const at = (ms: number) => new Date(ms);
const id = fc.constantFrom(...Array.from({ length: 12 }, (_, i) => `id-${i}`));
const time = fc.option(
  fc.integer({ min: 0, max: 5 }).map((n) => at(n * 1000)),
  { nil: null },
);
const listed = fc.array(fc.record({ id, updatedAt: time }), { maxLength: 20 });
/** Stored rows have unique ids (the table's key). */
const stored = fc.uniqueArray(fc.record({ id, updatedAt: time, deletedAt: time }), {
  selector: (s) => s.id,
  maxLength: 12,
});

describe('diffListing', () => {
  it('sorts a listing against the store', () => {
    const list: ListedItem[] = [
      { id: 'new', updatedAt: at(5) },
      { id: 'same', updatedAt: at(3) },
      { id: 'newer', updatedAt: at(9) },
      { id: 'back', updatedAt: at(1) },
    ];
    const store: StoredItem[] = [
      { id: 'same', updatedAt: at(3), deletedAt: null },
      { id: 'newer', updatedAt: at(4), deletedAt: null },
      { id: 'back', updatedAt: at(1), deletedAt: at(2) },
      { id: 'gone', updatedAt: at(1), deletedAt: null },
      { id: 'gone-before', updatedAt: at(1), deletedAt: at(1) },
    ];
    expect(diffListing(list, store, true)).toEqual({
      missing: ['new'],
      stale: ['newer', 'back'],
      restored: ['back'],
      deleted: ['gone'],
      checked: 4,
    });
    expect(diffListing(list, store, false).deleted).toEqual([]);
  });

  it('counts an id listed twice once, at its latest update time', () => {
    const list = [
      { id: 'a', updatedAt: at(9) },
      { id: 'a', updatedAt: at(1) },
    ];
    const diff = diffListing(list, [{ id: 'a', updatedAt: at(5), deletedAt: null }], true);
    expect(diff).toMatchObject({ stale: ['a'], checked: 1 });
  });

  it('never deletes anything from an incomplete listing', () => {
    fc.assert(
      fc.property(listed, stored, (l, s) => {
        expect(diffListing(l, s, false).deleted).toEqual([]);
      }),
    );
  });

  it('never deletes an item that is listed, nor one already deleted', () => {
    fc.assert(
      fc.property(listed, stored, fc.boolean(), (l, s, complete) => {
        const ids = new Set(l.map((i) => i.id));
        const deletedBefore = new Set(s.filter((r) => r.deletedAt !== null).map((r) => r.id));
        for (const d of diffListing(l, s, complete).deleted) {
          expect(ids.has(d)).toBe(false);
          expect(deletedBefore.has(d)).toBe(false);
        }
      }),
    );
  });

  it('a complete listing deletes exactly the live stored items it does not list', () => {
    fc.assert(
      fc.property(listed, stored, (l, s) => {
        const ids = new Set(l.map((i) => i.id));
        const expected = s.filter((r) => r.deletedAt === null && !ids.has(r.id)).map((r) => r.id);
        expect(diffListing(l, s, true).deleted).toEqual(expected);
      }),
    );
  });

  it('missing ∪ stale ∪ unchanged = listed, disjoint; restored ⊆ stale; checked counts the listed ids', () => {
    fc.assert(
      fc.property(listed, stored, fc.boolean(), (l, s, complete) => {
        const diff = diffListing(l, s, complete);
        const byId = new Map(s.map((r) => [r.id, r]));
        const listedIds = new Set(l.map((i) => i.id));
        const unchanged = [...listedIds].filter((i) => !diff.missing.includes(i) && !diff.stale.includes(i));
        const union = [...diff.missing, ...diff.stale, ...unchanged];
        expect(union.length).toBe(listedIds.size); // disjoint, no id twice
        expect(new Set(union)).toEqual(listedIds);
        expect(diff.checked).toBe(listedIds.size);
        for (const m of diff.missing) expect(byId.has(m)).toBe(false);
        for (const r of diff.restored) {
          expect(diff.stale).toContain(r);
          expect(byId.get(r)!.deletedAt).not.toBeNull();
        }
        for (const u of unchanged) {
          const row = byId.get(u)!;
          expect(row.deletedAt).toBeNull(); // a deleted row is never left as it is
          const latest = Math.max(...l.filter((i) => i.id === u).map((i) => i.updatedAt?.getTime() ?? -1));
          if (latest >= 0) expect(row.updatedAt).not.toBeNull();
          if (latest >= 0) expect(row.updatedAt!.getTime()).toBeGreaterThanOrEqual(latest);
        }
      }),
    );
  });
});
