/**
 * The work-item family in one unit: issues of one project updated in the unit's window, read from
 * `POST /rest/api/3/search/jql` (`nextPageToken` / `isLast`) on Cloud, or `GET /rest/api/2/search`
 * (`startAt`, read as a keyset: ./searchDc.ts) on Data Center, with `expand=changelog` when history
 * or work items are wanted and the `comment` field when comments are. Search results embed only
 * the first page of an issue's comments and the most recent entries of its changelog (its `total`
 * sometimes left out); longer ones are read through `/rest/api/3/issue/{id}/comment` and
 * `/rest/api/3/issue/{id}/changelog` (Data Center: `/rest/api/2/issue/{id}/comment`, and the issue
 * itself with `expand=changelog`, which gives the whole changelog: api.ts).
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
import { adfToText } from './adf.js';
import { jiraApi } from './api.js';
import { idsJql, inWindow, issuesJql, type IssueQuery } from './jql.js';
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
  type TextOf,
} from './mapping.js';
import { dcPositionPages, dcWindowPages, projectChecked, type IssuePage, type SearchAsk } from './searchDc.js';
import { resumableRead, wrote, writtenBefore, type KeysetFormat, type KeysetProgress } from '../kit/resume.js';
import { parseJiraTime, isTimeZone } from './timeZone.js';
import type { Job } from './units.js';
import { wikiToText } from './wiki.js';

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
 * The family's issues of the unit's project in its window, a search page at a time, then what
 * `after` adds (the issues webhook deliveries named: ./namedIssues.ts). A unit deferred for a rate
 * limit hands its deferral where it stands (FAMILY_RESUME); its next attempt searches from the
 * latest `updated` it wrote, skipping the issues it already wrote.
 */
export function familyRead(
  job: Job,
  after: (written: ReadonlySet<string>, counts: Record<string, number>) => Promise<number>,
): Promise<UnitResult> {
  return resumableRead(job.ctx, FAMILY_RESUME, async (p, resumed) => {
    const written = new Set<string>();
    const searched = await readFamily(job, p, resumed, written);
    return (await after(written, p.counts)) > 0 ? { ...searched, ...result(job, p.counts) } : searched;
  });
}

/** Reads search pages, recording each issue in `p` (and `written`) once its page's rows are all written. */
async function readFamily(job: Job, p: KeysetProgress, resumed: boolean, written: Set<string>): Promise<UnitResult> {
  const wants = wantsOf(job);
  const timeZone = await callerTimeZone(job);
  const categories = wants.items ? await statusCategories(job) : new Map<string, string>();
  // A resumed read searches from the latest `updated` written and skips what was written at it.
  const boundary = resumed ? { ...p, tied: new Set(p.tied) } : null;
  const from = boundary ? new Date(boundary.edge!) : job.since;
  const q = { project: job.project, since: from, before: job.before, timeZone };
  for await (const page of windowPages(job, q, searchAsk(job, wants))) {
    const issues = page.issues.filter((i) => {
      const updated = parseJiraTime(i.fields.updated);
      return (
        inWindow(updated, job.since, job.before) && !(boundary && writtenBefore(FAMILY_RESUME, boundary, i.id, updated))
      );
    });
    await writePage(job, issues, wants, categories, p.counts);
    for (const i of issues) {
      wrote(FAMILY_RESUME, p, i.id, parseJiraTime(i.fields.updated));
      written.add(i.id);
    }
    p.pages++;
    if (page.last) return result(job, p.counts);
    if (!job.backfill && p.pages >= job.maxPages) {
      // Only what was read: the latest `updated` kept (or the window's start when none was kept).
      const watermark = p.edge !== null ? new Date(p.edge) : job.since;
      return { ...result(job, p.counts), ...(watermark ? { watermark } : {}) };
    }
  }
  return result(job, p.counts);
}

/** The window's search pages: Cloud's token pages, or Data Center's keyset (./searchDc.ts). */
export function windowPages(job: Job, q: IssueQuery, ask: SearchAsk, what = ''): AsyncGenerator<IssuePage> {
  return datacenter(job) ? dcWindowPages(job, q, ask, what) : cloudPages(job, issuesJql(q), ask, what);
}

/** The pages of a search by id (`id in (…)`). */
export function idPages(job: Job, jql: string, ask: SearchAsk, what: string): AsyncGenerator<IssuePage> {
  return datacenter(job) ? dcPositionPages(job, jql, ask, what) : cloudPages(job, jql, ask, what);
}

/** Cloud's `POST /rest/api/3/search/jql`, `nextPageToken` onward until `isLast`. */
async function* cloudPages(job: Job, jql: string, ask: SearchAsk, what = ''): AsyncGenerator<IssuePage> {
  const path = jiraApi(job.config).search;
  const trail = job.pages.trail(`POST ${path}${what}`);
  let token: string | undefined;
  for (let first = true; ; first = false) {
    trail.visit(token ?? null);
    const body = {
      jql,
      fields: ask.fields,
      maxResults: ask.maxResults,
      ...(ask.expand ? { expand: ask.expand } : {}),
      ...(token ? { nextPageToken: token } : {}),
    };
    const page = await projectChecked(job, first, () => job.jira.post<SearchPage>(path, body));
    token = page.nextPageToken;
    // The last page says `isLast: true`; without the flag, a page with no token is the last.
    const last = page.isLast === true || !token;
    yield { issues: page.issues, last };
    if (last) return;
  }
}

