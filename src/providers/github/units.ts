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
import { ascendingWindow, descendingWindow, details, iso, listPages, writePages, type Job } from './pages.js';

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

/** Members: the users issues can be assigned to in the repository. */
export function members(job: Job): Promise<UnitResult> {
  return writePages(job, listPages<GhUser>(job, 'GET /repos/{owner}/{repo}/assignees'), {
    surface: 'members',
    rows: (page) => page.map((u) => memberRow(job.scope, u, 'assignee')),
  });
}

/** Comments on issues (not on pull requests) updated in the window. */
export function workItemComments(job: Job): Promise<UnitResult> {
  const list = listPages<GhComment>(job, 'GET /repos/{owner}/{repo}/issues/comments', {
    sort: 'updated',
    direction: 'asc',
    since: iso(job.since),
  });
  const w = ascendingWindow(job, list, (c) => c.updated_at);
  const rows = (page: GhComment[]) => page.filter((c) => !isPullRequestComment(c)).map((c) => commentRow(job.scope, c));
  return writePages(job, w.pages, { surface: 'work_item_comments', rows }, w.watermark);
}

/**
 * Issue events (state, label and assignee changes), newest first without a `since`: read until a
 * page reaches back past the window's start.
 */
export function workItemHistory(job: Job): Promise<UnitResult> {
  const list = listPages<GhIssueEvent>(job, 'GET /repos/{owner}/{repo}/issues/events');
  const pages = descendingWindow(job, list, (e) => e.created_at);
  const rows = (page: GhIssueEvent[]) => page.filter((e) => !e.issue?.pull_request).map((e) => eventRow(job.scope, e));
  return writePages(job, pages, { surface: 'work_item_events', rows });
}

/** Commits committed in `[since, before)`, each with its stats from the commit's detail. */
export function commits(job: Job): Promise<UnitResult> {
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
