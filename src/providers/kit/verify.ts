/**
 * A verify unit's steps on the kit (docs/normalized-store.md, "Deletions"): the provider lists one
 * source's ids and update times with its cheapest listing, and this compares them with the store.
 *
 * 1. Listing, page by page in ascending update time: each page is compared with the stored rows of
 *    its ids (`diffListing`); the stored ones are stamped `verified_at` (listed), and the missing
 *    and stale are fetched with their family and written by the provider (`fetch`).
 * 2. Once the listing has run to its end: the source's live rows neither listed nor written since
 *    the verify began (`tombstones.unseen`: since the run's planning time, the unit's `before`) are what the
 *    provider no longer lists. None is marked on that alone — a listing paged by position skips
 *    objects that move while it is read — each batch is confirmed by a direct, current read
 *    (`confirm`): those the provider still has are compared like a listing page; the rest are
 *    marked deleted, in a transaction fenced by the unit's lease, and only if still unseen then (an
 *    object written back meanwhile is not marked).
 *
 * A unit that fails, is rate limited or loses its lease marks nothing it has not confirmed. A rate
 * limit hands its deferral where it stands (../kit/resume.ts: the listing's keyset, then the id the
 * second step reached in `after`); the stamps already made stay, so a resumed verify lists on from
 * there. A unit of several passes (`runVerify` given several readers) runs them in turn, and its
 * checkpoint names the pass it stands in. Counts: checked (objects listed or confirmed present,
 * each once an attempt), missing (fetched), stale (fetched again), restored (stale ones that were
 * marked deleted), deleted (marked now).
 */
import { diffListing, type ListedItem } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import type { VerifyScope } from '../../sdk/normalized.js';
import type { SinkTombstones, UnitContext } from '../../sdk/types.js';
import { wrote, writtenBefore, type KeysetFormat, type KeysetProgress } from './resume.js';

export { VERIFY_COUNTS } from '../../domain/verify.js';

/** Ids confirmed (and marked) at a time in the second step. */
export const CONFIRM_BATCH = 100;

/**
 * Ids confirmed a step by a reader that reads one id per request (GitHub's issues, comments and
 * accounts; Jira's sprints and users): a step must fit in a unit's share of a small window
 * (`VerifyReader.confirmBatch`).
 */
export const CONFIRM_SINGLES = 8;

/** What a provider gives a verify of one source. */
export interface VerifyReader {
  /** The store rows the listing is compared with: a source of one surface. */
  scope: VerifyScope;
  /** The listing in ascending update time, from `from` (inclusive; null: from the beginning). */
  list(from: Date | null): AsyncIterable<ListedItem[]>;
  /** Of `ids`, those the provider has now, with their update times (a direct, current read). */
  confirm(ids: readonly string[]): Promise<ListedItem[]>;
  /** Fetches these objects with their family and writes them through the unit's fenced sink. */
  fetch(ids: readonly string[]): Promise<void>;
  /**
   * Ids confirmed at a time in the second step (@default CONFIRM_BATCH). A reader that confirms an
   * id per request keeps it small: the second step's progress is kept batch by batch, so a batch
   * must fit in what a unit gets of a window's budget — else every attempt is deferred inside the
   * same batch and starts it again.
   */
  confirmBatch?: number;
}

/** The store rows a verify of the unit's source compares: `surface` of its container `source`. */
export function sourceScope(
  ctx: Pick<UnitContext, 'unit'>,
  provider: string,
  surface: string,
  source: string,
): VerifyScope {
  return { orgId: ctx.unit.orgId, integrationId: ctx.unit.integrationId, provider, surface, source };
}

/** Where a verify stands, and its checkpoint's format (counts: VERIFY_COUNTS and the provider's). */
export interface VerifyPlace {
  f: KeysetFormat;
  p: KeysetProgress;
  resumed: boolean;
}

type Fenced = Pick<UnitContext, 'sink' | 'lease' | 'clock' | 'unit'>;

/**
 * Runs both steps of each reader, one reader after another (a unit's passes: a source's issues,
 * then their comments), from where `place` stands: the pass it reached (`p.pass`), its listing's
 * keyset, its second step's `after`. The counts of every pass land together in `place.p.counts`.
 */
