/**
 * The endpoints the emulator serves, each answering in Jira Cloud's shapes:
 * REST v3 `myself`, `status`, `project/search`, `project/{key}`, `user/assignable/search`,
 * `search/jql` (GET and POST; through the lagging search index), `issue/{id}` (current),
 * `issue/{id}/comment`, `issue/{id}/changelog`; Agile `board` and `board/{id}/sprint`; and the
 * routes of single comments (routesComments.ts: `comment/list`, `issue/{id}/comment/{id}`), of
 * single sprints and users (routesReference.ts: `sprint/{id}`, `user`). Errors are Jira's
 * `{errorMessages, errors}`.
 */
import type { Answer } from '../core/http.js';
import { JqlError, matchesUpdated, parseJql } from './jql.js';
import type { IssueRec, ProjectRec } from './model.js';
import * as render from './render.js';
import { intParam, issueByIdOrKey, jiraError, projectByKey, type RouteContext } from './routeContext.js';
import { commentRoute } from './routesComments.js';
import { isReferencePath, referenceRoute } from './routesReference.js';
import { assignablePage } from './users.js';

export type { Answer };

export { intParam, issueByIdOrKey, jiraError, projectByKey, type RouteContext } from './routeContext.js';

const ok = (body: unknown): Answer => ({ status: 200, body });

/** The answer for a request, or null when no route matches. */
export function route(ctx: RouteContext): Answer | null {
  const p = ctx.path.replace(/\/+$/, '');
  const get = ctx.method === 'GET';
  if (isReferencePath(p)) return referenceRoute(ctx);
  if (get && p === '/rest/api/3/myself') return ok(render.user(ctx.site, ctx.viewer));
  if (get && p === '/rest/api/3/status') return ok(ctx.site.data.statuses.map((s) => render.status(ctx.site, s)));
  if (get && p === '/rest/api/3/project/search') return projectSearch(ctx);
  if (get && p === '/rest/api/3/user/assignable/search') return assignable(ctx);
  if (p === '/rest/api/3/search/jql' && (get || ctx.method === 'POST')) return search(ctx);
  if (get && p === '/rest/agile/1.0/board') return boards(ctx);
  if (p === '/rest/api/3/search' || p === '/rest/api/2/search') {
    return jiraError(410, 'The requested API has been removed. Please migrate to the /rest/api/3/search/jql API.');
  }
  let m = /^\/rest\/api\/3\/project\/([^/]+)$/.exec(p);
  if (get && m) {
    const project = projectByKey(ctx, decodeURIComponent(m[1]!));
    if (!project) return jiraError(404, `No project could be found with key '${decodeURIComponent(m[1]!)}'.`);
    return ok(render.project(ctx.site, project));
  }
  m = /^\/rest\/api\/3\/issue\/([^/]+)$/.exec(p);
  if (get && m) return issueRead(ctx, decodeURIComponent(m[1]!));
  m = /^\/rest\/api\/3\/issue\/([^/]+)\/(comment|changelog)$/.exec(p);
  if (get && m) {
    const issue = issueByIdOrKey(ctx, decodeURIComponent(m[1]!));
    if (!issue) return jiraError(404, 'Issue does not exist or you do not have permission to see it.');
    return m[2] === 'comment' ? comments(ctx, issue) : changelog(ctx, issue);
  }
  m = /^\/rest\/agile\/1\.0\/board\/(\d+)\/sprint$/.exec(p);
  if (get && m) return sprints(ctx, Number(m[1]));
  return commentRoute(ctx);
}

function projectSearch(ctx: RouteContext): Answer {
  const keys = ctx.q.getAll('keys');
  const list = ctx.site.data.projects.filter((p) => keys.length === 0 || keys.includes(p.key));
  const startAt = intParam(ctx.q.get('startAt'), 0, 1e9);
  const maxResults = intParam(ctx.q.get('maxResults'), 50, 100);
  const values = list.slice(startAt, startAt + maxResults).map((p) => render.project(ctx.site, p));
  const isLast = startAt + maxResults >= list.length;
  const self = `${ctx.site.url}/rest/api/3/project/search?startAt=${startAt}&maxResults=${maxResults}`;
  return ok({
    self,
    ...(isLast ? {} : { nextPage: self.replace(`startAt=${startAt}`, `startAt=${startAt + maxResults}`) }),
    maxResults,
    startAt,
    total: list.length,
    isLast,
    values,
  });
}

