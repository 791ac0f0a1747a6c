/**
 * The work-item family in one unit: issues of one project updated in the unit's window, read from
 * `POST /rest/api/3/search/jql` (`nextPageToken` / `isLast`), with `expand=changelog` when history
 * or work items are wanted and the `comment` field when comments are. Search results embed only
 * the first page of an issue's comments and the most recent entries of its changelog (its `total`
 * sometimes left out); longer ones are read through `/rest/api/3/issue/{id}/comment` and
 * `/rest/api/3/issue/{id}/changelog`.
 *
 * Only the datasets the unit carries (`UnitInfo.datasets`) are written: `work-items` → work_items,
 * `work-item-comments` → work_item_comments, `work-item-history` → work_item_events; each search
 * page's rows are written (fenced) before the next page is asked for.
 *
 * Windows: the JQL asks for whole minutes around `[since, before)` (./jql.ts) and each issue's
 * `fields.updated` decides exactly. Search is eventually consistent (a fresh change may not be
 * visible to it yet): the coordinator's incremental overlap (`incrementalOverlapMs`, provider.ts)
 * reads again what changed just before the last watermark. An incremental unit that stops after `maxPages` pages moves
 * its watermark only to the latest `updated` it read.
 */
import { NonRetryableError } from '../../errors.js';
import type { UnitResult } from '../../sdk/types.js';
import { mapLimited } from '../kit/concurrency.js';
import { writeRows } from '../kit/write.js';
import { idsJql, inWindow, issuesJql } from './jql.js';
import {
  commentRow,
  eventRows,
  workItemRow,
  type JiraComment,
  type JiraHistory,
  type JiraIssue,
  type JiraStatus,
  type JiraUser,
  type StatusCategories,
} from './mapping.js';
import { resumableRead, wrote, writtenBefore, type KeysetFormat, type KeysetProgress } from '../kit/resume.js';
import { parseJiraTime, isTimeZone } from './timeZone.js';
import type { Job } from './units.js';

/** The work-item family's datasets and the surface each writes. */
export const FAMILY: Readonly<Record<string, string>> = {
  'work-items': 'work_items',
  'work-item-comments': 'work_item_comments',
  'work-item-history': 'work_item_events',
};

const ITEM_FIELDS = [
  'summary',
  'status',
  'resolution',
  'issuetype',
  'assignee',
  'labels',
  'created',
  'updated',
  'resolutiondate',
  'parent',
  'project',
];
const DETAIL_PAGE = 100;

interface SearchPage {
  issues: JiraIssue[];
  nextPageToken?: string;
  isLast?: boolean;
}

interface ChangelogPage {
  values: JiraHistory[];
  startAt: number;
  maxResults: number;
  total?: number;
  isLast?: boolean;
}

interface CommentPage {
  comments: JiraComment[];
  startAt: number;
  maxResults: number;
  total: number;
}

interface Wants {
  items: boolean;
  comments: boolean;
  history: boolean;
}

/**
 * How a family unit resumes (../kit/resume.ts): search is ordered by `updated` ascending, so a
 * deferred read searches again from the latest `updated` it wrote, skipping the issues it wrote at it.
 */
const FAMILY_RESUME: KeysetFormat = {
  v: 1,
  order: 'asc',
  surfaces: ['work_items', 'work_item_comments', 'work_item_events'],
};

/**
 * The family's issues of the unit's project in its window, a search page at a time. A unit
 * deferred for a rate limit hands its deferral where it stands (FAMILY_RESUME); its next attempt
 * searches from the latest `updated` it wrote, skipping the issues it already wrote.
 */
export function workItemFamily(job: Job): Promise<UnitResult> {
  return resumableRead(job.ctx, FAMILY_RESUME, (p, resumed) => readFamily(job, p, resumed));
}

