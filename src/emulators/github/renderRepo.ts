/**
 * REST shapes for users, repositories, labels and milestones, typed by GitHub's published OpenAPI
 * description (@octokit/openapi-types), so a missing required field is a compile error.
 */
import type { components } from '@octokit/openapi-types';
import {
  isoSeconds,
  itemState,
  type LabelRecord,
  type MilestoneRecord,
  type OrgData,
  type RepoRecord,
  type UserRecord,
} from './model.js';
import { nodeId } from '../core/random.js';

type Schemas = components['schemas'];

/** Where rendered URLs point: the emulator's API root and a stand-in for github.com. */
export interface RenderContext {
  api: string;
  html: string;
  data: OrgData;
}

export function renderUser(ctx: RenderContext, u: UserRecord): Schemas['simple-user'] {
  const url = `${ctx.api}/users/${u.login}`;
  return {
    login: u.login,
    id: u.id,
    node_id: nodeId(u.type, u.id),
    avatar_url: `https://avatars.githubusercontent.com/u/${u.id}?v=4`,
    gravatar_id: '',
    url,
    html_url: `${ctx.html}/${u.login}`,
    followers_url: `${url}/followers`,
    following_url: `${url}/following{/other_user}`,
    gists_url: `${url}/gists{/gist_id}`,
    starred_url: `${url}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/subscriptions`,
    organizations_url: `${url}/orgs`,
    repos_url: `${url}/repos`,
    events_url: `${url}/events{/privacy}`,
    received_events_url: `${url}/received_events`,
    type: u.type,
    user_view_type: 'public',
    site_admin: false,
  };
}

const ROLE: Record<UserRecord['association'], string> = {
  OWNER: 'admin',
  MEMBER: 'write',
  COLLABORATOR: 'write',
  CONTRIBUTOR: 'read',
  NONE: 'read',
};

export function renderCollaborator(ctx: RenderContext, u: UserRecord): Schemas['collaborator'] {
  const admin = u.association === 'OWNER';
  return {
    ...renderUser(ctx, u),
    permissions: { admin, maintain: admin, push: true, triage: true, pull: true },
    role_name: ROLE[u.association],
  };
}

export function renderLabel(ctx: RenderContext, repo: RepoRecord, l: LabelRecord): Schemas['label'] {
  return {
    id: l.id,
    node_id: nodeId('Label', l.id),
    url: `${repoUrl(ctx, repo)}/labels/${encodeURIComponent(l.name)}`,
    name: l.name,
    color: l.color,
    default: l.default,
    description: l.description,
  };
}

interface MilestoneStats {
  open: number;
  closed: number;
  updated: number;
}

const milestoneCache = new WeakMap<RepoRecord, { version: number; stats: Map<MilestoneRecord, MilestoneStats> }>();

/** Open / closed counts per milestone, computed once per repository version. */
function milestoneStats(repo: RepoRecord, m: MilestoneRecord): MilestoneStats {
  let cached = milestoneCache.get(repo);
  if (!cached || cached.version !== repo.version) {
    const stats = new Map<MilestoneRecord, MilestoneStats>();
    for (const ms of repo.milestones) stats.set(ms, { open: 0, closed: 0, updated: ms.createdAt });
    for (const item of repo.items) {
      const s = item.milestone ? stats.get(item.milestone) : undefined;
      if (!s) continue;
      if (itemState(item) === 'open') s.open++;
      else s.closed++;
      s.updated = Math.max(s.updated, item.createdAt);
    }
    cached = { version: repo.version, stats };
    milestoneCache.set(repo, cached);
  }
  return cached.stats.get(m) ?? { open: 0, closed: 0, updated: m.createdAt };
}

export function renderMilestone(ctx: RenderContext, repo: RepoRecord, m: MilestoneRecord): Schemas['milestone'] {
  const { open, closed, updated } = milestoneStats(repo, m);
  const url = `${repoUrl(ctx, repo)}/milestones/${m.number}`;
  return {
    url,
    html_url: `${repoHtml(ctx, repo)}/milestone/${m.number}`,
    labels_url: `${url}/labels`,
    id: m.id,
    node_id: nodeId('Milestone', m.id),
    number: m.number,
    title: m.title,
    description: m.description,
    creator: renderUser(ctx, m.creator),
    open_issues: open,
    closed_issues: closed,
    state: 'open',
    created_at: isoSeconds(m.createdAt),
    updated_at: isoSeconds(updated),
    due_on: m.dueOn === null ? null : isoSeconds(m.dueOn),
    closed_at: null,
  };
}

export function repoUrl(ctx: RenderContext, repo: RepoRecord): string {
  return `${ctx.api}/repos/${ctx.data.org.login}/${repo.name}`;
}

export function repoHtml(ctx: RenderContext, repo: RepoRecord): string {
  return `${ctx.html}/${ctx.data.org.login}/${repo.name}`;
}

