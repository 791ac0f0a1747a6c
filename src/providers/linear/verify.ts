/**
 * Linear's verify of a team's issues (the steps: ../kit/verify.ts). The listing is `issues` with
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
 * second step finds it unseen and confirms it.
 *
 * Missing and stale issues are read with their family by `id: { in: … }` and written like a
 * family read's (units.ts `familyByIds`). An issue the listing did not show is confirmed by one
 * `issues(filter: { id: { in: … } }, includeArchived: true)` query per batch: Linear answers the ids
 * it still has, archived ones among them; the ids it does not answer (deleted or trashed) are marked
 * deleted. Every query goes through the unit's client, gated by the request and complexity budgets.
 */
import type { ListedItem } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import type { UnitResult } from '../../sdk/types.js';
import { resumableRead, type KeysetFormat } from '../kit/resume.js';
import { runVerify, sourceScope, VERIFY_COUNTS, type VerifyReader } from '../kit/verify.js';
import type { LnConnection } from './mapping.js';
import { issueFilter, VERIFY_CONFIRM_QUERY, VERIFY_LIST_QUERY } from './queries.js';
import { familyByIds, familyResult, type Job } from './units.js';

/** Issues a listing page holds: Linear's most for `first`. */
export const VERIFY_LIST_PAGE = 250;

/** The surfaces a verify's fetches write (the family's). */
const FAMILY_SURFACES = ['work_items', 'work_item_comments', 'work_item_events'] as const;

/** A verify's checkpoint: its listing's keyset (latest update first), then its pass through the store. */
const VERIFY_RESUME: KeysetFormat = { v: 1, order: 'desc', surfaces: [...VERIFY_COUNTS, ...FAMILY_SURFACES] };

/** An issue as a verify lists it. */
interface ListedIssue {
  id: string;
  updatedAt: string;
  archivedAt?: string | null;
}

/** The verify unit of the work-item family: its result counts the family's rows and the verify's. */
export function verifyFamily(job: Job): Promise<UnitResult> {
  return resumableRead(job.ctx, VERIFY_RESUME, async (p, resumed) => {
    await runVerify(job.ctx, verifyReader(job, p.counts), { f: VERIFY_RESUME, p, resumed });
    const verify = Object.fromEntries(VERIFY_COUNTS.map((k) => [k, p.counts[k] ?? 0]));
    const family = Object.fromEntries(FAMILY_SURFACES.map((s) => [s, p.counts[s] ?? 0]));
    return { ...familyResult(family), verify };
  });
}

function verifyReader(job: Job, counts: Record<string, number>): VerifyReader {
  const { ctx } = job;
  // A verify unit is one source's: its team.
  if (job.teams.length !== 1) {
    throw new NonRetryableError(`verify unit ${ctx.unit.id} reads ${job.teams.length} teams, not one`, 'adapter_error');
  }
  return {
    scope: sourceScope(ctx, job.scope.provider, 'work_items', job.teams[0]!),
    list: (from) => listing(job, from),
    confirm: (ids) => confirm(job, ids),
    fetch: (ids) => familyByIds(job, ids, counts),
  };
}

/**
 * The team's issues, latest update first, from `from` (inclusive; null: the latest), page by page:
 * each next page by the keyset of the one before (see the module comment).
 */
async function* listing(job: Job, from: Date | null): AsyncGenerator<ListedItem[]> {
  const q = VERIFY_LIST_QUERY;
  const trail = job.pages.trail(`query ${q.name}`);
  let upTo = from?.toISOString() ?? null; // Linear's text of the earliest update listed
  let atUpTo = new Set<string>(); // the ids listed at `upTo`
  let after: string | null = null;
  for (;;) {
    trail.visit(`${upTo ?? ''} ${atUpTo.size} ${after ?? ''}`);
    const data: { issues: LnConnection<ListedIssue> } = await job.client.query(q.name, q.text, {
      filter: issueFilter(job.teams, null, null, upTo),
      first: VERIFY_LIST_PAGE,
      after,
    });
    const page = data.issues.nodes;
    const bound = upTo === null ? null : Date.parse(upTo);
    yield page.filter((i) => !(Date.parse(i.updatedAt) === bound && atUpTo.has(i.id))).map(listed);
    const { hasNextPage, endCursor } = data.issues.pageInfo;
    if (!hasNextPage || page.length === 0) return;
    const last = page.at(-1)!;
    const earliest = Date.parse(last.updatedAt);
    if (earliest === bound) {
      // Every issue of the page is at `upTo` (none is later): step through the run with the cursor.
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

/** Of `ids`, the issues Linear has now (archived ones included): one query per `VERIFY_LIST_PAGE` ids. */
async function confirm(job: Job, ids: readonly string[]): Promise<ListedItem[]> {
  const q = VERIFY_CONFIRM_QUERY;
  const found: ListedItem[] = [];
  for (let n = 0; n < ids.length; n += VERIFY_LIST_PAGE) {
    const part = ids.slice(n, n + VERIFY_LIST_PAGE);
    const data: { issues: LnConnection<ListedIssue> } = await job.client.query(q.name, q.text, {
      ids: part,
      first: part.length,
    });
    found.push(...data.issues.nodes.map(listed));
  }
  return found;
}

function listed(i: ListedIssue): ListedItem {
  const ms = Date.parse(i.updatedAt);
  return { id: i.id, updatedAt: Number.isFinite(ms) ? new Date(ms) : null };
}