/** Reads search pages, recording each issue in `p` once its page's rows are all written. */
async function readFamily(job: Job, p: KeysetProgress, resumed: boolean): Promise<UnitResult> {
  const wants = wantsOf(job);
  const timeZone = await callerTimeZone(job);
  const categories = wants.items ? await statusCategories(job) : new Map<string, string>();
  // A resumed read searches from the latest `updated` written and skips what was written at it.
  const boundary = resumed ? { ...p, tied: new Set(p.tied) } : null;
  const from = boundary ? new Date(boundary.edge!) : job.since;
  const jql = issuesJql({ project: job.project, since: from, before: job.before, timeZone });
  let token: string | undefined;
  const trail = job.pages.trail('POST /rest/api/3/search/jql');
  for (let first = true; ; first = false) {
    trail.visit(token ?? null);
    const page = await search(job, jql, wants, token, first);
    const issues = page.issues.filter((i) => {
      const updated = parseJiraTime(i.fields.updated);
      return (
        inWindow(updated, job.since, job.before) && !(boundary && writtenBefore(FAMILY_RESUME, boundary, i.id, updated))
      );
    });
    await writePage(job, issues, wants, categories, p.counts);
    for (const i of issues) wrote(FAMILY_RESUME, p, i.id, parseJiraTime(i.fields.updated));
    p.pages++;
    token = page.nextPageToken;
    // The last page says `isLast: true`; without the flag, a page with no token is the last.
    if (page.isLast === true || !token) return result(job, p.counts);
    if (!job.backfill && p.pages >= job.maxPages) {
      // Only what was read: the latest `updated` kept (or the window's start when none was kept).
      const watermark = p.edge !== null ? new Date(p.edge) : job.since;
      return { ...result(job, p.counts), ...(watermark ? { watermark } : {}) };
    }
  }
}

/** What of the family the unit writes: its datasets. */
function wantsOf(job: Job): Wants {
  return {
    items: job.datasets.includes('work-items'),
    comments: job.datasets.includes('work-item-comments'),
    history: job.datasets.includes('work-item-history'),
  };
}

/**
 * Writes the family (as the unit's datasets ask) of the issues `ids` of the unit's project, searched
 * by id a page at a time (a verify's missing and stale issues); rows written are added to `counts`.
 * An id no longer there is simply not found.
 */
export async function fetchFamily(job: Job, ids: readonly string[], counts: Record<string, number>): Promise<void> {
  const wants = wantsOf(job);
  const categories = wants.items ? await statusCategories(job) : new Map<string, string>();
  const jql = idsJql(job.project, ids);
  let token: string | undefined;
  const trail = job.pages.trail('POST /rest/api/3/search/jql (by id)');
  for (let first = true; ; first = false) {
    trail.visit(token ?? null);
    const page = await search(job, jql, wants, token, first);
    await writePage(job, page.issues, wants, categories, counts);
    token = page.nextPageToken;
    if (page.isLast === true || !token) return;
  }
}

export function result(job: Job, counts: Record<string, number>): UnitResult {
  const surfaces = job.datasets.map((d) => FAMILY[d]).filter((s): s is string => s !== undefined);
  return {
    items: surfaces.reduce((n, s) => n + (counts[s] ?? 0), 0),
    touchedSurfaces: surfaces.filter((s) => (counts[s] ?? 0) > 0),
    written: counts,
  };
}

/** The caller's time zone, in which Jira reads JQL dates (UTC when Jira does not say). */
export async function callerTimeZone(job: Job): Promise<string> {
  const me = await job.jira.get<JiraUser>('/rest/api/3/myself');
  return typeof me.timeZone === 'string' && isTimeZone(me.timeZone) ? me.timeZone : 'UTC';
}

/** Status id → category key, for the changelog's transitions. */
async function statusCategories(job: Job): Promise<StatusCategories> {
  const statuses = await job.jira.get<JiraStatus[]>('/rest/api/3/status');
  const map = new Map<string, string>();
  for (const s of statuses) if (s.statusCategory?.key) map.set(String(s.id), s.statusCategory.key);
  return map;
}

async function search(job: Job, jql: string, wants: Wants, token: string | undefined, first: boolean) {
  const fields = wants.items ? [...ITEM_FIELDS, job.config.sprintField] : ['updated', 'project'];
  if (wants.comments) fields.push('comment');
  const body = {
    jql,
    fields,
    maxResults: job.pageSize,
    ...(wants.items || wants.history ? { expand: 'changelog' } : {}),
    ...(token ? { nextPageToken: token } : {}),
  };
  try {
    return await job.jira.post<SearchPage>('/rest/api/3/search/jql', body);
  } catch (err) {
    // Jira answers a search naming an unknown project with 400: ask for the project (404 → not_found).
    if (first && err instanceof NonRetryableError && err.category === 'provider_error') {
      await job.jira.get(`/rest/api/3/project/${encodeURIComponent(job.project)}`);
    }
    throw err;
  }
}

