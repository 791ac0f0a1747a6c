/**
 * Linear's verify of a team's work-item family (the steps: ../kit/verify.ts), in two passes: the
 * team's issues, then, when the unit carries `work-item-comments`, the comments on them
 * (./verifyComments.ts). The issues' listing is `issues` with
 * only `id updatedAt archivedAt` (about 1.3 complexity points an issue), archived issues included
 * (an archive is not a delete), 250 a page (Linear's most), `orderBy: updatedAt`: latest update
 * first, so the checkpoint's keyset is descending and a resumed listing asks again from the
 * earliest update it compared (`updatedAt: { lte }`).
 *
 * Pages follow one another by that same keyset, not by Linear's cursor: the next page asks for the
 * issues updated at or before the page's earliest `updatedAt` and skips the ids listed at it (as the
 * family read does, ./resume.ts). A cursor names an issue's place, and an issue edited, or deleted,
 * while the listing is read moves it or leaves none; a time does neither. Only a run of issues
 * sharing one `updatedAt` longer than a page is stepped through with the cursor (`after`). An
 * issue edited during the listing moves before what was listed and is not listed again: the
 * second step finds it unseen and confirms it. Both passes page their listings so (`keysetListing`).
 *
 * Missing and stale issues are read with their family by `id: { in: … }` and written like a
 * family read's (units.ts `familyByIds`). An issue the listing did not show is confirmed by one
 * `issues(filter: { id: { in: … } }, includeArchived: true)` query per batch: Linear answers the ids
 * it still has, archived ones among them; the ids it does not answer (deleted or trashed) are marked
 * deleted. Every query goes through the unit's client, gated by the request and complexity budgets.
 * A rate limit hands its deferral the pass it stands in: a resumed unit does not list again a pass
 * it has finished.
 */
import type { ListedItem } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import type { UnitResult } from '../../sdk/types.js';
import { resumableRead, type KeysetFormat } from '../kit/resume.js';
import { runVerify, sourceScope, VERIFY_COUNTS, type VerifyReader } from '../kit/verify.js';
import type { LnConnection } from './mapping.js';
import { issueFilter, VERIFY_CONFIRM_QUERY, VERIFY_LIST_QUERY } from './queries.js';
import { familyByIds, familyPlan, familyResult, type Job } from './units.js';
import { commentPass } from './verifyComments.js';
import type { LinearPass } from './verifyPass.js';

/** Objects a listing page holds, and ids a confirmation asks for at once: Linear's most for `first`. */
export const VERIFY_LIST_PAGE = 250;

/** The surfaces a verify's fetches write (the family's). */
const FAMILY_SURFACES = ['work_items', 'work_item_comments', 'work_item_events'] as const;

/**
 * A verify's checkpoint: the pass it stands in, its listing's keyset (latest update first), then its
 * pass through the store.
 */
const VERIFY_RESUME: KeysetFormat = { v: 1, order: 'desc', surfaces: [...VERIFY_COUNTS, ...FAMILY_SURFACES] };

/** An object as a verify lists it: its id and update time (Linear's text). */
interface Listed {
  id: string;
  updatedAt: string;
}

/**
 * The verify unit of the work-item family: the issues' pass, then the comments' when the unit
 * carries them. Its result counts the family's rows and the verify's (both passes together).
 */
export function verifyFamily(job: Job): Promise<UnitResult> {
  return resumableRead(job.ctx, VERIFY_RESUME, async (p, resumed) => {
    const passes = [issuePass(job, p.counts)];
    if (familyPlan(job.datasets).comments) passes.push(commentPass(job, p.counts));
    const readers = passes.map((pass) => passReader(job, pass));
    await runVerify(job.ctx, readers, { f: VERIFY_RESUME, p, resumed });
    const verify = Object.fromEntries(VERIFY_COUNTS.map((k) => [k, p.counts[k] ?? 0]));
    const family = Object.fromEntries(FAMILY_SURFACES.map((s) => [s, p.counts[s] ?? 0]));
    return { ...familyResult(family), verify };
  });
}

