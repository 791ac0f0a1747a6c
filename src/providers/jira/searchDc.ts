/**
 * Jira Data Center / Server's issue search: `GET /rest/api/2/search` with `jql`, `startAt`,
 * `maxResults`, `fields` and `expand`, answering `{startAt, maxResults, total, issues}`
 * (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/search-search). It pages by
 * position only: there is no `nextPageToken`.
 *
 * A window is read as a keyset, not by `startAt` alone. The search is ordered `updated ASC, key ASC`,
 * and an issue edited while the window is read moves to its end: every issue after its old place
 * slides back one, and a plain `startAt + maxResults` would step over the one that slid back past the
 * page boundary. So each next page asks again from the `updated` the last page reached (`edgeOf`; JQL
 * reads whole minutes, so from that minute), at `startAt` 0, and leaves out the issues already given at the same
 * `updated` (an issue edited meanwhile comes again with its new `updated`: a newer version, written
 * again). What lies before the cursor's minute no longer counts, so no edit there can shift a page.
 * Only when a whole page falls within the cursor's minute does the query stay the same; then `startAt`
 * moves on by the page less an overlap of a quarter page (re-read, and left out as given), so up to
 * that many issues may leave the minute between two pages without one being missed. The search index
 * may also lag a write (a clustered node's index catches up with the others': https://confluence.
 * atlassian.com/adminjiraserver/jira-index-management-938847753.html), which the provider's incremental
 * overlap covers as on Cloud.
 */
import { NonRetryableError } from '../../errors.js';
import { jiraApi } from './api.js';
import { issuesJql, type IssueQuery } from './jql.js';
import type { JiraIssue } from './mapping.js';
import { parseJiraTime } from './timeZone.js';
import type { Job } from './units.js';

/** A search answer of Data Center (REST v2). */
interface DcSearchAnswer {
  startAt?: number;
  maxResults?: number;
  total?: number;
  issues: JiraIssue[];
}

/** What a search asks for besides its JQL. */
export interface SearchAsk {
  fields: readonly string[];
  /** `changelog` or nothing. */
  expand?: string;
  maxResults: number;
}

/** One page read: the issues not given before, and whether the search has no more. */
export interface IssuePage {
  issues: JiraIssue[];
  last: boolean;
}

/** Keys of issues given are dropped this long before the cursor (past any clock-change margin of the JQL). */
const SEEN_HORIZON_MS = 3 * 3_600_000;

/** The window's issues (`q`) in `updated` order, a page at a time, as the module comment says. */
export async function* dcWindowPages(job: Job, q: IssueQuery, ask: SearchAsk, what = ''): AsyncGenerator<IssuePage> {
  const api = jiraApi(job.config);
  const trail = job.pages.trail(`GET ${api.search}${what}`);
  const given = new Map<string, number>();
  let cursor = q.since?.getTime() ?? Number.NEGATIVE_INFINITY;
  let jql = issuesJql({ ...q, byKey: true });
  let startAt = 0;
  const overlap = Math.floor(ask.maxResults / 4);
  for (let first = true; ; first = false) {
    trail.visit(`${startAt} ${jql}`);
    const page = await projectChecked(job, first, () => dcSearch(job, jql, startAt, ask));
    const issues = page.issues.filter((i) => fresh(given, i));
    const last = lastPage(page, startAt, ask.maxResults);
    yield { issues, last };
    if (last) return;
    const top = Math.max(cursor, edgeOf(page.issues, overlap + 1));
    const next = issuesJql({ ...q, since: Number.isFinite(top) ? new Date(top) : q.since, byKey: true });
    if (next === jql) {
      startAt += Math.max(1, page.issues.length - overlap);
      continue;
    }
    cursor = top;
    jql = next;
    startAt = 0;
    for (const [k, ms] of given) if (ms < cursor - SEEN_HORIZON_MS) given.delete(k);
  }
}

/**
 * Where the next page may start: the earliest `updated` among the page's last `tail` issues. Search
 * places an issue by the `updated` its index holds, and the answer shows the issue as it is now: one
 * edited since it was indexed shows a later `updated` than its place. Taking the latest of the page
 * could then leap past issues not read yet; the earliest of its tail stays at or before the place of
 * the page's last issue unless every issue of the tail was edited so.
 */
function edgeOf(issues: readonly JiraIssue[], tail: number): number {
  const times = issues
    .slice(-tail)
    .map((i) => parseJiraTime(i.fields?.updated))
    .filter(Number.isFinite);
  return times.length === 0 ? Number.NEGATIVE_INFINITY : Math.min(...times);
}

/**
 * Every page of a search by position (an `id in (…)` search: its set of issues does not change as
 * they are edited, only their order), `startAt` onward.
 */
export async function* dcPositionPages(job: Job, jql: string, ask: SearchAsk, what = ''): AsyncGenerator<IssuePage> {
  const trail = job.pages.trail(`GET ${jiraApi(job.config).search}${what}`);
  const given = new Map<string, number>();
  for (let startAt = 0, first = true; ; first = false) {
    trail.visit(startAt);
    const page = await projectChecked(job, first, () => dcSearch(job, jql, startAt, ask));
    const last = lastPage(page, startAt, ask.maxResults);
    yield { issues: page.issues.filter((i) => fresh(given, i)), last };
    if (last) return;
    startAt += page.issues.length;
  }
}

function dcSearch(job: Job, jql: string, startAt: number, ask: SearchAsk): Promise<DcSearchAnswer> {
  return job.jira.get<DcSearchAnswer>(jiraApi(job.config).search, {
    jql,
    startAt,
    maxResults: ask.maxResults,
    fields: ask.fields.join(','),
    ...(ask.expand ? { expand: ask.expand } : {}),
  });
}

/** Whether the issue (at its `updated`) was not given before; records it. */
function fresh(given: Map<string, number>, i: JiraIssue): boolean {
  const key = `${i.id}@${i.fields?.updated ?? ''}`;
  if (given.has(key)) return false;
  given.set(key, parseJiraTime(i.fields?.updated) || 0);
  return true;
}

/** The last page: empty, shorter than the page size asked or granted, or reaching `total`. */
function lastPage(page: DcSearchAnswer, startAt: number, asked: number): boolean {
  const n = page.issues.length;
  if (n === 0 || n < Math.min(asked, page.maxResults ?? asked)) return true;
  return page.total !== undefined && (page.startAt ?? startAt) + n >= page.total;
}

/**
 * Runs a search; when its first page fails as a provider error (Jira answers a search naming an
 * unknown project with 400), asks for the project, so a missing one ends the unit `not_found`.
 */
export async function projectChecked<T>(job: Job, first: boolean, search: () => Promise<T>): Promise<T> {
  try {
    return await search();
  } catch (err) {
    if (first && err instanceof NonRetryableError && err.category === 'provider_error') {
      await job.jira.get(jiraApi(job.config).project(job.project));
    }
    throw err;
  }
}
