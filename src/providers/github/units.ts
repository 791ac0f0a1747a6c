/**
 * One function per dataset: read the repository's pages for the unit's window and write each page's
 * rows through the fenced sink before asking for the next (a lost lease stops the unit).
 *
 * Windows: backfill reads `[since, before)`; incremental and full_resync read from `since` on.
 * Lists sorted by `updated` ascending with a `since` parameter (issues, comments) may stop after
 * `maxPages` pages in incremental mode: the watermark then moves only to the latest `updated_at`
 * read. Lists without `since` are read newest first and stop once past the window.
 */
import type { UnitContext, UnitResult } from '../types.js';
import type { GithubOctokit } from './client.js';
import type { RepoRef } from './config.js';
import {
  commentRow,
  commitRow,
  eventRow,
  isPullRequestComment,
  memberRow,
  pullRequestRow,
  repositoryRow,
  reviewRow,
  workItemRow,
  type GhComment,
  type GhCommit,
  type GhIssue,
  type GhIssueEvent,
  type GhPull,
  type GhRepo,
  type GhReview,
  type GhUser,
  type RowScope,
} from './mapping.js';

export interface Job {
  ctx: UnitContext;
  gh: GithubOctokit;
  repo: RepoRef;
  scope: RowScope;
  since: Date | null;
  before: Date | null;
  backfill: boolean;
  /** Pages an incremental unit reads from an ascending list before it stops (and moves its watermark). */
  maxPages: number;
  /** Detail requests (a PR's or commit's figures) in flight at once. */
  detailConcurrency: number;
}

type Row = Record<string, unknown>;
const PER_PAGE = 100;

function afterSince(job: Job, t: Date): boolean {
  return job.since === null || t.getTime() >= job.since.getTime();
}

/** Backfill windows end at `before`; the others read up to now. */
function beforeEnd(job: Job, t: Date): boolean {
  return !job.backfill || job.before === null || t.getTime() < job.before.getTime();
}

function inWindow(job: Job, t: Date): boolean {
  return afterSince(job, t) && beforeEnd(job, t);
}

async function write(job: Job, surface: string, rows: Row[]): Promise<number> {
  if (rows.length === 0) return 0;
  await job.ctx.sink.write(job.ctx.lease, surface, rows);
  return rows.length;
}

function done(surface: string, items: number, watermark?: Date | null): UnitResult {
  const r: UnitResult = { items, touchedSurfaces: items > 0 ? [surface] : [] };
  if (watermark !== undefined) r.watermark = watermark;
  return r;
}

/** Runs `fn` over `items`, at most `n` at a time, keeping their order. */
async function mapLimited<T, R>(items: readonly T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += n) out.push(...(await Promise.all(items.slice(i, i + n).map(fn))));
  return out;
}

const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

export async function repositories(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  const res = await job.gh.request('GET /repos/{owner}/{repo}', { owner, repo });
  return done('repositories', await write(job, 'repositories', [repositoryRow(job.scope, res.data as GhRepo)]));
}

/** Members: the users issues can be assigned to in the repository. */
export async function members(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  let items = 0;
  for await (const res of job.gh.paginate.iterator('GET /repos/{owner}/{repo}/assignees', {
    owner,
    repo,
    per_page: PER_PAGE,
  })) {
    items += await write(
      job,
      'members',
      (res.data as unknown as GhUser[]).map((u) => memberRow(job.scope, u, 'assignee')),
    );
  }
  return done('members', items);
}

interface AscendingList<T> {
  surface: string;
  pages: AsyncIterable<{ data: unknown }>;
  updatedAt(t: T): string;
  /** Whether the object belongs to this dataset (e.g. an issue, not a pull request). */
  keep(t: T): boolean;
  row(t: T): Row;
}

/** A list sorted by `updated` ascending from `since`: stops past a backfill's end or after `maxPages`. */
async function ascending<T>(job: Job, list: AscendingList<T>): Promise<UnitResult> {
  let items = 0;
  let pages = 0;
  let latest: Date | null = null;
  for await (const res of list.pages) {
    const rows: Row[] = [];
    let past = false;
    for (const t of res.data as T[]) {
      const updated = new Date(list.updatedAt(t));
      if (!beforeEnd(job, updated)) {
        past = true;
        break;
      }
      if (list.keep(t)) rows.push(list.row(t));
      if (!latest || updated > latest) latest = updated;
    }
    items += await write(job, list.surface, rows);
    if (past) break;
    if (!job.backfill && ++pages >= job.maxPages) return done(list.surface, items, latest);
  }
  return done(list.surface, items);
}

