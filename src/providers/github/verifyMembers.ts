/**
 * GitHub's verify of members (`members`; the steps: ../kit/verify.ts), compared with the store's
 * `members`, which belong to the whole integration (scope source null), while each repository's
 * job lists that repository's own.
 *
 * The listing is the repository's assignees (`GET /repos/{owner}/{repo}/assignees`, 100 a page),
 * the list the members unit reads (units.ts `members`), by page number: it takes no `since` and no
 * sort, and a member the listing skips as the list moves under it is confirmed in the second step
 * like any unseen one. A member has no update time (`updatedAt` null): a listed member already
 * stored is stamped and never fetched again (an unknown listed time is never newer: `diffListing`,
 * src/domain/verify.ts), and a missing one is written from the page just listed, mapped as the
 * members unit maps it.
 *
 * A member is deleted only when their GitHub account is. One who merely stopped being assignable
 * (no longer a collaborator of a repository, or out of the organisation) stays live. So the unseen
 * members (integration-wide: gone from this repository's assignees, or assignable only in a
 * repository not listed yet) are each read by account id with "Get a user using their ID", `GET
 * /user/{account_id}` (the REST description's `users/get-by-id`: it "takes their durable user ID
 * instead of their login, which can change over time"; a member's external id is that id,
 * mapping.ts `memberRow`), CONFIRM_SINGLES at a time: 200 is the account, present (stamped, under
 * a new login too); 404 is an account that is gone (deleted: its login is freed, its work shown as
 * the "ghost" user's) and marks the member deleted. Any other answer (a 5xx, a rate limit) ends the
 * unit with the batch unmarked. A stored id that is no account id (not a number) is never marked.
 *
 * The unit is planned once for the whole integration, one job per repository, all with the unit's
 * `before` (the run's planning time) as the verify's start: a member listed by an earlier
 * repository's job is not confirmed again by a later one's. A members verify keeps no checkpoint
 * (no update time to resume a listing by; a few pages): an attempt deferred by a rate limit lists
 * again from the start, the stamps and marks made kept.
 */
import type { ListedItem } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import type { VerifyScope } from '../../sdk/normalized.js';
import type { UnitResult } from '../../sdk/types.js';
import { freshProgress, type KeysetFormat } from '../kit/resume.js';
import { CONFIRM_SINGLES, runVerify, VERIFY_COUNTS, type VerifyReader } from '../kit/verify.js';
import { PageWriter } from '../kit/write.js';
import { memberRow, type GhUser } from './mapping.js';
import { details, listPages, type Job } from './pages.js';

const SURFACE = 'members';

/** The verify's progress format: its counts and the members written (it hands no checkpoint). */
const VERIFY_MEMBERS: KeysetFormat = { v: 1, order: 'asc', surfaces: [...VERIFY_COUNTS, SURFACE] };

/** The verify unit of the members (one job: one repository's assignees); its result counts both. */
export async function verifyMembers(job: Job): Promise<UnitResult> {
  const p = freshProgress(VERIFY_MEMBERS);
  await runVerify(job.ctx, memberReader(job, p.counts), { f: VERIFY_MEMBERS, p, resumed: false });
  const written = p.counts[SURFACE] ?? 0;
  return {
    items: written,
    touchedSurfaces: written > 0 ? [SURFACE] : [],
    verify: Object.fromEntries(VERIFY_COUNTS.map((k) => [k, p.counts[k] ?? 0])),
  };
}

/** The store's members of the integration (no source). */
function membersScope(job: Job): VerifyScope {
  const { orgId, integrationId } = job.ctx.unit;
  return { orgId, integrationId, provider: job.scope.provider, surface: SURFACE, source: null };
}

/**
 * The reader: the repository's assignees by account id, those of the last page listed (and of the
 * last batch confirmed) kept, so `fetch` writes them without asking again.
 */
export function memberReader(job: Job, counts: Record<string, number>): VerifyReader {
  const known = new Map<string, GhUser>();
  const writer = new PageWriter(job.ctx, counts);
  const keep = (users: readonly [string, GhUser][]): ListedItem[] => {
    known.clear();
    for (const [id, u] of users) known.set(id, u);
    return users.map(([id]) => ({ id, updatedAt: null }));
  };
  const read = (ids: readonly string[]) => details(job, ids, async (id) => [id, await readAccount(job, id)] as const);
  return {
    scope: membersScope(job),
    confirmBatch: CONFIRM_SINGLES,
    async *list() {
      for await (const page of listPages<GhUser>(job, 'GET /repos/{owner}/{repo}/assignees')) {
        yield keep(page.filter((u) => u.id !== undefined).map((u) => [String(u.id), u]));
      }
    },
    async confirm(ids) {
      return keep((await read(ids)).filter((a): a is [string, GhUser] => a[1] !== null));
    },
    async fetch(ids) {
      // Every id the kit fetches is of the page or batch just handed to it; anything else is read.
      const users = ids.map((id) => known.get(id)).filter((u): u is GhUser => u !== undefined);
      const others = await read(ids.filter((id) => !known.has(id)));
      users.push(...others.map(([, u]) => u).filter((u): u is GhUser => u !== null));
      const rows = users.filter((u) => u.id !== undefined).map((u) => memberRow(job.scope, u, 'assignee'));
      await writer.write(SURFACE, rows);
    },
  };
}

/**
 * The account `id` as GitHub has it now, or null when it is gone (404). An id that is no account
 * id (not a number) cannot be read: it is answered as present, with nothing to write (`{}`).
 */
async function readAccount(job: Job, id: string): Promise<GhUser | null> {
  if (!/^\d+$/.test(id)) return {};
  try {
    const res = await job.gh.request('GET /user/{account_id}', { account_id: Number(id) });
    return res.data as GhUser;
  } catch (err) {
    if (err instanceof NonRetryableError && err.category === 'not_found') return null;
    throw err;
  }
}
