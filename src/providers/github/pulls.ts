/**
 * Pull requests and their reviews, from the pull requests of a page of the repository's issues list
 * (issueList.ts): `GET /pulls` has no `since`, so a window read there would page through every newer
 * pull request; the issues list has one and lists pull requests too, each carrying a `pull_request`
 * key. Each one's detail (`/pulls/{n}`: additions, deletions, changed files, merge, draft, base and
 * head) or reviews (`/pulls/{n}/reviews`) is asked for by number.
 */
import { pullRequestRow, reviewRow, type GhIssue, type GhPull, type GhReview } from './mapping.js';
import { details, linkTrail, PER_PAGE, type Job, type Row } from './pages.js';

function pullNumbers(page: GhIssue[]): number[] {
  return page.filter((i) => i.pull_request).map((i) => i.number);
}

/** The page's pull requests from their details (their figures are only there). */
export async function pullRows(job: Job, page: GhIssue[]): Promise<Row[]> {
  const { owner, repo } = job.repo;
  const detail = async (pull_number: number) => {
    const res = await job.gh.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number });
    return res.data as unknown as GhPull;
  };
  return (await details(job, pullNumbers(page), detail)).map((p) => pullRequestRow(job.scope, p));
}

/** Every review of the page's pull requests. */
export async function reviewRows(job: Job, page: GhIssue[]): Promise<Row[]> {
  return (await details(job, pullNumbers(page), (n) => reviewsOf(job, n))).flat();
}

/** Every review of pull request `n`, as rows. */
async function reviewsOf(job: Job, n: number): Promise<Row[]> {
  const { owner, repo } = job.repo;
  const out: Row[] = [];
  const route = 'GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews';
  const options = { owner, repo, pull_number: n, per_page: PER_PAGE };
  const trail = linkTrail(job, job.gh.request.endpoint(route, options).url);
  for await (const res of job.gh.paginate.iterator(route, options)) {
    for (const r of res.data as unknown as GhReview[]) out.push(reviewRow(job.scope, n, r));
    trail.next(res.headers.link);
  }
  return out;
}