async function writePage(
  job: Job,
  issues: JiraIssue[],
  wants: Wants,
  categories: StatusCategories,
  counts: Record<string, number>,
): Promise<void> {
  const withDetails = async (i: JiraIssue) => ({
    issue: i,
    histories: wants.items || wants.history ? await changelogOf(job, i) : [],
    comments: wants.comments ? await commentsOf(job, i) : [],
  });
  const details = await mapLimited(issues, job.detailConcurrency, withDetails, job.ctx.signal);
  if (wants.items) {
    const rows = details.map((d) => workItemRow(job.scope, d.issue, d.histories, categories, job.config.sprintField));
    counts.work_items! += await writeRows(job.ctx, 'work_items', rows);
  }
  if (wants.comments) {
    const rows = details.flatMap((d) => d.comments.map((c) => commentRow(job.scope, d.issue.id, c)));
    counts.work_item_comments! += await writeRows(job.ctx, 'work_item_comments', rows);
  }
  if (wants.history) {
    const rows = details.flatMap((d) => eventRows(job.scope, d.issue.id, d.histories));
    counts.work_item_events! += await writeRows(job.ctx, 'work_item_events', rows);
  }
}

/**
 * The issue's whole changelog: the embedded one when it is known to hold every entry, else every
 * page of `/rest/api/3/issue/{id}/changelog`. A search embeds only the most recent entries and may
 * leave `total` out: the embedded list is complete when `total` says so, or, without `total`, when
 * it is shorter than its `maxResults`; anything else (a full page, or neither figure) is read whole.
 */
async function changelogOf(job: Job, issue: JiraIssue): Promise<JiraHistory[]> {
  const embedded = issue.changelog?.histories ?? [];
  if (embeddedComplete(issue.changelog, embedded.length)) return embedded;
  const all: JiraHistory[] = [];
  const path = `/rest/api/3/issue/${issue.id}/changelog`;
  const trail = job.pages.trail(`GET ${path}`);
  for (let startAt = 0; ;) {
    trail.visit(startAt);
    const page = await detail<ChangelogPage>(job, path, startAt);
    if (!page) return embedded;
    all.push(...page.values);
    startAt += page.values.length;
    if (lastPage(page.isLast, page.values.length, startAt, page.total)) return all;
  }
}

/** Whether an embedded changelog holds every entry (see `changelogOf`). */
export function embeddedComplete(c: JiraIssue['changelog'], got: number): boolean {
  if (!c) return true;
  if (c.total !== undefined) return c.total <= got;
  return c.maxResults !== undefined && got < c.maxResults;
}

/** The issue's comments: the embedded page when it holds them all, else every page. */
async function commentsOf(job: Job, issue: JiraIssue): Promise<JiraComment[]> {
  const embedded = issue.fields.comment;
  if (!embedded || embedded.total === undefined || embedded.total <= embedded.comments.length) {
    return embedded?.comments ?? [];
  }
  const all: JiraComment[] = [];
  const path = `/rest/api/3/issue/${issue.id}/comment`;
  const trail = job.pages.trail(`GET ${path}`);
  for (let startAt = 0; ;) {
    trail.visit(startAt);
    const page = await detail<CommentPage>(job, path, startAt);
    if (!page) return embedded.comments;
    all.push(...page.comments);
    startAt += page.comments.length;
    if (page.comments.length === 0 || startAt >= page.total) return all;
  }
}

/** Whether a `startAt` page was the last: `isLast` when sent, else an empty page or `total` reached. */
function lastPage(isLast: boolean | undefined, got: number, next: number, total: number | undefined): boolean {
  if (got === 0) return true;
  if (isLast !== undefined) return isLast;
  return total !== undefined && next >= total;
}

/** One page of an issue's list; null when the issue is gone (deleted since the search). */
async function detail<T>(job: Job, path: string, startAt: number): Promise<T | null> {
  try {
    return await job.jira.get<T>(path, { startAt, maxResults: DETAIL_PAGE });
  } catch (err) {
    if (err instanceof NonRetryableError && err.category === 'not_found') return null;
    throw err;
  }
}
