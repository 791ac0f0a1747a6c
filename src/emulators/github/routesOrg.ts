/** The organisation, its repositories and people, and a repository's labels. */
import type { LabelRecord, RepoRecord, UserRecord } from './model.js';
import { directed } from './orders.js';
import { enumParam } from './query.js';
import {
  renderCollaborator,
  renderFullRepository,
  renderLabel,
  renderMinimalRepository,
  renderUser,
} from './renderRepo.js';
import { notFound } from './responses.js';
import { renderPublicUser } from './routesUsers.js';
import { repoOf, type HandlerResult, type RequestContext, type Route } from './routeTypes.js';

const REPOS_DOCS = 'https://docs.github.com/rest/repos/repos';
const MEMBERS_DOCS = 'https://docs.github.com/rest/orgs/members';
const COLLAB_DOCS = 'https://docs.github.com/rest/collaborators/collaborators';

/** Whether the caller may see `repo` (public, or private and in the token's list). */
export function canSee(ctx: RequestContext, repo: RepoRecord): boolean {
  return !repo.private || ctx.privateRepos === null || ctx.privateRepos.has(repo.name);
}

function orgMatches(ctx: RequestContext): boolean {
  return (ctx.params.org ?? '').toLowerCase() === ctx.render.data.org.login.toLowerCase();
}

/** type all / public / private / forks / sources / member; sort created / updated / pushed / full_name. */
function listOrgRepos(ctx: RequestContext): HandlerResult {
  if (!orgMatches(ctx)) return notFound(`${REPOS_DOCS}#list-organization-repositories`);
  const type = enumParam(ctx.param, 'type', ['all', 'public', 'private', 'forks', 'sources', 'member'] as const, 'all');
  const sort = enumParam(ctx.param, 'sort', ['created', 'updated', 'pushed', 'full_name'] as const, 'created');
  const direction = enumParam(ctx.param, 'direction', ['asc', 'desc'] as const, sort === 'full_name' ? 'asc' : 'desc');
  const pushed = (r: RepoRecord) => r.commits.at(-1)?.date ?? r.createdAt;
  const key: Record<typeof sort, (a: RepoRecord, b: RepoRecord) => number> = {
    created: (a, b) => a.createdAt - b.createdAt,
    updated: (a, b) => pushed(a) - pushed(b),
    pushed: (a, b) => pushed(a) - pushed(b),
    full_name: (a, b) => a.name.localeCompare(b.name),
  };
  const visible = ctx.render.data.repos.filter(
    (r) =>
      canSee(ctx, r) &&
      (type === 'public' ? !r.private : type === 'private' ? r.private : type === 'forks' ? false : true),
  );
  const list = directed(
    visible.sort((a, b) => key[sort](a, b) || a.id - b.id),
    direction,
  );
  return { list, render: (r) => renderMinimalRepository(ctx.render, r as RepoRecord) };
}

function listMembers(ctx: RequestContext): HandlerResult {
  if (!orgMatches(ctx)) return notFound(`${MEMBERS_DOCS}#list-organization-members`);
  return { list: ctx.render.data.members, render: (u) => renderUser(ctx.render, u as UserRecord) };
}

function getRepo(ctx: RequestContext): HandlerResult {
  return { status: 200, body: renderFullRepository(ctx.render, repoOf(ctx)) };
}

function listAssignees(ctx: RequestContext): HandlerResult {
  return { list: repoOf(ctx).collaborators, render: (u) => renderUser(ctx.render, u as UserRecord) };
}

function listCollaborators(ctx: RequestContext): HandlerResult {
  const affiliation = enumParam(ctx.param, 'affiliation', ['outside', 'direct', 'all'] as const, 'all');
  const list = repoOf(ctx).collaborators.filter(
    (u) => affiliation === 'all' || (affiliation === 'outside') === (u.association === 'COLLABORATOR'),
  );
  return { list, render: (u) => renderCollaborator(ctx.render, u as UserRecord) };
}

function listLabels(ctx: RequestContext): HandlerResult {
  const repo = repoOf(ctx);
  return { list: repo.labels, render: (l) => renderLabel(ctx.render, repo, l as LabelRecord) };
}

/** `GET /user`: the token's user. */
function getViewer(ctx: RequestContext): HandlerResult {
  return { status: 200, body: renderPublicUser(ctx.render, ctx.viewer) };
}

const R = '/repos/{owner}/{repo}';

export const ORG_ROUTES: Route[] = [
  {
    path: '/user',
    docs: 'https://docs.github.com/rest/users/users#get-the-authenticated-user',
    permission: 'metadata=read',
    resource: 'User',
    handler: getViewer,
  },
  {
    path: '/orgs/{org}/repos',
    docs: `${REPOS_DOCS}#list-organization-repositories`,
    permission: 'metadata=read',
    resource: 'Repository',
    handler: listOrgRepos,
  },
  {
    path: '/orgs/{org}/members',
    docs: `${MEMBERS_DOCS}#list-organization-members`,
    permission: 'members=read',
    resource: 'OrganizationMember',
    handler: listMembers,
  },
  {
    path: R,
    docs: `${REPOS_DOCS}#get-a-repository`,
    permission: 'metadata=read',
    resource: 'Repository',
    handler: getRepo,
  },
  {
    path: `${R}/assignees`,
    docs: 'https://docs.github.com/rest/issues/assignees#list-assignees',
    permission: 'issues=read',
    resource: 'Assignee',
    handler: listAssignees,
  },
  {
    path: `${R}/collaborators`,
    docs: `${COLLAB_DOCS}#list-repository-collaborators`,
    permission: 'metadata=read',
    resource: 'Collaborator',
    handler: listCollaborators,
  },
  {
    path: `${R}/labels`,
    docs: 'https://docs.github.com/rest/issues/labels#list-labels-for-a-repository',
    permission: 'issues=read',
    resource: 'Label',
    handler: listLabels,
  },
];
