/**
 * One function per dataset: the list a unit reads, the window it keeps, and the rows it writes
 * (pages.ts reads and writes page by page). Issues, pull requests and reviews: issueList.ts.
 */
import type { UnitResult } from '../../sdk/types.js';
import {
  commentRow,
  commitRow,
  eventRow,
  isPullRequestComment,
  memberRow,
  repositoryRow,
  type GhComment,
  type GhCommit,
  type GhIssueEvent,
  type GhRepo,
  type GhUser,
} from './mapping.js';
import { NonRetryableError } from '../../errors.js';
import { ProviderAnswerError } from '../kit/errors.js';
import { conditionalRead, PROBES } from './conditional.js';
import {
  ascendingWindow,
  details,
  inWindow,
  iso,
  keysetPages,
  listPages,
  inParts,
  settledPages,
  writePages,
  type Job,
  type Place,
} from './pages.js';
import { resumableRead, writtenBefore, type KeysetFormat } from '../kit/resume.js';

export type { Job } from './pages.js';
export { readIssueList } from './issueList.js';

export async function repositories(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  const res = await job.gh.request('GET /repos/{owner}/{repo}', { owner, repo });
  return writePages(job, [[res.data as GhRepo]], {
    surface: 'repositories',
    rows: (page) => page.map((r) => repositoryRow(job.scope, r)),
  });
}

/**
 * Members: the users issues can be assigned to in the repository (no `since`, no sort: listed
 * until two listings agree, pages.ts `settledPages`).
 */
export function members(job: Job): Promise<UnitResult> {
  const list = settledPages<GhUser>(job, 'GET /repos/{owner}/{repo}/assignees', (u) => u.id ?? u.login ?? '');
  const rows = (page: GhUser[]) => page.map((u) => memberRow(job.scope, u, 'assignee'));
  return writePages(job, list.pages, { surface: 'members', rows }, list.watermark);
}

/** How a comments unit resumes: from the latest `updated_at` it wrote (../kit/resume.ts). */
const COMMENTS_RESUME: KeysetFormat = { v: 1, order: 'asc', surfaces: ['work_item_comments'] };

/**
 * Comments on issues (not on pull requests) updated in the window, by keyset (pages.ts); an
 * incremental unit probes the list first and reads nothing when it is unchanged (conditional.ts).
 */
export function workItemComments(job: Job): Promise<UnitResult> {
  return conditionalRead(job, PROBES.comments, () =>
    resumableRead(job.ctx, COMMENTS_RESUME, (p, resumed) => {
      const place = { f: COMMENTS_RESUME, p, resumed };
      const params = { sort: 'updated', direction: 'asc' };
      const list = keysetPages<GhComment>(job, 'GET /repos/{owner}/{repo}/issues/comments', params, place);
      const w = ascendingWindow(job, list, place);
      const rows = (page: GhComment[]) =>
        page.filter((c) => !isPullRequestComment(c)).map((c) => commentRow(job.scope, c));
      return writePages(job, w.pages, { surface: 'work_item_comments', rows }, w.watermark, p.counts);
    }),
  );
}

/**
 * Issue events (state, label and assignee changes). GitHub documents no order for this list and
 * it takes no `since`: every page is read (none may be assumed older than the next), the window
 * kept by each event's `created_at`, and the list is listed until two listings agree (pages.ts).
 */
export function workItemHistory(job: Job): Promise<UnitResult> {
  const list = settledPages<GhIssueEvent>(job, 'GET /repos/{owner}/{repo}/issues/events', (e) => e.id);
  const rows = (page: GhIssueEvent[]) =>
    page
      .filter((e) => !e.issue?.pull_request && inWindow(job, new Date(e.created_at)))
      .map((e) => eventRow(job.scope, e));
  return writePages(job, list.pages, { surface: 'work_item_events', rows }, list.watermark);
}

/**
 * Commits committed in `[since, before)`, each with its stats from the commit's detail. A commit
 * pushed while the list is read comes first (newest first): later ones shift back, read twice at
 * most. An empty repository answers 409 "Git Repository is empty.": zero commits. A unit deferred
 * for a rate limit hands its deferral the earliest commit date it wrote (../kit/resume.ts); its next
 * attempt lists from there back (`until` a second past it: the commits at it it wrote are skipped).
 * An incremental unit probes the list first and reads nothing when it is unchanged (conditional.ts).
 */
export async function commits(job: Job): Promise<UnitResult> {
  try {
    return await conditionalRead(job, PROBES.commits, () =>
      resumableRead(job.ctx, COMMITS_RESUME, (p, resumed) => commitPages(job, { f: COMMITS_RESUME, p, resumed })),
    );
  } catch (err) {
    if (isEmptyRepository(err)) return { items: 0, touchedSurfaces: [] };
    throw err;
  }
}

/** Newest first; shas are 40 characters, so fewer fit the checkpoint's bound than numeric ids. */
const COMMITS_RESUME: KeysetFormat = { v: 1, order: 'desc', surfaces: ['commits'], maxTied: 50 };

/** The 409 GitHub answers an empty repository's commit list with (its only 409 there). */
function isEmptyRepository(err: unknown): boolean {
  const cause = err instanceof NonRetryableError ? err.cause : null;
  return cause instanceof ProviderAnswerError && cause.status === 409;
}

/** When a commit was committed (its committer's date; its author's without one), in ms. */
function committedMs(c: GhCommit): number {
  return Date.parse(c.commit.committer?.date ?? c.commit.author?.date ?? '');
}

function commitPages(job: Job, place: Place): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  const boundary = place.resumed ? { ...place.p, tied: new Set(place.p.tied) } : null;
  const until = boundary ? new Date(Math.min(boundary.edge! + 1000, job.before?.getTime() ?? Infinity)) : job.before;
  const list = listPages<GhCommit>(job, 'GET /repos/{owner}/{repo}/commits', {
    since: iso(job.since),
    until: iso(until),
  });
  const detail = async (c: GhCommit) => {
    const res = await job.gh.request('GET /repos/{owner}/{repo}/commits/{ref}', { owner, repo, ref: c.sha });
    return res.data as unknown as GhCommit;
  };
  const fresh = (c: GhCommit) => !(boundary && writtenBefore(place.f, boundary, c.sha, committedMs(c)));
  // Each commit costs a detail call: a part holds as many as are asked for at once.
  const parts = { costly: () => true, most: job.detailConcurrency };
  async function* pages(): AsyncGenerator<GhCommit[]> {
    for await (const page of list) yield* inParts(place, page.filter(fresh), parts, (c) => [c.sha, committedMs(c)]);
  }
  const rows = async (page: GhCommit[]) => (await details(job, page, detail)).map((c) => commitRow(job.scope, c));
  return writePages(job, pages(), { surface: 'commits', rows }, undefined, place.p.counts);
}