export async function runVerify(
  ctx: Fenced,
  readers: VerifyReader | readonly VerifyReader[],
  place: VerifyPlace,
): Promise<void> {
  const passes: readonly VerifyReader[] = isReader(readers) ? [readers] : readers;
  const { p } = place;
  for (let pass = p.pass ?? 0; pass < passes.length; pass++) {
    if (pass !== (p.pass ?? 0)) {
      // A new pass: its own keyset and second step, from the start.
      Object.assign(p, { pass, edge: null, tied: new Set<string>(), inOrder: true, after: undefined });
      place = { ...place, resumed: false };
    }
    await runPass(ctx, passes[pass]!, place);
  }
}

function isReader(r: VerifyReader | readonly VerifyReader[]): r is VerifyReader {
  return !Array.isArray(r);
}

/** Both steps of one reader from where `place` stands. */
async function runPass(ctx: Fenced, reader: VerifyReader, place: VerifyPlace): Promise<void> {
  const startedAt = ctx.unit.before;
  if (startedAt === null) {
    throw new NonRetryableError(`verify unit ${ctx.unit.id} has no start (before)`, 'adapter_error');
  }
  const store = ctx.sink.tombstones;
  if (!store)
    throw new NonRetryableError(`sink "${ctx.sink.name}" keeps no tombstones: it cannot verify`, 'adapter_error');
  const { f, p } = place;
  const seen = new Set<string>(); // an object listed twice (it moved during the listing) is checked once
  if (p.after === undefined) {
    const boundary = place.resumed && p.edge !== null ? { ...p, tied: new Set(p.tied) } : null;
    for await (const page of reader.list(boundary ? new Date(boundary.edge!) : null)) {
      const fresh = page.filter((i) => !(boundary && writtenBefore(f, boundary, i.id, timeOf(i))));
      await settle(ctx, store, reader, p, fresh, seen);
      for (const i of fresh) {
        if (i.updatedAt === null)
          p.inOrder = false; // no time: no keyset to resume from
        else wrote(f, p, i.id, i.updatedAt.getTime());
      }
      p.pages++;
    }
    p.after = '';
  }
  for (;;) {
    const ids = await store.unseen(reader.scope, startedAt, p.after || null, reader.confirmBatch ?? CONFIRM_BATCH);
    if (ids.length === 0) return;
    const present = await reader.confirm(ids);
    await settle(ctx, store, reader, p, present, seen);
    const kept = new Set(present.map((i) => i.id));
    const gone = ids.filter((id) => !kept.has(id));
    if (gone.length > 0)
      p.counts.deleted! += await store.markDeleted(ctx.lease, reader.scope, gone, ctx.clock.now(), startedAt);
    p.after = ids.at(-1)!;
  }
}

/** A page of listed objects compared with the store: stamped, and the missing and stale fetched. */
async function settle(
  ctx: Fenced,
  store: SinkTombstones,
  reader: VerifyReader,
  p: KeysetProgress,
  listed: readonly ListedItem[],
  seen: Set<string>,
): Promise<void> {
  if (listed.length === 0) return;
  const ids = [...new Set(listed.map((i) => i.id))];
  const fresh = ids.filter((id) => !seen.has(id));
  for (const id of fresh) seen.add(id);
  const stored = await store.compare(ctx.lease, reader.scope, ids, ctx.clock.now());
  const rows = stored.map((s) => ({ id: s.externalId, updatedAt: s.updatedAt, deletedAt: s.deletedAt }));
  const diff = diffListing(listed, rows, false);
  const fetch = [...diff.missing, ...diff.stale];
  if (fetch.length > 0) await reader.fetch(fetch);
  p.counts.checked! += fresh.length;
  p.counts.missing! += diff.missing.length;
  p.counts.stale! += diff.stale.length;
  p.counts.restored! += diff.restored.length;
}

/** An object's time for the listing's keyset (NaN without one: never written before). */
function timeOf(i: ListedItem): number {
  return i.updatedAt?.getTime() ?? Number.NaN;
}
