/**
 * The endpoints of the `datacenter` flavor, in Jira Data Center's REST v2 shapes (renderDc.ts;
 * https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/): `myself`, `status`,
 * `project/{key}`, `user/assignable/search` (the same short pages and 1,000-user cap as Cloud's),
 * `search` (GET and POST, paged by `startAt`, answering `{expand, startAt, maxResults, total,
 * issues}` through the lagging search index; `maxResults` at most 1,000, Data Center's
 * `jira.search.views.default.max`), `issue/{id}` (current; `expand=changelog` gives the whole
 * changelog), `issue/{id}/comment` and `user` by key or name (routesReference.ts). There is no
 * `issue/{id}/changelog` (Cloud's only). Anything under `/rest/api/3/` answers 404, as a Data Center
 * site has no REST v3; the Agile API is Cloud's (routes.ts), its links as they are.
 */
import type { Answer } from '../core/http.js';
import { JqlError, matchesUpdated, parseJql } from './jql.js';
import type { IssueRec } from './model.js';
import * as dc from './renderDc.js';
import {
  fieldFilter,
  indexed,
  intParam,
  issueByIdOrKey,
  jiraError,
  listParam,
  projectByKey,
  route,
  searchParams,
  type RouteContext,
} from './routes.js';
import { dcUserRoute, DC_USER } from './routesReference.js';
import { assignablePage } from './users.js';

const ok = (body: unknown): Answer => ({ status: 200, body });

/** The answer for a request to the Data Center flavor, or null when no route matches. */
export function routeDc(ctx: RouteContext): Answer | null {
  const p = ctx.path.replace(/\/+$/, '');
  const get = ctx.method === 'GET';
  if (p.startsWith('/rest/agile/')) return route(ctx);
  if (!p.startsWith('/rest/api/2/')) return null;
  if (get && p === '/rest/api/2/myself') return ok(dc.user(ctx.site, ctx.viewer));
  if (get && p === '/rest/api/2/status') return ok(ctx.site.data.statuses.map((s) => dc.status(ctx.site, s)));
  if (get && p === '/rest/api/2/user/assignable/search') return assignable(ctx);
  if (p === DC_USER) return dcUserRoute(ctx);
  if (p === '/rest/api/2/search' && (get || ctx.method === 'POST')) return search(ctx);
  let m = /^\/rest\/api\/2\/project\/([^/]+)$/.exec(p);
  if (get && m) {
    const key = decodeURIComponent(m[1]!);
    const project = projectByKey(ctx, key);
    return project ? ok(dc.project(ctx.site, project)) : jiraError(404, `No project could be found with key '${key}'.`);
  }
  m = /^\/rest\/api\/2\/issue\/([^/]+)(\/comment)?$/.exec(p);
  if (get && m) {
    const issue = issueByIdOrKey(ctx, decodeURIComponent(m[1]!));
    if (!issue) return jiraError(404, 'Issue Does Not Exist');
    return m[2] ? comments(ctx, issue) : issueRead(ctx, issue);
  }
  return null;
}

function assignable(ctx: RouteContext): Answer {
  const key = ctx.q.get('project');
  if (!key && !ctx.q.get('issueKey')) return jiraError(400, 'The project key or issue key must be specified.');
  if (key && !projectByKey(ctx, key)) return jiraError(404, `No project could be found with key '${key}'.`);
  const startAt = intParam(ctx.q.get('startAt'), 0, 1e9);
  const maxResults = intParam(ctx.q.get('maxResults'), 50, 1000);
  return ok(assignablePage(ctx.site.data, startAt, maxResults).map((u) => dc.user(ctx.site, u)));
}

/** `/rest/api/2/search`: the JQL's issues as the index sees them, `maxResults` from `startAt`. */
function search(ctx: RouteContext): Answer {
  const s = searchParams(ctx, 'startAt');
  let parsed;
  try {
    parsed = parseJql(typeof s.jql === 'string' ? s.jql : '', ctx.viewer.timeZone);
  } catch (err) {
    if (err instanceof JqlError) return jiraError(400, err.message);
    throw err;
  }
  const project = projectByKey(ctx, parsed.project);
  if (!project) return jiraError(400, `The value '${parsed.project}' does not exist for the field 'project'.`);
  const startAt = intParam(s.page, 0, 1e9);
  const maxResults = intParam(s.max, 50, 1000);
  const ids = parsed.ids === null ? null : new Set(parsed.ids);
  let list = indexed(ctx, project).filter(
    (x) => matchesUpdated(parsed, x.updated) && (ids === null || ids.has(x.issue.id)),
  );
  if (parsed.order === 'DESC') list = list.reverse();
  // Fields default to the navigable ones, as Data Center's search does.
  const wanted = fieldFilter(s.fields.length === 0 ? ['*navigable'] : s.fields);
  const changelog = typeof s.expand === 'string' && s.expand.split(',').includes('changelog');
  return ok({
    expand: 'schema,names',
    startAt,
    maxResults,
    total: list.length,
    issues: list
      .slice(startAt, startAt + maxResults)
      .map((x) => dc.issue(ctx.site, x.issue, wanted, changelog, ctx.sprintField)),
  });
}

function issueRead(ctx: RouteContext, issue: IssueRec): Answer {
  const fields = ctx.q.getAll('fields').flatMap(listParam);
  const wanted = fieldFilter(fields.length === 0 ? ['*all'] : fields);
  const changelog = (ctx.q.get('expand') ?? '').split(',').includes('changelog');
  return ok(dc.issue(ctx.site, issue, wanted, changelog, ctx.sprintField));
}

function comments(ctx: RouteContext, issue: IssueRec): Answer {
  const startAt = intParam(ctx.q.get('startAt'), 0, 1e9);
  const maxResults = intParam(ctx.q.get('maxResults'), 5000, 5000);
  return ok({
    startAt,
    maxResults,
    total: issue.comments.length,
    comments: issue.comments.slice(startAt, startAt + maxResults).map((c) => dc.comment(ctx.site, issue, c)),
  });
}
