/**
 * How a GitHub unit reads: a list's pages, narrowed to the unit's window, each page's rows written
 * through the fenced sink before the next page is asked for (a lost lease stops the unit).
 *
 * GitHub pages its lists by page number (`Link: <…&page=2>; rel="next"`), and people keep editing
 * while a unit reads. An object edited on a page already read moves to the end of a list sorted by
 * `updated`; a deleted one leaves the list; either way every later object shifts one place forward
 * and the one at the page boundary lands on a page already read: following page numbers would
 * never read it, and the watermark would then pass it. So no list that can change under the reader
 * is read by page numbers alone:
 * - Lists sorted by `updated` ascending with a `since` (the issues list, the repository's issue
 *   comments) are read by keyset (`keysetPages`): each request is the first page from the latest
 *   `updated_at` read so far (`since` is inclusive; objects seen at the same version are dropped by
 *   id). An edited object comes back at the end with its new `updated_at` and is read there; the
 *   others keep their place relative to `since`, so none is skipped. Only when a whole page shares
 *   one `updated_at` second does the read follow page numbers within that second.
 * - Lists with no `since` or sort (issue events, assignees) are listed until two consecutive
 *   listings agree (`settledPages`): a shift during one listing changes the next one's ids, and
 *   what the next one brings that was not read is written. A single page is one answer, read at
 *   once: nothing can shift within it. Reviews of a pull request are only ever added (a submitted
 *   review is never deleted), at the end: page numbers cannot skip one.
 *
 * Windows: backfill reads `[since, before)`; incremental and full_resync read from `since` on.
 * Ascending lists (`ascendingWindow`) stop at the first object past a backfill's end, and after
 * `maxPages` pages in incremental mode: the watermark then moves only to the latest `updated_at`
 * read (every object before it was read: the keyset skips none).
 */
import type { UnitResult } from '../../sdk/types.js';
import { mapLimited } from '../kit/concurrency.js';
import type { Row } from '../kit/rows.js';
import type { UnitBase } from '../kit/runner.js';
import { wrote, writtenBefore, type KeysetFormat, type KeysetProgress } from '../kit/resume.js';
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

/** What a keyset read needs of an object: its id and its `updated_at`. */
export interface Versioned {
  id: number;
  updated_at: string;
}

type KeysetRoute = 'GET /repos/{owner}/{repo}/issues' | 'GET /repos/{owner}/{repo}/issues/comments';

/**
 * Where a resumable read stands (../kit/resume.ts): its checkpoint format, its progress (moved past
 * each page once the page's rows are written), and whether it resumed from a checkpoint.
 */
export interface Place {
  f: KeysetFormat;
  p: KeysetProgress;
  resumed: boolean;
}

/**
 * A list sorted by `updated` ascending, read by keyset from the window's start (module comment),
 * or from the place a resumed read stands at (`place`, skipping what it wrote there): each request
 * asks for the first page from the latest `updated_at` read; objects already read at that version
 * are left out. A page that does not move `since` on (all of one second, or empty) is followed by
 * its `Link: rel="next"`. The trail's key is the request's whole URL, `since` and `page` included:
 * the same URL twice is a loop, a request from a later `since` is not. Ends at the page without a
 * next link.
 */
export async function* keysetPages<T extends Versioned>(
  job: Job,
  route: KeysetRoute,
  params: Record<string, string | number | undefined>,
  place: Place,
): AsyncGenerator<T[]> {
  const { owner, repo } = job.repo;
  const read = new Map<number, number>();
  const from = (since: Date | null) =>
    job.gh.request.endpoint(route, { owner, repo, per_page: PER_PAGE, ...params, since: iso(since) }).url;
  const boundary = place.resumed ? { ...place.p, tied: new Set(place.p.tied) } : null;
  const before = (t: T) =>
    boundary !== null && writtenBefore(place.f, boundary, String(t.id), Date.parse(t.updated_at));
  let since = boundary ? new Date(boundary.edge!) : job.since;
  let url: string = from(since);
  const trail = job.pages.trail(`GET ${new URL(url).pathname}`);
  for (;;) {
    trail.visit(new URL(url).href);
    const res = await job.gh.request({ method: 'GET', url });
    const all = res.data as unknown as T[];
    yield all.filter((t) => read.get(t.id) !== Date.parse(t.updated_at) && !before(t));
    for (const t of all) read.set(t.id, Date.parse(t.updated_at));
    const next = nextLink(res.headers.link);
    if (!next) return;
    const last = all.length > 0 ? new Date(all.at(-1)!.updated_at) : null;
    if (last && (since === null || last.getTime() > since.getTime())) {
      since = last;
      url = from(since);
    } else {
      url = new URL(next, url).href; // a page all of one second (or empty): on by the page GitHub names next
    }
  }
}

/** The URL a `Link` header names next, as the paginate plugin reads it. */
function nextLink(link: string | undefined): string | undefined {
  return /<([^<>]+)>;\s*rel="next"/.exec(link ?? '')?.[1];
}

/**
 * The repository's issues and pull requests (GitHub lists both; a pull request carries
 * `pull_request`), `updated` ascending from the window's start, by keyset.
 */
export function issuePages<T extends Versioned>(job: Job, place: Place): AsyncGenerator<T[]> {
  const params = { state: 'all', sort: 'updated', direction: 'asc' };
  return keysetPages<T>(job, 'GET /repos/{owner}/{repo}/issues', params, place);
}

/** Listings a list without `since` or sort is read at most before the unit gives up (`settledPages`). */
export const MAX_LISTINGS = 4;