/** The issues' pass: `issues` of the team; the missing and stale read with their family by id. */
function issuePass(job: Job, counts: Record<string, number>): LinearPass {
  return {
    surface: 'work_items',
    list: { query: VERIFY_LIST_QUERY, field: 'issues', filter: (upTo) => issueFilter(job.teams, null, null, upTo) },
    confirm: { query: VERIFY_CONFIRM_QUERY, field: 'issues' },
    fetch: (ids) => familyByIds(job, ids, counts),
  };
}

/** The kit's reader of one pass over the unit's team. */
function passReader(job: Job, pass: LinearPass): VerifyReader {
  const { ctx } = job;
  // A verify unit is one source's: its team.
  if (job.teams.length !== 1) {
    throw new NonRetryableError(`verify unit ${ctx.unit.id} reads ${job.teams.length} teams, not one`, 'adapter_error');
  }
  return {
    scope: sourceScope(ctx, job.scope.provider, pass.surface, job.teams[0]!),
    list: (from) => keysetListing(job, pass.list, from),
    confirm: (ids) => confirmIds(job, pass.confirm, ids),
    fetch: (ids) => pass.fetch(ids),
  };
}

/**
 * A listing, latest update first, from `from` (inclusive; null: the latest), page by page: each
 * next page by the keyset of the one before (see the module comment).
 */
async function* keysetListing(job: Job, list: LinearPass['list'], from: Date | null): AsyncGenerator<ListedItem[]> {
  const q = list.query;
  const trail = job.pages.trail(`query ${q.name}`);
  let upTo = from?.toISOString() ?? null; // Linear's text of the earliest update listed
  let atUpTo = new Set<string>(); // the ids listed at `upTo`
  let after: string | null = null;
  for (;;) {
    trail.visit(`${upTo ?? ''} ${atUpTo.size} ${after ?? ''}`);
    const data: Record<string, LnConnection<Listed>> = await job.client.query(q.name, q.text, {
      filter: list.filter(upTo),
      first: VERIFY_LIST_PAGE,
      after,
    });
    const conn = data[list.field]!;
    const page = conn.nodes;
    const bound = upTo === null ? null : Date.parse(upTo);
    yield page.filter((i) => !(Date.parse(i.updatedAt) === bound && atUpTo.has(i.id))).map(listed);
    const { hasNextPage, endCursor } = conn.pageInfo;
    if (!hasNextPage || page.length === 0) return;
    const last = page.at(-1)!;
    const earliest = Date.parse(last.updatedAt);
    if (earliest === bound) {
      // Every object of the page is at `upTo` (none is later): step through the run with the cursor.
      if (!endCursor) return;
      for (const i of page) atUpTo.add(i.id);
      after = endCursor;
    } else {
      upTo = last.updatedAt;
      atUpTo = new Set(page.filter((i) => Date.parse(i.updatedAt) === earliest).map((i) => i.id));
      after = null;
    }
  }
}

/** Of `ids`, those Linear has now (archived ones included): one query per `VERIFY_LIST_PAGE` ids. */
async function confirmIds(job: Job, c: LinearPass['confirm'], ids: readonly string[]): Promise<ListedItem[]> {
  const q = c.query;
  const found: ListedItem[] = [];
  for (let n = 0; n < ids.length; n += VERIFY_LIST_PAGE) {
    const part = ids.slice(n, n + VERIFY_LIST_PAGE);
    const data: Record<string, LnConnection<Listed>> = await job.client.query(q.name, q.text, {
      ids: part,
      first: part.length,
    });
    found.push(...data[c.field]!.nodes.map(listed));
  }
  return found;
}

function listed(i: Listed): ListedItem {
  const ms = Date.parse(i.updatedAt);
  return { id: i.id, updatedAt: Number.isFinite(ms) ? new Date(ms) : null };
}
