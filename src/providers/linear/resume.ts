/**
 * Where a work-item family unit's read stands, and the checkpoint it hands a rate-limit deferral
 * (the engine's rules: src/domain/checkpoint.ts).
 *
 * A family read is a keyset read, latest update first: everything updated after `upTo` has been
 * written, and so have the issues at exactly `upTo` named in `atUpTo`; the next page asks for the
 * window's issues updated at or before `upTo` (inclusive) and skips those ids. No cursor has to
 * outlive a change to its item: an issue edited while the window is read moves past the window's
 * end (`before`, the next window's start) and is read there; an archived or deleted one simply
 * stops being listed. Only a run of issues sharing one `updatedAt` longer than a page is stepped
 * through with Linear's cursor (`after`).
 *
 * The checkpoint holds that position, the rows written so far per surface (so the unit's result
 * counts the whole window), the pages read (an incremental unit's `maxPages` bounds the unit, not
 * one attempt) and the order the issues came in (which decides an incremental unit's watermark).
 * No secret: a time, issue ids, a cursor, counts.
 */
import type { JsonValue, UnitCheckpoint } from '../../domain/checkpoint.js';

/** The checkpoint's format; one of another format (an older release's) is ignored. */
const VERSION = 2;

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

/** How far a family unit has read: everything updated after `upTo`, and `atUpTo` at it, is written. */
export interface FamilyProgress {
  /** The `updatedAt` (Linear's text) of the oldest issue written; null before the first page is written. */
  upTo: string | null;
  /** The ids written whose `updatedAt` is `upTo`. */
  atUpTo: string[];
  /** A cursor inside a run of issues sharing `upTo` longer than a page; null otherwise. */
  after: string | null;
  pages: number;
  counts: FamilyCounts;
  order: UpdateOrder;
}

export function freshProgress(): FamilyProgress {
  return {
    upTo: null,
    atUpTo: [],
    after: null,
    pages: 0,
    counts: { work_items: 0, work_item_comments: 0, work_item_events: 0 },
    order: new UpdateOrder(),
  };
}

/** The checkpoint of `p`, or null when nothing was written yet (the next attempt starts over anyway). */
export function familyCheckpoint(p: FamilyProgress): UnitCheckpoint | null {
  if (p.upTo === null) return null;
  const at = { upTo: p.upTo, atUpTo: [...p.atUpTo], after: p.after };
  return { v: VERSION, ...at, pages: p.pages, counts: { ...p.counts }, order: p.order.toJSON() };
}

/** The progress a checkpoint records, or null when it is none, or not one of ours (then: start over). */
export function progressFrom(cp: UnitCheckpoint | null): FamilyProgress | null {
  if (!cp || cp.v !== VERSION || !isTime(cp.upTo) || !isCount(cp.pages)) return null;
  const ids = cp.atUpTo;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) return null;
  if (cp.after !== null && typeof cp.after !== 'string') return null;
  const counts = countsOf(cp.counts);
  const order = orderOf(cp.order);
  if (!counts || !order) return null;
  const at = { upTo: cp.upTo, atUpTo: ids, after: cp.after };
  return { ...at, pages: cp.pages, counts, order: UpdateOrder.from(order) };
}

function isTime(v: JsonValue | undefined): v is string {
  return typeof v === 'string' && Number.isFinite(Date.parse(v));
}

/**
 * Moves `p` past a written page (issues latest update first): its oldest `updatedAt` becomes `upTo`,
 * with the ids written at it.
 */
export function passPage(p: FamilyProgress, written: readonly { id: string; updatedAt: string }[]): void {
  for (const i of written) {
    const t = Date.parse(i.updatedAt);
    const bound = p.upTo === null ? null : Date.parse(p.upTo);
    if (bound === null || t < bound) {
      p.upTo = i.updatedAt;
      p.atUpTo = [i.id];
    } else if (t === bound && !p.atUpTo.includes(i.id)) {
      p.atUpTo.push(i.id);
    }
  }
}

/** Whether an issue of a page was written already (at `upTo`, by this unit). */
export function writtenAlready(p: FamilyProgress, i: { id: string; updatedAt: string }): boolean {
  return p.upTo !== null && Date.parse(i.updatedAt) === Date.parse(p.upTo) && p.atUpTo.includes(i.id);
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