function datacenter(job: Job): boolean {
  return job.config.deployment === 'datacenter';
}

/** Rich text as plain text: ADF on Cloud, wiki markup on Data Center. */
function textOf(job: Job): TextOf {
  return datacenter(job) ? wikiToText : adfToText;
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
  const pages = idPages(job, idsJql(job.project, ids), searchAsk(job, wants), ' (by id)');
  for await (const page of pages) await writePage(job, page.issues, wants, categories, counts);
}

/** Writes the family of `issues` read some other way than a search page (as the unit's datasets ask). */
export async function writeIssues(job: Job, issues: JiraIssue[], counts: Record<string, number>): Promise<void> {
  const wants = wantsOf(job);
  const categories = wants.items ? await statusCategories(job) : new Map<string, string>();
  await writePage(job, issues, wants, categories, counts);
}

/** The fields (and changelog) a read of the family asks for, as the unit's datasets need. */
export function familyAsk(job: Job): SearchAsk {
  return searchAsk(job, wantsOf(job));
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
  const me = await job.jira.get<JiraUser>(jiraApi(job.config).myself);
  return typeof me.timeZone === 'string' && isTimeZone(me.timeZone) ? me.timeZone : 'UTC';
}

/** Each unit's status categories, read at most once however many reads of its family it makes. */
const categoriesOf = new WeakMap<Job, Promise<StatusCategories>>();

/** Status id → category key, for the changelog's transitions (one GET per unit; a failed read is not kept). */
function statusCategories(job: Job): Promise<StatusCategories> {
  let read = categoriesOf.get(job);
  if (!read) {
    read = readStatusCategories(job);
    categoriesOf.set(job, read);
    read.catch(() => categoriesOf.delete(job));
  }
  return read;
}

async function readStatusCategories(job: Job): Promise<StatusCategories> {
  const statuses = await job.jira.get<JiraStatus[]>(jiraApi(job.config).status);
  const map = new Map<string, string>();
  for (const s of statuses) if (s.statusCategory?.key) map.set(String(s.id), s.statusCategory.key);
  return map;
}

/** The fields (and changelog) a search asks for: what the unit's datasets need. */
function searchAsk(job: Job, wants: Wants): SearchAsk {
  const fields = wants.items ? [...ITEM_FIELDS, job.config.sprintField] : ['updated', 'project'];
  if (wants.comments) fields.push('comment');
  return { fields, maxResults: job.pageSize, ...(wants.items || wants.history ? { expand: 'changelog' } : {}) };
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
    const text = textOf(job);
    const rows = details.flatMap((d) => d.comments.map((c) => commentRow(job.scope, d.issue.id, c, text)));
    counts.work_item_comments! += await writeRows(job.ctx, 'work_item_comments', rows);
  }
  if (wants.history) {
    const rows = details.flatMap((d) => eventRows(job.scope, d.issue.id, d.histories));
    counts.work_item_events! += await writeRows(job.ctx, 'work_item_events', rows);
  }
}

/**
 * The issue's whole changelog: the embedded one when it is known to hold every entry, else every
 * page of `/rest/api/3/issue/{id}/changelog` (Data Center: the issue with `expand=changelog`). A
 * search embeds only the most recent entries and may leave `total` out: the embedded list is
 * complete when `total` says so, or, without `total`, when it is shorter than its `maxResults`;
 * anything else (a full page, or neither figure) is read whole.
 */
async function changelogOf(job: Job, issue: JiraIssue): Promise<JiraHistory[]> {
  const embedded = issue.changelog?.histories ?? [];
  if (embeddedComplete(issue.changelog, embedded.length)) return embedded;
  const path = jiraApi(job.config).changelog(issue.id);
  if (path === null) return expandedChangelog(job, issue.id, embedded);
  const all: JiraHistory[] = [];
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

/**
 * Data Center's whole changelog: `GET /rest/api/2/issue/{id}?expand=changelog` ("changelog: the
 * history of the issue", https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/issue-getIssue),
 * `embedded` when the issue is gone since the search.
 */
async function expandedChangelog(job: Job, issueId: string, embedded: JiraHistory[]): Promise<JiraHistory[]> {
  const path = jiraApi(job.config).issue(issueId);
  job.pages.trail(`GET ${path}?expand=changelog`).visit(null);
  try {
    const issue = await job.jira.get<JiraIssue>(path, {
      fields: 'updated',
      expand: 'changelog',
    });
    return issue.changelog?.histories ?? embedded;
  } catch (err) {
    if (err instanceof NonRetryableError && err.category === 'not_found') return embedded;
    throw err;
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
  const path = jiraApi(job.config).comments(issue.id);
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
