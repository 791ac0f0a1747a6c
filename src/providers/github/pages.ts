/**
 * How a GitHub unit reads: a list's pages, narrowed to the unit's window, each page's rows written
 * through the fenced sink before the next page is asked for (a lost lease stops the unit).
 *
 * Windows: backfill reads `[since, before)`; incremental and full_resync read from `since` on.
 * Lists sorted by `updated` ascending with a `since` parameter (`ascendingWindow`) stop at the first
 * object past a backfill's end, and after `maxPages` pages in incremental mode: the watermark then
 * moves only to the latest `updated_at` read. Lists without `since`, newest first
 * (`descendingWindow`), stop after the first page that reaches back past the window's start.
 */
import type { UnitResult } from '../../sdk/types.js';
import { mapLimited } from '../kit/concurrency.js';
import type { Row } from '../kit/rows.js';
import type { UnitBase } from '../kit/runner.js';
import { PageWriter } from '../kit/write.js';
import type { GithubOctokit } from './client.js';
import type { RepoRef } from './config.js';
import type { RowScope } from './mapping.js';

/** One repository's part of a unit (`maxPages`: pages an incremental unit reads from an ascending list). */
export interface Job extends UnitBase {
  gh: GithubOctokit;
  repo: RepoRef;
  scope: RowScope;
  /** Detail requests (a PR's or commit's figures) in flight at once. */
  detailConcurrency: number;
}

export type { Row };
export const PER_PAGE = 100;

export function afterSince(job: Job, t: Date): boolean {
  return job.since === null || t.getTime() >= job.since.getTime();
}

/** Backfill windows end at `before`; the others read up to now. */
export function beforeEnd(job: Job, t: Date): boolean {
  return !job.backfill || job.before === null || t.getTime() < job.before.getTime();
}

export function inWindow(job: Job, t: Date): boolean {
  return afterSince(job, t) && beforeEnd(job, t);
}

export const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

/** A repository list route (`/repos/{owner}/{repo}/…`) of the REST API. */
type RepoRoute =
  | 'GET /repos/{owner}/{repo}/assignees'
  | 'GET /repos/{owner}/{repo}/issues'
  | 'GET /repos/{owner}/{repo}/issues/comments'
  | 'GET /repos/{owner}/{repo}/issues/events'
  | 'GET /repos/{owner}/{repo}/commits';

/**
 * The pages of a repository list, 100 objects a page, following `Link: rel="next"`; each page's URL
 * is visited on the unit's trail before it is asked for (a loop or too many pages end the unit).
 */
export async function* listPages<T>(
  job: Job,
  route: RepoRoute,
  params: Record<string, string | number | undefined> = {},
): AsyncGenerator<T[]> {
  const { owner, repo } = job.repo;
  const options = { owner, repo, per_page: PER_PAGE, ...params };
  const trail = linkTrail(job, job.gh.request.endpoint(route, options).url);
  for await (const res of job.gh.paginate.iterator(route, options)) {
    yield res.data as unknown as T[];
    trail.next(res.headers.link);
  }
}

/** A list's trail from its first page's URL: `next(link)` visits the page a `Link` header names next. */
export function linkTrail(job: Job, first: string): { next: (link: string | undefined) => void } {
  const trail = job.pages.trail(`GET ${new URL(first).pathname}`);
  const visit = (url: string) => trail.visit(new URL(url, first).href);
  visit(first);
  return {
    next: (link) => {
      const url = /<([^<>]+)>;\s*rel="next"/.exec(link ?? '')?.[1]; // as the paginate plugin reads it
      if (url) visit(url);
    },
  };
}

/**
 * The repository's issues and pull requests (GitHub lists both; a pull request carries
 * `pull_request`), `updated` ascending from the window's start.
 */
export function issuePages<T>(job: Job): AsyncGenerator<T[]> {
  return listPages<T>(job, 'GET /repos/{owner}/{repo}/issues', {
    state: 'all',
    sort: 'updated',
    direction: 'asc',
    since: iso(job.since),
  });
}

/** An ascending list read through a window: the pages, and where the watermark may move. */
export interface WindowedPages<T> {
  pages: AsyncIterable<T[]>;
  /** After reading: the latest `updated_at` read when the unit stopped early, else undefined (to `before`). */
  watermark: () => Date | null | undefined;
}

/**
 * Narrows a list sorted by `updated` ascending (from `since`) to the window: each page's objects
 * before a backfill's end; stops at the first one past it, or after `maxPages` pages in
 * incremental mode (the watermark then moves only to the latest `updated_at` read).
 */
export function ascendingWindow<T>(job: Job, pages: AsyncIterable<T[]>, updatedAt: (t: T) => string): WindowedPages<T> {
  let latest: Date | null = null;
  let stoppedEarly = false;
  async function* narrowed(): AsyncGenerator<T[]> {
    let read = 0;
    for await (const page of pages) {
      const inside: T[] = [];
      let past = false;
      for (const t of page) {
        const updated = new Date(updatedAt(t));
        if (!beforeEnd(job, updated)) {
          past = true;
          break;
        }
        inside.push(t);
        if (!latest || updated > latest) latest = updated;
      }
      yield inside;
      if (past) return;
      if (!job.backfill && ++read >= job.maxPages) {
        stoppedEarly = true;
        return;
      }
    }
  }
  return { pages: narrowed(), watermark: () => (stoppedEarly ? latest : undefined) };
}

/**
 * Narrows a list sorted newest first, without `since`, to the window: each page's objects in it;
 * stops after the first page holding an object older than the window's start.
 */
export async function* descendingWindow<T>(
  job: Job,
  pages: AsyncIterable<T[]>,
  at: (t: T) => string,
): AsyncGenerator<T[]> {
  for await (const page of pages) {
    yield page.filter((t) => inWindow(job, new Date(at(t))));
    if (page.some((t) => !afterSince(job, new Date(at(t))))) return;
  }
}

/** One surface a unit writes from each page: its rows (which may call the API for details). */
export interface Output<T> {
  surface: string;
  rows: (page: T[]) => Row[] | Promise<Row[]>;
}

/**
 * Writes each page's rows, one fenced write per surface, before the next page is asked for.
 * Returns the unit's result: rows written, surfaces touched, and the watermark when it moved short.
 */
export async function writePages<T>(
  job: Job,
  pages: AsyncIterable<T[]> | Iterable<T[]>,
  outputs: Output<T> | readonly Output<T>[],
  watermark?: () => Date | null | undefined,
): Promise<UnitResult> {
  const list = Array.isArray(outputs) ? (outputs as readonly Output<T>[]) : [outputs as Output<T>];
  const writer = new PageWriter(job.ctx);
  for await (const page of pages) {
    for (const out of list) await writer.write(out.surface, await out.rows(page));
  }
  const result = writer.result();
  const moved = watermark?.();
  if (moved !== undefined) result.watermark = moved;
  return result;
}

/** Each object's detail (`fetch`), in order, with up to `detailConcurrency` requests in flight. */
export function details<T, R>(job: Job, items: readonly T[], fetch: (t: T) => Promise<R>): Promise<R[]> {
  return mapLimited(items, job.detailConcurrency, fetch, job.ctx.signal);
}