/**
 * A list without `since` or sort read until two consecutive listings agree on every id in order
 * (one page: at once). The pages are the first listing's, then from each later listing only the
 * objects not yet read. A list still changing after MAX_LISTINGS listings ends the read with
 * what it has: `watermark()` then keeps the unit's watermark where it was (its `since`).
 */
export function settledPages<T>(job: Job, route: RepoRoute, key: (t: T) => string | number): WindowedPages<T> {
  let settled = false;
  async function* pages(): AsyncGenerator<T[]> {
    const read = new Set<string | number>();
    let previous: (string | number)[] | null = null;
    for (let listing = 1; listing <= MAX_LISTINGS; listing++) {
      const ids: (string | number)[] = [];
      let count = 0;
      for await (const page of listPages<T>(job, route)) {
        count++;
        ids.push(...page.map(key));
        yield page.filter((t) => !read.has(key(t)));
        for (const t of page) read.add(key(t));
      }
      if (count <= 1 || (previous !== null && sameIds(previous, ids))) {
        settled = true;
        return;
      }
      previous = ids;
    }
  }
  return { pages: pages(), watermark: () => (settled ? undefined : job.since) };
}

function sameIds(a: readonly (string | number)[], b: readonly (string | number)[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

/** An ascending list read through a window: the pages, and where the watermark may move. */
export interface WindowedPages<T> {
  pages: AsyncIterable<T[]>;
  /** After reading: the latest `updated_at` read when the unit stopped early, else undefined (to `before`). */
  watermark: () => Date | null | undefined;
}

/**
 * Narrows a list sorted by `updated` ascending (from `since`) to the window: each page's objects
 * before a backfill's end; stops at the first one past it, or after `maxPages` pages (those of the
 * attempts before included) in incremental mode: the watermark then moves only to the latest
 * `updated_at` written. Each page is handed on in parts (`parts`, see `inParts`).
 */
export function ascendingWindow<T extends Versioned>(
  job: Job,
  pages: AsyncIterable<T[]>,
  place: Place,
  parts: Parts<T> = WHOLE_PAGES,
): WindowedPages<T> {
  let stoppedEarly = false;
  async function* narrowed(): AsyncGenerator<T[]> {
    for await (const page of pages) {
      const end = page.findIndex((t) => !beforeEnd(job, new Date(t.updated_at)));
      const inside = end < 0 ? page : page.slice(0, end);
      yield* inParts(place, inside, parts, (t) => [String(t.id), Date.parse(t.updated_at)]);
      if (end >= 0) return;
      if (!job.backfill && place.p.pages >= job.maxPages) {
        stoppedEarly = true;
        return;
      }
    }
  }
  const watermark = () => (stoppedEarly && place.p.edge !== null ? new Date(place.p.edge) : undefined);
  return { pages: narrowed(), watermark };
}

/** How a page is cut into parts: at most `most` objects that `costly` says cost detail calls each. */
export interface Parts<T> {
  costly: (t: T) => boolean;
  most: number;
}

const WHOLE_PAGES: Parts<unknown> = { costly: () => false, most: 1 };

/**
 * Hands `page` on in consecutive parts of at most `parts.most` costly objects (the others ride
 * along; a page without any is one part), moving `place` past each part's objects (id and time by
 * `key`) once that part is written — the reader asks for the next part only then — and past the
 * page after its last. A unit deferred while it reads a part's details then reads again only that
 * part's, not its whole page's.
 */
export async function* inParts<T>(
  place: Place,
  page: readonly T[],
  parts: Parts<T>,
  key: (t: T) => [string, number],
): AsyncGenerator<T[]> {
  for (const part of partsOf(page, parts)) {
    yield part;
    for (const t of part) {
      const [id, ms] = key(t);
      wrote(place.f, place.p, id, ms);
    }
  }
  place.p.pages++;
}

/** `page` cut before each costly object past the `most`th of a part (never an empty part, but for an empty page). */
export function partsOf<T>(page: readonly T[], parts: Parts<T>): T[][] {
  const out: T[][] = [];
  let part: T[] = [];
  let costly = 0;
  for (const t of page) {
    if (parts.costly(t) && costly === parts.most) {
      out.push(part);
      part = [];
      costly = 0;
    }
    part.push(t);
    if (parts.costly(t)) costly++;
  }
  if (part.length > 0 || out.length === 0) out.push(part);
  return out;
}

/** One surface a unit writes from each page: its rows (which may call the API for details). */
export interface Output<T> {
  surface: string;
  rows: (page: T[]) => Row[] | Promise<Row[]>;
}

/**
 * Writes each page's rows, one fenced write per surface, before the next page is asked for; a
 * page's rows are all made (its detail calls done) before any is written, so a page is written
 * whole or not at all. Counts into `counts` when given (a resumed read's). Returns the unit's
 * result: rows written, surfaces touched, and the watermark when it moved short.
 */
export async function writePages<T>(
  job: Job,
  pages: AsyncIterable<T[]> | Iterable<T[]>,
  outputs: Output<T> | readonly Output<T>[],
  watermark?: () => Date | null | undefined,
  counts?: Record<string, number>,
): Promise<UnitResult> {
  const list = Array.isArray(outputs) ? (outputs as readonly Output<T>[]) : [outputs as Output<T>];
  const writer = new PageWriter(job.ctx, counts);
  for await (const page of pages) {
    const rows: Row[][] = [];
    for (const out of list) rows.push(await out.rows(page));
    for (const [i, out] of list.entries()) await writer.write(out.surface, rows[i]!);
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