function assignable(ctx: RouteContext): Answer {
  const key = ctx.q.get('project') ?? ctx.q.get('projectKeys');
  if (!key) return jiraError(400, 'The project key or issue key must be specified.');
  if (!projectByKey(ctx, key)) return jiraError(404, `No project could be found with key '${key}'.`);
  const startAt = intParam(ctx.q.get('startAt'), 0, 1e9);
  const maxResults = intParam(ctx.q.get('maxResults'), 50, 1000);
  return ok(assignablePage(ctx.site.data, startAt, maxResults).map((u) => render.user(ctx.site, u)));
}

interface PageToken {
  o: number;
  j: string;
}

function encodeToken(t: PageToken): string {
  return Buffer.from(JSON.stringify(t)).toString('base64url');
}

function decodeToken(raw: string): PageToken | null {
  try {
    const t = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as PageToken;
    return Number.isInteger(t.o) && t.o >= 0 && typeof t.j === 'string' ? t : null;
  } catch {
    return null;
  }
}

export function listParam(raw: unknown): string[] {
  if (Array.isArray(raw)) return raw.filter((x): x is string => typeof x === 'string');
  if (typeof raw === 'string') return raw.split(',').map((s) => s.trim());
  return [];
}

/**
 * A search's parameters, from a POST's body or a GET's query: `page` is the value of `pageKey`
 * (Cloud's `nextPageToken`, Data Center's `startAt`).
 */
export function searchParams(ctx: RouteContext, pageKey: 'nextPageToken' | 'startAt') {
  if (ctx.method === 'POST') {
    const b = ctx.body ?? {};
    return { jql: b.jql, page: b[pageKey], max: b.maxResults, fields: listParam(b.fields), expand: b.expand };
  }
  const q = ctx.q;
  return {
    jql: q.get('jql'),
    page: q.get(pageKey) ?? undefined,
    max: q.get('maxResults') ?? undefined,
    fields: q.getAll('fields').flatMap(listParam),
    expand: q.get('expand') ?? undefined,
  };
}

/**
 * `/rest/api/3/search/jql`: issues matching the JQL (the project's, within the `updated` bounds,
 * among the ids of `id in (…)` when given), `maxResults` a page, `nextPageToken` onward.
 */
function search(ctx: RouteContext): Answer {
  const s = searchParams(ctx, 'nextPageToken');
  if (typeof s.jql !== 'string' || s.jql.trim() === '') {
    return jiraError(400, 'Unbounded JQL queries are not allowed here. Please add a search restriction to your query.');
  }
  let parsed;
  try {
    parsed = parseJql(s.jql, ctx.viewer.timeZone);
  } catch (err) {
    if (err instanceof JqlError) return jiraError(400, err.message);
    throw err;
  }
  const project = projectByKey(ctx, parsed.project);
  if (!project) return jiraError(400, `The value '${parsed.project}' does not exist for the field 'project'.`);
  const raw = s.page === undefined || s.page === null ? null : s.page;
  const token = raw === null ? { o: 0, j: s.jql } : decodeToken(typeof raw === 'string' ? raw : '');
  if (!token || token.j !== s.jql) return jiraError(400, 'The provided next page token is invalid or expired.');
  const max = Math.max(1, intParam(s.max, 50, 100));
  const ids = parsed.ids === null ? null : new Set(parsed.ids);
  let list = indexed(ctx, project).filter(
    (x) => matchesUpdated(parsed, x.updated) && (ids === null || ids.has(x.issue.id)),
  );
  if (parsed.order === 'DESC') list = list.reverse();
  const page = list.slice(token.o, token.o + max);
  const wanted = fieldFilter(s.fields);
  const changelog = typeof s.expand === 'string' && s.expand.split(',').includes('changelog');
  const isLast = token.o + max >= list.length;
  return ok({
    issues: page.map((x) => render.issue(ctx.site, x.issue, wanted, changelog, ctx.sprintField)),
    ...(isLast ? {} : { nextPageToken: encodeToken({ o: token.o + max, j: s.jql }) }),
    isLast,
  });
}

