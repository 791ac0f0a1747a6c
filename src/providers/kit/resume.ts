/**
 * Where a keyset read stands, and the checkpoint it hands a rate-limit deferral (the engine's
 * rules: src/domain/checkpoint.ts), for the lists read in the order of one time per item: Jira's
 * search and GitHub's issues and comments by `updated` ascending, GitHub's commits newest first.
 *
 * A read that has written every item up to the edge E it reached (the latest time so far reading
 * ascending, the earliest reading descending) resumes by time: its next attempt asks again from E,
 * inclusive, and skips the items at exactly E it already wrote (`tied`). Never by a page number or
 * a token: those name a position, and items changed during the wait (an hour, at worst) move to
 * the list's end, so a position would then skip the items that slid back into it. From E on, an
 * item changed meanwhile is simply read again with its new data.
 *
 * The checkpoint also carries the rows written so far per surface (so the unit's result counts the
 * whole window) and the pages read (an incremental unit's `maxPages` bounds the unit, not one
 * attempt). No secret: a time, item ids and counts. A read that saw items out of order, or more than
 * `maxTied` at its edge, hands no checkpoint (its next attempt starts over).
 */
import type { JsonValue, UnitCheckpoint } from '../../domain/checkpoint.js';
import { RateLimitError } from '../../errors.js';
import type { UnitContext, UnitResult } from '../../sdk/types.js';

/** A provider's checkpoint format for one kind of read. */
export interface KeysetFormat {
  /** The format's version; a checkpoint of another (an older release's) is ignored. */
  v: number;
  /** The order the list comes in: `asc` oldest first, `desc` newest first. */
  order: 'asc' | 'desc';
  /** The surfaces the read writes: each one's count is carried. */
  surfaces: readonly string[];
  /** Item ids kept at the edge; more than this many at one instant: no checkpoint. @default 100 */
  maxTied?: number;
}

export interface KeysetProgress {
  /** The edge time of the items written (ms), or null before the first was. */
  edge: number | null;
  /** The written items whose time is `edge`. */
  tied: Set<string>;
  /** Every written item came in the list's order. */
  inOrder: boolean;
  pages: number;
  /** Rows written per surface. */
  counts: Record<string, number>;
  /**
   * A read in two phases (a verify: its listing, then a pass through the store by id): where the
   * second stands, once the first is done ('' at its start); undefined while the first runs.
   */
  after?: string;
  /**
   * A read of several such reads one after another (a verify's passes: issues, then their
   * comments): the index of the one running; the keyset and `after` are its own. @default 0
   */
  pass?: number;
}

export function freshProgress(f: KeysetFormat): KeysetProgress {
  const counts = Object.fromEntries(f.surfaces.map((s) => [s, 0]));
  return { edge: null, tied: new Set(), inOrder: true, pages: 0, counts };
}

/** Whether time `a` comes after `b` in the list's order. */
function beyond(f: KeysetFormat, a: number, b: number): boolean {
  return f.order === 'asc' ? a > b : a < b;
}

/** Records that item `id`, of time `ms`, is written (call in the order they came). */
export function wrote(f: KeysetFormat, p: KeysetProgress, id: string, ms: number): void {
  if (p.edge !== null && beyond(f, p.edge, ms)) p.inOrder = false;
  if (p.edge === null || beyond(f, ms, p.edge)) {
    p.edge = ms;
    p.tied = new Set();
  }
  if (ms === p.edge) p.tied.add(id);
}

/** Whether an item of a resumed read was written before: short of the edge, or at it and tied. */
export function writtenBefore(f: KeysetFormat, p: KeysetProgress, id: string, ms: number): boolean {
  if (p.edge === null) return false;
  return beyond(f, p.edge, ms) || (ms === p.edge && p.tied.has(id));
}

/** The checkpoint of `p`, or null when nothing was written, the order broke, or too many ties. */
export function checkpointOf(f: KeysetFormat, p: KeysetProgress): UnitCheckpoint | null {
  if (!p.inOrder || p.tied.size > (f.maxTied ?? 100)) return null;
  // Nothing written: nothing to resume from, unless a later pass or the second phase is reached.
  if (p.edge === null && p.after === undefined && !p.pass) return null;
  const cp: UnitCheckpoint = { v: f.v, from: p.edge, tied: [...p.tied], pages: p.pages, counts: { ...p.counts } };
  const withPass = p.pass ? { ...cp, pass: p.pass } : cp;
  return p.after === undefined ? withPass : { ...withPass, after: p.after };
}

/** The progress a checkpoint records, or null when it is none, or not one of `f` (then: start over). */
export function progressFrom(f: KeysetFormat, cp: UnitCheckpoint | null): KeysetProgress | null {
  if (!cp || cp.v !== f.v || !isCount(cp.pages)) return null;
  const later = typeof cp.after === 'string' || (isCount(cp.pass) && cp.pass > 0);
  if (!(isTime(cp.from) || (cp.from === null && later))) return null;
  const tied = cp.tied;
  if (!Array.isArray(tied) || tied.length > (f.maxTied ?? 100) || !tied.every(isId)) return null;
  const counts = countsOf(f, cp.counts);
  if (!counts) return null;
  if (cp.after !== undefined && typeof cp.after !== 'string') return null;
  if (cp.pass !== undefined && !isCount(cp.pass)) return null;
  const after = typeof cp.after === 'string' ? { after: cp.after } : {};
  const pass = isCount(cp.pass) && cp.pass > 0 ? { pass: cp.pass } : {};
  const edge = isTime(cp.from) ? cp.from : null;
  return { edge, tied: new Set(tied), inOrder: true, pages: cp.pages, counts, ...after, ...pass };
}

/**
 * Runs `read` from the unit's checkpoint when it is one of `f` (a fresh start otherwise, with a
 * warning when there was one); a rate limit that ends it carries the checkpoint of where it stood.
 * `read` moves the progress it is given past each page once all that page's rows are written.
 */
export async function resumableRead(
  ctx: Pick<UnitContext, 'checkpoint' | 'logger' | 'unit'>,
  f: KeysetFormat,
  read: (p: KeysetProgress, resumed: boolean) => Promise<UnitResult>,
): Promise<UnitResult> {
  const resumed = progressFrom(f, ctx.checkpoint);
  if (ctx.checkpoint && !resumed) ctx.logger.warn({ unitId: ctx.unit.id }, 'unit checkpoint ignored');
  const progress = resumed ?? freshProgress(f);
  try {
    return await read(progress, resumed !== null);
  } catch (err) {
    if (err instanceof RateLimitError) throw err.withCheckpoint(checkpointOf(f, progress));
    throw err;
  }
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

/** Every surface of `f` counted, and nothing else. */
function countsOf(f: KeysetFormat, v: JsonValue | undefined): Record<string, number> | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== f.surfaces.length || !f.surfaces.every((s) => isCount(v[s]))) return null;
  return Object.fromEntries(f.surfaces.map((s) => [s, v[s] as number]));
}
