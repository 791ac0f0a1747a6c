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
import {
  ascendingWindow,
  details,
  inWindow,
  iso,
  keysetPages,
  listPages,
  settledPages,
  writePages,
  type Job,
} from './pages.js';

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

/** Comments on issues (not on pull requests) updated in the window, by keyset (pages.ts). */
export function workItemComments(job: Job): Promise<UnitResult> {
  const list = keysetPages<GhComment>(job, 'GET /repos/{owner}/{repo}/issues/comments', {
    sort: 'updated',
    direction: 'asc',
  });
  const w = ascendingWindow(job, list, (c) => c.updated_at);
  const rows = (page: GhComment[]) => page.filter((c) => !isPullRequestComment(c)).map((c) => commentRow(job.scope, c));
  return writePages(job, w.pages, { surface: 'work_item_comments', rows }, w.watermark);
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
 * most. An empty repository answers 409 "Git Repository is empty.": zero commits.
 */
export async function commits(job: Job): Promise<UnitResult> {
  try {
    return await commitPages(job);
  } catch (err) {
    if (isEmptyRepository(err)) return { items: 0, touchedSurfaces: [] };
    throw err;
  }
}

/** The 409 GitHub answers an empty repository's commit list with (its only 409 there). */
function isEmptyRepository(err: unknown): boolean {
  const cause = err instanceof NonRetryableError ? err.cause : null;
  return cause instanceof ProviderAnswerError && cause.status === 409;
}

function commitPages(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  const list = listPages<GhCommit>(job, 'GET /repos/{owner}/{repo}/commits', {
    since: iso(job.since),
    until: iso(job.before),
  });
  const detail = async (c: GhCommit) => {
    const res = await job.gh.request('GET /repos/{owner}/{repo}/commits/{ref}', { owner, repo, ref: c.sha });
    return res.data as unknown as GhCommit;
  };
  const rows = async (page: GhCommit[]) => (await details(job, page, detail)).map((c) => commitRow(job.scope, c));
  return writePages(job, list, { surface: 'commits', rows });
}