/** The project's issues as search sees them now, by (indexed `updated`, id); those not indexed yet left out. */
export function indexed(ctx: RouteContext, project: ProjectRec): { issue: IssueRec; updated: number }[] {
  const out: { issue: IssueRec; updated: number }[] = [];
  for (const issue of project.issues) {
    const updated = ctx.index.indexedUpdated(issue, ctx.now);
    if (updated !== null) out.push({ issue, updated });
  }
  return out.sort((a, b) => a.updated - b.updated || Number(a.issue.id) - Number(b.issue.id));
}

/** `GET /rest/api/3/issue/{idOrKey}`: the issue as it is now (not through the search index). */
function issueRead(ctx: RouteContext, idOrKey: string): Answer {
  const issue = issueByIdOrKey(ctx, idOrKey);
  if (!issue) return jiraError(404, 'Issue does not exist or you do not have permission to see it.');
  const fields = ctx.q.getAll('fields').flatMap(listParam);
  const wanted = fieldFilter(fields.length === 0 ? ['*all'] : fields);
  const changelog = (ctx.q.get('expand') ?? '').split(',').includes('changelog');
  return ok(render.issue(ctx.site, issue, wanted, changelog, ctx.sprintField));
}

/** Which fields to render: none by default (ids and keys only), `*all`/`*navigable`, or those named. */
export function fieldFilter(fields: string[]): (f: string) => boolean {
  if (fields.includes('*all') || fields.includes('*navigable')) {
    const minus = new Set(fields.filter((f) => f.startsWith('-')).map((f) => f.slice(1)));
    return (f) => !minus.has(f);
  }
  const set = new Set(fields);
  return (f) => set.has(f);
}

function comments(ctx: RouteContext, issue: IssueRec): Answer {
  const startAt = intParam(ctx.q.get('startAt'), 0, 1e9);
  const maxResults = intParam(ctx.q.get('maxResults'), 5000, 5000);
  return ok({
    startAt,
    maxResults,
    total: issue.comments.length,
    comments: issue.comments.slice(startAt, startAt + maxResults).map((c) => render.comment(ctx.site, issue, c)),
  });
}

function changelog(ctx: RouteContext, issue: IssueRec): Answer {
  const startAt = intParam(ctx.q.get('startAt'), 0, 1e9);
  const maxResults = intParam(ctx.q.get('maxResults'), 100, 100);
  const isLast = startAt + maxResults >= issue.histories.length;
  const self = `${ctx.site.url}/rest/api/3/issue/${issue.id}/changelog?maxResults=${maxResults}&startAt=${startAt}`;
  return ok({
    self,
    ...(isLast
      ? {}
      : {
          nextPage: `${ctx.site.url}/rest/api/3/issue/${issue.id}/changelog?maxResults=${maxResults}&startAt=${
            startAt + maxResults
          }`,
        }),
    maxResults,
    startAt,
    total: issue.histories.length,
    isLast,
    values: issue.histories.slice(startAt, startAt + maxResults).map((h) => render.history(ctx.site, h)),
  });
}

function agilePage(ctx: RouteContext, list: readonly unknown[], withTotal: boolean): Answer {
  const startAt = intParam(ctx.q.get('startAt'), 0, 1e9);
  const maxResults = intParam(ctx.q.get('maxResults'), 50, 50);
  const values = list.slice(startAt, startAt + maxResults);
  return ok({
    maxResults,
    startAt,
    ...(withTotal ? { total: list.length } : {}),
    isLast: startAt + values.length >= list.length,
    values,
  });
}

function boards(ctx: RouteContext): Answer {
  const key = ctx.q.get('projectKeyOrId');
  if (key !== null && !projectByKey(ctx, key)) return jiraError(400, `No project could be found with key '${key}'.`);
  const project = key === null ? null : projectByKey(ctx, key)!;
  const list = ctx.site.data.boards.filter((b) => project === null || b.projectKey === project.key);
  return agilePage(
    ctx,
    list.map((b) => render.board(ctx.site, b)),
    true,
  );
}

function sprints(ctx: RouteContext, boardId: number): Answer {
  const b = ctx.site.data.boards.find((x) => x.id === boardId);
  if (!b) return jiraError(404, `Board does not exist or you do not have permission to see it.`);
  if (!b.sprints) return jiraError(400, 'The board does not support sprints');
  const states = ctx.q.get('state')?.split(',');
  const list = ctx.site.data.sprints.filter((s) => s.boardId === boardId && (!states || states.includes(s.state)));
  return agilePage(
    ctx,
    list.map((s) => render.sprint(ctx.site, s)),
    false,
  );
}