export function workItems(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  return ascending<GhIssue>(job, {
    surface: 'work_items',
    pages: job.gh.paginate.iterator('GET /repos/{owner}/{repo}/issues', {
      owner,
      repo,
      state: 'all',
      sort: 'updated',
      direction: 'asc',
      since: iso(job.since),
      per_page: PER_PAGE,
    }),
    updatedAt: (i) => i.updated_at,
    keep: (i) => !i.pull_request,
    row: (i) => workItemRow(job.scope, i),
  });
}

export function workItemComments(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  return ascending<GhComment>(job, {
    surface: 'work_item_comments',
    pages: job.gh.paginate.iterator('GET /repos/{owner}/{repo}/issues/comments', {
      owner,
      repo,
      sort: 'updated',
      direction: 'asc',
      since: iso(job.since),
      per_page: PER_PAGE,
    }),
    updatedAt: (c) => c.updated_at,
    keep: (c) => !isPullRequestComment(c),
    row: (c) => commentRow(job.scope, c),
  });
}

/**
 * Issue events (state, label and assignee changes), newest first without a `since`: read until a
 * whole page is older than the window.
 */
export async function workItemHistory(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  let items = 0;
  for await (const res of job.gh.paginate.iterator('GET /repos/{owner}/{repo}/issues/events', {
    owner,
    repo,
    per_page: PER_PAGE,
  })) {
    const events = res.data as unknown as GhIssueEvent[];
    const rows = events
      .filter((e) => inWindow(job, new Date(e.created_at)) && !e.issue?.pull_request)
      .map((e) => eventRow(job.scope, e));
    items += await write(job, 'work_item_events', rows);
    if (events.every((e) => !afterSince(job, new Date(e.created_at)))) break;
  }
  return done('work_item_events', items);
}

/** Pull requests updated in the window, newest first, page by page (stops past the window). */
async function* pullPages(job: Job): AsyncGenerator<GhPull[]> {
  const { owner, repo } = job.repo;
  for await (const res of job.gh.paginate.iterator('GET /repos/{owner}/{repo}/pulls', {
    owner,
    repo,
    state: 'all',
    sort: 'updated',
    direction: 'desc',
    per_page: PER_PAGE,
  })) {
    const pulls = res.data as unknown as GhPull[];
    yield pulls.filter((p) => inWindow(job, new Date(p.updated_at)));
    if (pulls.some((p) => !afterSince(job, new Date(p.updated_at)))) return;
  }
}

/** Pull requests with their figures (additions, deletions, changed files) from each one's detail. */
export async function pullRequests(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  let items = 0;
  for await (const pulls of pullPages(job)) {
    const details = await mapLimited(pulls, job.detailConcurrency, async (p) => {
      const res = await job.gh.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        owner,
        repo,
        pull_number: p.number,
      });
      return res.data as unknown as GhPull;
    });
    items += await write(
      job,
      'pull_requests',
      details.map((p) => pullRequestRow(job.scope, p)),
    );
  }
  return done('pull_requests', items);
}

/** Reviews of the pull requests updated in the window. */
export async function pullRequestReviews(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  let items = 0;
  for await (const pulls of pullPages(job)) {
    for (const p of pulls) {
      for await (const res of job.gh.paginate.iterator('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
        owner,
        repo,
        pull_number: p.number,
        per_page: PER_PAGE,
      })) {
        const reviews = res.data as unknown as GhReview[];
        items += await write(
          job,
          'pull_request_reviews',
          reviews.map((r) => reviewRow(job.scope, p.number, r)),
        );
      }
    }
  }
  return done('pull_request_reviews', items);
}

/** Commits committed in `[since, before)`, each with its stats from the commit's detail. */
export async function commits(job: Job): Promise<UnitResult> {
  const { owner, repo } = job.repo;
  let items = 0;
  for await (const res of job.gh.paginate.iterator('GET /repos/{owner}/{repo}/commits', {
    owner,
    repo,
    since: iso(job.since),
    until: iso(job.before),
    per_page: PER_PAGE,
  })) {
    const listed = res.data as unknown as GhCommit[];
    const details = await mapLimited(listed, job.detailConcurrency, async (c) => {
      const d = await job.gh.request('GET /repos/{owner}/{repo}/commits/{ref}', { owner, repo, ref: c.sha });
      return d.data as unknown as GhCommit;
    });
    items += await write(
      job,
      'commits',
      details.map((c) => commitRow(job.scope, c)),
    );
  }
  return done('commits', items);
}
