/**
 * One function per dataset: the list a unit reads, the window it keeps, and the rows it writes
 * (pages.ts reads and writes page by page). Pull requests and their reviews: pulls.ts.
 */
import type { UnitResult } from '../types.js';
import {
  commentRow,
  commitRow,
  eventRow,
  isPullRequestComment,
  memberRow,
  repositoryRow,
  workItemRow,
  type GhComment,
  type GhCommit,
  type GhIssue,
  type GhIssueEvent,
  type GhRepo,
  type GhUser,
} from './mapping.js';
import {
  ascendingWindow,
  descendingWindow,
  details,
  issuePages,
  iso,
  listPages,
  writePages,
  type Job,
} from './pages.js';

export type { Job } from './pages.js';
export { pullRequestReviews, pullRequests } from './pulls.js';

export async function repositories(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  const res = await job.gh.request('GET /repos/{owner}/{repo}', { owner, repo });
  return writePages(job, 'repositories', [[res.data as GhRepo]], (page) =>
    page.map((r) => repositoryRow(job.scope, r)),
  );
}

/** Members: the users issues can be assigned to in the repository. */
export function members(job: Job): Promise<UnitResult> {
  return writePages(job, 'members', listPages<GhUser>(job, 'GET /repos/{owner}/{repo}/assignees'), (page) =>
    page.map((u) => memberRow(job.scope, u, 'assignee')),
  );
}

/** Issues (the list's pull requests left out) updated in the window. */
export function workItems(job: Job): Promise<UnitResult> {
  const w = ascendingWindow(job, issuePages<GhIssue>(job), (i) => i.updated_at);
  const rows = (page: GhIssue[]) => page.filter((i) => !i.pull_request).map((i) => workItemRow(job.scope, i));
  return writePages(job, 'work_items', w.pages, rows, w.watermark);
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
  return writePages(job, 'work_item_comments', w.pages, rows, w.watermark);
}

/**
 * Issue events (state, label and assignee changes), newest first without a `since`: read until a
 * page reaches back past the window's start.
 */
export function workItemHistory(job: Job): Promise<UnitResult> {
  const list = listPages<GhIssueEvent>(job, 'GET /repos/{owner}/{repo}/issues/events');
  const pages = descendingWindow(job, list, (e) => e.created_at);
  const rows = (page: GhIssueEvent[]) => page.filter((e) => !e.issue?.pull_request).map((e) => eventRow(job.scope, e));
  return writePages(job, 'work_item_events', pages, rows);
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
  return writePages(job, 'commits', list, async (page) =>
    (await details(job, page, detail)).map((c) => commitRow(job.scope, c)),
  );
}