function repoUrls(ctx: RenderContext, repo: RepoRecord) {
  const u = repoUrl(ctx, repo);
  return {
    forks_url: `${u}/forks`,
    keys_url: `${u}/keys{/key_id}`,
    collaborators_url: `${u}/collaborators{/collaborator}`,
    teams_url: `${u}/teams`,
    hooks_url: `${u}/hooks`,
    issue_events_url: `${u}/issues/events{/number}`,
    events_url: `${u}/events`,
    assignees_url: `${u}/assignees{/user}`,
    branches_url: `${u}/branches{/branch}`,
    tags_url: `${u}/tags`,
    blobs_url: `${u}/git/blobs{/sha}`,
    git_tags_url: `${u}/git/tags{/sha}`,
    git_refs_url: `${u}/git/refs{/sha}`,
    trees_url: `${u}/git/trees{/sha}`,
    statuses_url: `${u}/statuses/{sha}`,
    languages_url: `${u}/languages`,
    stargazers_url: `${u}/stargazers`,
    contributors_url: `${u}/contributors`,
    subscribers_url: `${u}/subscribers`,
    subscription_url: `${u}/subscription`,
    commits_url: `${u}/commits{/sha}`,
    git_commits_url: `${u}/git/commits{/sha}`,
    comments_url: `${u}/comments{/number}`,
    issue_comment_url: `${u}/issues/comments{/number}`,
    contents_url: `${u}/contents/{+path}`,
    compare_url: `${u}/compare/{base}...{head}`,
    merges_url: `${u}/merges`,
    archive_url: `${u}/{archive_format}{/ref}`,
    downloads_url: `${u}/downloads`,
    issues_url: `${u}/issues{/number}`,
    pulls_url: `${u}/pulls{/number}`,
    milestones_url: `${u}/milestones{/number}`,
    notifications_url: `${u}/notifications{?since,all,participating}`,
    labels_url: `${u}/labels{/name}`,
    releases_url: `${u}/releases{/id}`,
    deployments_url: `${u}/deployments`,
  };
}

const repositoryCache = new WeakMap<RepoRecord, { version: number; value: Schemas['repository'] }>();

/** The `repository` shape (list entries, pull request head/base), built once per repository version. */
export function renderRepository(ctx: RenderContext, repo: RepoRecord): Schemas['repository'] {
  const cached = repositoryCache.get(repo);
  if (cached && cached.version === repo.version) return cached.value;
  const value = buildRepository(ctx, repo);
  repositoryCache.set(repo, { version: repo.version, value });
  return value;
}

function buildRepository(ctx: RenderContext, repo: RepoRecord): Schemas['repository'] {
  const openCount = repo.items.reduce((n, i) => n + (i.closedAt === null ? 1 : 0), 0);
  const pushed = repo.commits.at(-1)?.date ?? repo.createdAt;
  const html = repoHtml(ctx, repo);
  const host = new URL(ctx.html).host;
  return {
    id: repo.id,
    node_id: nodeId('Repository', repo.id),
    name: repo.name,
    full_name: `${ctx.data.org.login}/${repo.name}`,
    private: repo.private,
    owner: renderUser(ctx, ctx.data.org),
    html_url: html,
    description: repo.description,
    fork: false,
    url: repoUrl(ctx, repo),
    ...repoUrls(ctx, repo),
    created_at: isoSeconds(repo.createdAt),
    updated_at: isoSeconds(pushed),
    pushed_at: isoSeconds(pushed),
    git_url: `git://${host}/${ctx.data.org.login}/${repo.name}.git`,
    ssh_url: `git@${host}:${ctx.data.org.login}/${repo.name}.git`,
    clone_url: `${html}.git`,
    svn_url: html,
    homepage: null,
    size: repo.empty ? 0 : 100 + repo.commits.length * 3,
    stargazers_count: repo.index * 7,
    watchers_count: repo.index * 7,
    language: repo.language,
    has_issues: true,
    has_projects: true,
    has_downloads: true,
    has_wiki: true,
    has_pages: false,
    has_discussions: false,
    forks_count: repo.index,
    mirror_url: null,
    archived: false,
    disabled: false,
    open_issues_count: openCount,
    license: null,
    allow_forking: !repo.private,
    is_template: false,
    web_commit_signoff_required: false,
    topics: [],
    visibility: repo.private ? 'private' : 'public',
    forks: repo.index,
    open_issues: openCount,
    watchers: repo.index * 7,
    default_branch: 'main',
    permissions: { admin: true, maintain: true, push: true, triage: true, pull: true },
  };
}

/** `GET /repos/{owner}/{repo}`: the repository plus what only the single-repository answer has. */
export function renderFullRepository(ctx: RenderContext, repo: RepoRecord): Schemas['full-repository'] {
  const base = renderRepository(ctx, repo);
  return {
    ...base,
    pushed_at: base.pushed_at ?? base.created_at ?? '',
    created_at: base.created_at ?? '',
    updated_at: base.updated_at ?? '',
    has_discussions: false,
    temp_clone_token: '',
    allow_squash_merge: true,
    allow_merge_commit: true,
    allow_rebase_merge: true,
    allow_auto_merge: false,
    delete_branch_on_merge: false,
    allow_update_branch: false,
    use_squash_pr_title_as_default: false,
    squash_merge_commit_message: 'COMMIT_MESSAGES',
    squash_merge_commit_title: 'COMMIT_OR_PR_TITLE',
    merge_commit_message: 'PR_TITLE',
    merge_commit_title: 'MERGE_MESSAGE',
    organization: renderUser(ctx, ctx.data.org),
    network_count: repo.index,
    subscribers_count: ctx.data.members.length,
  };
}

/** `GET /orgs/{org}/repos` entries: GitHub's minimal-repository with the same fields it sends. */
export function renderMinimalRepository(ctx: RenderContext, repo: RepoRecord): Schemas['minimal-repository'] {
  const { license: _license, ...rest } = renderRepository(ctx, repo);
  return { ...rest, license: null };
}
