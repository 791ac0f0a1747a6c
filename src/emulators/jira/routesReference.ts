/**
 * The emulator's routes of single sprints and users (their deletions: referenceDeletions.ts):
 * - `GET /rest/agile/1.0/sprint/{sprintId}`: the sprint, or 404 ("Returned if the sprint does not
 *   exist or the user does not have permission to view it");
 * - `DELETE /rest/agile/1.0/sprint/{sprintId}`: 204, the sprint deleted, or 404
 *   (https://developer.atlassian.com/cloud/jira/software/rest/api-group-sprint/);
 * - `GET /rest/api/3/user?accountId=…`: the user with its `groups` and `applicationRoles` (sizes,
 *   not expanded), or 404 ("Returned if the user is not found"); 400 without `accountId`;
 * - `DELETE /rest/api/3/user?accountId=…`: 204, the user deleted from the site, or 404
 *   (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-users/);
 * - Data Center: `GET /rest/api/2/user?key=…` or `?username=…`: the user in REST v2's shape, or 404
 *   (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/user-getUser).
 * The Agile routes serve both flavors (the Data Center flavor hands its Agile paths to routes.ts).
 */
import type { Answer } from '../core/http.js';
import type { UserRec } from './model.js';
import { deleteSprint, deleteUser, findSprint, findUser } from './referenceDeletions.js';
import * as render from './render.js';
import * as dc from './renderDc.js';
import { jiraError, type RouteContext } from './routeContext.js';

const SPRINT = /^\/rest\/agile\/1\.0\/sprint\/([^/]+)$/;
const USER = '/rest/api/3/user';
/** Data Center's user resource. */
export const DC_USER = '/rest/api/2/user';

/** Whether `path` (no trailing slash) is one of this file's Cloud routes. */
export function isReferencePath(path: string): boolean {
  return path === USER || SPRINT.test(path);
}

/** The answer of a Cloud sprint or user route (isReferencePath). */
export function referenceRoute(ctx: RouteContext): Answer {
  const p = ctx.path.replace(/\/+$/, '');
  const sprint = SPRINT.exec(p);
  return sprint ? sprintRoute(ctx, decodeURIComponent(sprint[1]!)) : userRoute(ctx);
}

function sprintRoute(ctx: RouteContext, raw: string): Answer {
  if (!/^[0-9]{1,15}$/.test(raw)) return jiraError(400, 'The sprint id must be a number.');
  const sprint = findSprint(ctx.site.data, Number(raw));
  if (!sprint) return jiraError(404, 'The requested sprint cannot be viewed: it does not exist or you may not see it.');
  if (ctx.method === 'GET') return { status: 200, body: render.sprint(ctx.site, sprint) };
  if (ctx.method !== 'DELETE') return jiraError(405, 'Method Not Allowed');
  deleteSprint(ctx.site.data, sprint.id);
  return { status: 204, body: '' };
}

const NO_USER = 'Specified user does not exist or you do not have required permissions';

function userRoute(ctx: RouteContext): Answer {
  const accountId = ctx.q.get('accountId');
  if (!accountId) return jiraError(400, 'The accountId query parameter needs to be provided.');
  const user = findUser(ctx.site.data, accountId);
  if (!user) return jiraError(404, NO_USER);
  if (ctx.method === 'GET') return { status: 200, body: cloudUser(ctx, user) };
  if (ctx.method !== 'DELETE') return jiraError(405, 'Method Not Allowed');
  deleteUser(ctx.site.data, user.accountId);
  return { status: 204, body: '' };
}

/** Cloud's `User`: the user with the sizes of its groups and application roles. */
function cloudUser(ctx: RouteContext, user: UserRec): Record<string, unknown> {
  return {
    ...render.user(ctx.site, user),
    groups: { size: 1, items: [] },
    applicationRoles: { size: 1, items: [] },
    expand: 'groups,applicationRoles',
  };
}

/** Data Center's `GET /rest/api/2/user` by `key` or `username`. */
export function dcUserRoute(ctx: RouteContext): Answer {
  if (ctx.method !== 'GET') return jiraError(405, 'Method Not Allowed');
  const key = ctx.q.get('key');
  const name = ctx.q.get('username');
  if (!key && !name) return jiraError(400, 'Either the username or the key query parameters need to be provided');
  const rec = ctx.site.data.users.find((u) => (key ? u.key === key : u.name === name));
  const user = rec && findUser(ctx.site.data, rec.accountId);
  if (!user) {
    const missing = key ? `The user with the key '${key}'` : `The user named '${name ?? ''}'`;
    return jiraError(404, `${missing} does not exist`);
  }
  return { status: 200, body: dc.user(ctx.site, user) };
}
