/**
 * Accounts read one at a time: `GET /user/{account_id}` ("Get a user using their ID", the REST
 * description's `users/get-by-id`: "their durable user ID instead of their login, which can change
 * over time") and `GET /users/{username}` ("Get a user", `users/get-by-username`). Both answer the
 * `public-user` shape, and 404 (GitHub's basic-error, `Not Found`) for an account that is not there
 * — deleted (accounts.ts), never one, or not a number where an id is asked for.
 */
import type { components } from '@octokit/openapi-types';
import { accountById, accountByLogin } from './accounts.js';
import { DAY_MS, isoSeconds, type UserRecord } from './model.js';
import { renderUser, type RenderContext } from './renderRepo.js';
import { notFound } from './responses.js';
import type { HandlerResult, RequestContext, Route } from './routeTypes.js';

const USERS_DOCS = 'https://docs.github.com/rest/users/users';
const BY_ID_DOCS = `${USERS_DOCS}#get-a-user-using-their-id`;
const BY_LOGIN_DOCS = `${USERS_DOCS}#get-a-user`;

/** An account as GitHub's users endpoints answer it (members hold no public repositories or followers here). */
export function renderPublicUser(ctx: RenderContext, u: UserRecord): components['schemas']['public-user'] {
  return {
    ...renderUser(ctx, u),
    name: u.login,
    company: null,
    blog: '',
    location: null,
    email: null,
    hireable: null,
    bio: null,
    twitter_username: null,
    public_repos: 0,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: isoSeconds(ctx.data.start - 365 * DAY_MS),
    updated_at: isoSeconds(ctx.data.start),
  };
}

function getUserById(ctx: RequestContext): HandlerResult {
  const raw = ctx.params.account_id ?? '';
  const user = /^\d+$/.test(raw) ? accountById(ctx.render.data, Number(raw)) : undefined;
  return user ? { status: 200, body: renderPublicUser(ctx.render, user) } : notFound(BY_ID_DOCS);
}

function getUserByLogin(ctx: RequestContext): HandlerResult {
  const user = accountByLogin(ctx.render.data, ctx.params.username ?? '');
  return user ? { status: 200, body: renderPublicUser(ctx.render, user) } : notFound(BY_LOGIN_DOCS);
}

/** Public account data: fine-grained tokens need no permission for it. */
const PERMISSIONLESS = 'allows_permissionless_access=true';

export const USER_ROUTES: Route[] = [
  { path: '/user/{account_id}', docs: BY_ID_DOCS, permission: PERMISSIONLESS, resource: 'User', handler: getUserById },
  {
    path: '/users/{username}',
    docs: BY_LOGIN_DOCS,
    permission: PERMISSIONLESS,
    resource: 'User',
    handler: getUserByLogin,
  },
];
