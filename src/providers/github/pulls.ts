/**
 * Pull requests and their reviews, read window by window through the repository's issues list.
 *
 * `GET /pulls` has no `since`: a window read there pages through every newer pull request. GitHub's
 * issues list has one and lists pull requests too (each carrying a `pull_request` key), so a unit
 * reads `/issues?state=all&sort=updated&direction=asc&since=<window start>` up to the window's end,
 * keeps the pull requests, and asks each one's detail (`/pulls/{n}`: additions, deletions, changed
 * files, merge, draft, base and head) or its reviews (`/pulls/{n}/reviews`).
 */
import type { UnitResult } from '../types.js';
import { pullRequestRow, reviewRow, type GhIssue, type GhPull, type GhReview } from './mapping.js';
import { ascendingWindow, details, issuePages, PER_PAGE, writePages, type Job, type Row } from './pages.js';

/** The pull requests of the issues list updated in the unit's window, a page at a time. */
function pullWindow(job: Job) {
  const w = ascendingWindow(job, issuePages<GhIssue>(job), (i) => i.updated_at);
  return { ...w, numbers: (page: GhIssue[]) => page.filter((i) => i.pull_request).map((i) => i.number) };
}

/** Pull requests with their figures (additions, deletions, changed files) from each one's detail. */
export function pullRequests(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  const w = pullWindow(job);
  const detail = async (pull_number: number) => {
    const res = await job.gh.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number });
    return res.data as unknown as GhPull;
  };
  const rows = async (page: GhIssue[]) =>
    (await details(job, w.numbers(page), detail)).map((p) => pullRequestRow(job.scope, p));
  return writePages(job, 'pull_requests', w.pages, rows, w.watermark);
}

/** Reviews of the pull requests updated in the window, written a page of pull requests at a time. */
export function pullRequestReviews(job: Job): Promise<UnitResult> {
  const w = pullWindow(job);
  const rows = async (page: GhIssue[]) => (await details(job, w.numbers(page), (n) => reviewsOf(job, n))).flat();
  return writePages(job, 'pull_request_reviews', w.pages, rows, w.watermark);
}

/** Every review of pull request `n`, as rows. */
async function reviewsOf(job: Job, n: number): Promise<Row[]> {
  const { owner, repo } = job.repo;
  const out: Row[] = [];
  const pages = job.gh.paginate.iterator('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
    owner,
    repo,
    pull_number: n,
    per_page: PER_PAGE,
  });
  for await (const res of pages) {
    for (const r of res.data as unknown as GhReview[]) out.push(reviewRow(job.scope, n, r));
  }
  return out;
}
