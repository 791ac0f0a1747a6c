/**
 * Where a Jira work-item family unit's read stands, and the checkpoint it hands a rate-limit
 * deferral (the engine's rules: src/domain/checkpoint.ts).
 *
 * Jira's search is ordered by `updated` ascending, so a read that has written every issue up to
 * the latest `updated` it saw, L, resumes by time: its next attempt searches from L on and skips
 * the issues updated exactly at L it already wrote (`tied`). Not by `nextPageToken`: a token
 * names a position in the result, and issues updated during the wait (an hour, at worst) move to
 * its end — a position would then skip the issues that slid back into it. From L on, an issue
 * changed meanwhile is simply read again with its new data.
 *
 * The checkpoint also carries the rows written so far per surface (so the unit's result counts
 * the whole window) and the pages read (an incremental unit's `maxPages` bounds the unit, not one
 * attempt). No secret: a time, issue ids and counts. A read that saw issues out of order hands no
 * checkpoint (its next attempt starts over).
 */
import type { JsonValue, UnitCheckpoint } from '../../domain/checkpoint.js';

/** The checkpoint's format; one of another format (an older release's) is ignored. */
const VERSION = 1;
/** Issue ids kept for the latest `updated`; more than this many at one instant: no checkpoint. */
export const MAX_TIED = 100;

export type FamilyCounts = Record<'work_items' | 'work_item_comments' | 'work_item_events', number>;

export interface FamilyProgress {
  /** The latest `updated` of the issues written (ms), or null before the first was. */
  latest: number | null;
  /** The written issues whose `updated` is `latest`. */
  tied: Set<string>;
  /** Every written issue came in ascending `updated` order. */
  ascending: boolean;
  pages: number;
  counts: FamilyCounts;
}

export function freshProgress(): FamilyProgress {
  return {
    latest: null,
    tied: new Set(),
    ascending: true,
    pages: 0,
    counts: { work_items: 0, work_item_comments: 0, work_item_events: 0 },
  };
}

/** Records that the issue `id`, updated at `updatedMs`, is written (call in the order they came). */
export function wrote(p: FamilyProgress, id: string, updatedMs: number): void {
  if (p.latest !== null && updatedMs < p.latest) p.ascending = false;
  if (p.latest === null || updatedMs > p.latest) {
    p.latest = updatedMs;
    p.tied = new Set();
  }
  if (updatedMs === p.latest) p.tied.add(id);
}

/** Whether an issue of a resumed read was written before: updated earlier than L, or at L and tied. */
export function writtenBefore(p: FamilyProgress, id: string, updatedMs: number): boolean {
  if (p.latest === null) return false;
  return updatedMs < p.latest || (updatedMs === p.latest && p.tied.has(id));
}

/** The checkpoint of `p`, or null when nothing was written, the order broke, or too many ties. */
export function familyCheckpoint(p: FamilyProgress): UnitCheckpoint | null {
  if (p.latest === null || !p.ascending || p.tied.size > MAX_TIED) return null;
  return { v: VERSION, from: p.latest, tied: [...p.tied], pages: p.pages, counts: { ...p.counts } };
}

/** The progress a checkpoint records, or null when it is none, or not one of ours (then: start over). */
export function progressFrom(cp: UnitCheckpoint | null): FamilyProgress | null {
  if (!cp || cp.v !== VERSION || !isTime(cp.from) || !isCount(cp.pages)) return null;
  const tied = cp.tied;
  if (!Array.isArray(tied) || tied.length > MAX_TIED || !tied.every(isId)) return null;
  const counts = countsOf(cp.counts);
  if (!counts) return null;
  return { latest: cp.from, tied: new Set(tied), ascending: true, pages: cp.pages, counts };
}

function isId(v: JsonValue): v is string {
  return typeof v === 'string' && v !== '';
}

function isTime(v: JsonValue | undefined): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v);
}

function isCount(v: JsonValue | undefined): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function countsOf(v: JsonValue | undefined): FamilyCounts | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const { work_items: items, work_item_comments: comments, work_item_events: events } = v;
  if (!isCount(items) || !isCount(comments) || !isCount(events)) return null;
  return { work_items: items, work_item_comments: comments, work_item_events: events };
}
