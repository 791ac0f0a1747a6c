/**
 * Where a work-item family unit's read stands, and the checkpoint it hands a rate-limit deferral
 * (the engine's rules: src/domain/checkpoint.ts).
 *
 * The checkpoint names the `endCursor` of the last page of issues whose rows were all written
 * (the next attempt asks for the page after it: same filter, same window, same order), the rows
 * written so far per surface (so the unit's result counts the whole window), the pages read (an
 * incremental unit's `maxPages` bounds the unit, not one attempt) and the order the issues came
 * in (which decides an incremental unit's watermark). Linear's cursors name the last item's sort
 * key, so a page boundary stays put when issues before it change. No secret: a cursor, counts and
 * times.
 */
import type { JsonValue, UnitCheckpoint } from '../../domain/checkpoint.js';

/** The checkpoint's format; one of another format (an older release's) is ignored. */
const VERSION = 1;

export type FamilyCounts = Record<'work_items' | 'work_item_comments' | 'work_item_events', number>;

/** The order issues arrive in: oldest update first so far, and the latest update seen. */
export class UpdateOrder {
  ascending = true;
  latest: Date | null = null;
  private prev: number | null = null;

  see(updatedAt: string): void {
    const t = Date.parse(updatedAt);
    if (this.prev !== null && t < this.prev) this.ascending = false;
    this.prev = t;
    if (!this.latest || t > this.latest.getTime()) this.latest = new Date(t);
  }

  toJSON(): { ascending: boolean; latest: number | null; prev: number | null } {
    return { ascending: this.ascending, latest: this.latest?.getTime() ?? null, prev: this.prev };
  }

  static from(state: { ascending: boolean; latest: number | null; prev: number | null }): UpdateOrder {
    const order = new UpdateOrder();
    order.ascending = state.ascending;
    order.latest = state.latest === null ? null : new Date(state.latest);
    order.prev = state.prev;
    return order;
  }
}

/** How far a family unit has read: everything before `after` is written. */
export interface FamilyProgress {
  /** The cursor after the last written page; null before the first page is written. */
  after: string | null;
  pages: number;
  counts: FamilyCounts;
  order: UpdateOrder;
}

export function freshProgress(): FamilyProgress {
  return {
    after: null,
    pages: 0,
    counts: { work_items: 0, work_item_comments: 0, work_item_events: 0 },
    order: new UpdateOrder(),
  };
}

/** The checkpoint of `p`, or null when nothing was written yet (the next attempt starts over anyway). */
export function familyCheckpoint(p: FamilyProgress): UnitCheckpoint | null {
  if (p.after === null) return null;
  return { v: VERSION, after: p.after, pages: p.pages, counts: { ...p.counts }, order: p.order.toJSON() };
}

/** The progress a checkpoint records, or null when it is none, or not one of ours (then: start over). */
export function progressFrom(cp: UnitCheckpoint | null): FamilyProgress | null {
  if (!cp || cp.v !== VERSION || typeof cp.after !== 'string' || cp.after === '' || !isCount(cp.pages)) return null;
  const counts = countsOf(cp.counts);
  const order = orderOf(cp.order);
  if (!counts || !order) return null;
  return { after: cp.after, pages: cp.pages, counts, order: UpdateOrder.from(order) };
}

function isCount(v: JsonValue | undefined): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function isRecord(v: JsonValue | undefined): v is { [key: string]: JsonValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function countsOf(v: JsonValue | undefined): FamilyCounts | null {
  if (!isRecord(v)) return null;
  const { work_items: items, work_item_comments: comments, work_item_events: events } = v;
  if (!isCount(items) || !isCount(comments) || !isCount(events)) return null;
  return { work_items: items, work_item_comments: comments, work_item_events: events };
}

function orderOf(v: JsonValue | undefined): Parameters<typeof UpdateOrder.from>[0] | null {
  if (!isRecord(v) || typeof v.ascending !== 'boolean') return null;
  const time = (t: JsonValue | undefined) => t === null || (typeof t === 'number' && Number.isFinite(t));
  if (!time(v.latest) || !time(v.prev)) return null;
  return { ascending: v.ascending, latest: v.latest as number | null, prev: v.prev as number | null };
}
