/** GitHub REST objects mapped onto the normalized surfaces (one row per object). */
import { githubStatus } from './status.js';
import { at, baseRow as base, type RowScope as UnitRowScope } from '../kit/rows.js';

/** What every row of a unit carries: the unit's scope and its repository. */
export interface RowScope extends UnitRowScope {
  /** `owner/repo` */
  container: string;
}

type Row = Record<string, unknown>;

export interface GhUser {
  id?: number;
  login?: string;
  name?: string | null;
  email?: string | null;
  avatar_url?: string;
}

export interface GhRepo {
  id: number;
  full_name: string;
  description: string | null;
  html_url: string;
  private: boolean;
  archived?: boolean;
  default_branch?: string;
  created_at: string | null;
  updated_at: string | null;
}

export interface GhIssue {
  id: number;
  number: number;
  title: string;
  state: string;
  state_reason?: string | null;
  labels: (string | { name?: string })[];
  assignees?: GhUser[] | null;
  user?: GhUser | null;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  milestone?: { title?: string } | null;
  html_url: string;
  /** The API URL of the issue's repository (a transferred issue's names its new one). */
  repository_url?: string;
  pull_request?: unknown;
}

export interface GhComment {
  id: number;
  issue_url: string;
  html_url: string;
  user?: GhUser | null;
  body?: string | null;
  created_at: string;
  updated_at: string;
}

export interface GhIssueEvent {
  id: number;
  event: string;
  actor?: GhUser | null;
  created_at: string;
  label?: { name?: string } | null;
  assignee?: GhUser | null;
  issue?: { number: number; pull_request?: unknown } | null;
}

export interface GhPull {
  id: number;
  number: number;
  title: string;
  state: string;
  draft?: boolean;
  user?: GhUser | null;
  base: { ref: string };
  head: { ref: string };
  created_at: string;
  updated_at: string;
  merged_at: string | null;
  closed_at: string | null;
  html_url: string;
  additions?: number;
  deletions?: number;
  changed_files?: number;
}

export interface GhReview {
  id: number;
  user?: GhUser | null;
  state: string;
  submitted_at?: string | null;
}

export interface GhCommit {
  sha: string;
  author?: GhUser | null;
  commit: { message: string; author?: { name?: string; date?: string } | null; committer?: { date?: string } | null };
  stats?: { additions?: number; deletions?: number };
}

/** The work item (issue or pull request) a repository's number names: `owner/repo#number`. */
export function itemKey(container: string, number: number | string): string {
  return `${container}#${number}`;
}

function labelNames(labels: GhIssue['labels']): string[] {
  return labels.map((l) => (typeof l === 'string' ? l : (l.name ?? ''))).filter((n) => n !== '');
}

export function repositoryRow(s: RowScope, r: GhRepo): Row {
  return {
    ...base(s, String(r.id), r),
    name: r.full_name,
    description: r.description,
    url: r.html_url,
    private: r.private,
    archived: r.archived ?? false,
    default_branch: r.default_branch ?? null,
    created_at: at(r.created_at),
    updated_at: at(r.updated_at),
  };
}

export function memberRow(s: RowScope, u: GhUser, role: string): Row {
  return {
    ...base(s, String(u.id), u),
    login: u.login ?? null,
    name: u.name ?? null,
    email: u.email ?? null,
    avatar_url: u.avatar_url ?? null,
    role,
  };
}

/**
 * An issue as a work item. It carries no `started_at`: the normalized sink derives it from the
 * issue's stored `labeled` events (GitHub's surface hooks, ./starts.ts), which another unit reads.
 */
export function workItemRow(s: RowScope, i: GhIssue): Row {
  const labels = labelNames(i.labels);
  const status = githubStatus({ state: i.state, stateReason: i.state_reason ?? null, labels });
  return {
    ...base(s, itemKey(s.container, i.number), i),
    number: String(i.number),
    title: i.title,
    type: 'issue',
    status,
    status_raw: i.state_reason ? `${i.state}:${i.state_reason}` : i.state,
    assignees: (i.assignees ?? []).map((a) => a.login ?? '').filter((l) => l !== ''),
    labels,
    created_at: at(i.created_at),
    updated_at: at(i.updated_at),
    completed_at: status === 'done' || status === 'cancelled' ? at(i.closed_at) : null,
    parent_external_id: null,
    container: s.container,
    milestone: i.milestone?.title ?? null,
    url: i.html_url,
  };
}

/** The issue number a comment's `issue_url` ends with. */
export function commentIssueNumber(c: GhComment): string | null {
  return /\/issues\/(\d+)$/.exec(c.issue_url)?.[1] ?? null;
}

/** Comments on pull requests share the issues' comment list; their page URL says `/pull/`. */
export function isPullRequestComment(c: GhComment): boolean {
  return /\/pull\/\d+/.test(c.html_url);
}

export function commentRow(s: RowScope, c: GhComment): Row {
  return {
    ...base(s, String(c.id), c),
    work_item_external_id: itemKey(s.container, commentIssueNumber(c) ?? '?'),
    author: c.user?.login ?? null,
    body: c.body ?? null,
    created_at: at(c.created_at),
    updated_at: at(c.updated_at),
  };
}

/** An issue event as a work-item event: state, label and assignee changes; the rest `other`. */
export function eventRow(s: RowScope, e: GhIssueEvent): Row {
  const change = eventChange(e);
  return {
    ...base(s, String(e.id), e),
    work_item_external_id: itemKey(s.container, e.issue?.number ?? '?'),
    kind: change.kind,
    actor: e.actor?.login ?? null,
    from_value: change.from,
    to_value: change.to,
    occurred_at: at(e.created_at),
  };
}

function eventChange(e: GhIssueEvent): { kind: string; from: string | null; to: string | null } {
  switch (e.event) {
    case 'closed':
      return { kind: 'state', from: 'open', to: 'closed' };
    case 'reopened':
      return { kind: 'state', from: 'closed', to: 'open' };
    case 'labeled':
      return { kind: 'label', from: null, to: e.label?.name ?? null };
    case 'unlabeled':
      return { kind: 'label', from: e.label?.name ?? null, to: null };
    case 'assigned':
      return { kind: 'assignee', from: null, to: e.assignee?.login ?? null };
    case 'unassigned':
      return { kind: 'assignee', from: e.assignee?.login ?? null, to: null };
    default:
      return { kind: 'other', from: null, to: e.event };
  }
}

/** A pull request's side (base or head) with its repository cut to its id and name. */
type GhBranch = GhPull['base'] & { repo?: { id?: number; full_name?: string } | null };

function slimBranch(b: GhBranch): GhBranch {
  if (!b.repo) return b;
  return { ...b, repo: { id: b.repo.id, full_name: b.repo.full_name } };
}

/**
 * A pull request from its detail. `raw` keeps the base and head repositories as id and name only:
 * each is a whole repository object (half the detail), the same on every pull request, and the
 * repository is stored once in `repositories`.
 */
export function pullRequestRow(s: RowScope, p: GhPull): Row {
  const raw = { ...p, base: slimBranch(p.base), head: slimBranch(p.head) };
  return {
    ...base(s, itemKey(s.container, p.number), raw),
    number: p.number,
    title: p.title,
    state: p.merged_at ? 'merged' : p.state === 'closed' ? 'closed' : 'open',
    draft: p.draft ?? false,
    author: p.user?.login ?? null,
    base_ref: p.base.ref,
    head_ref: p.head.ref,
    container: s.container,
    created_at: at(p.created_at),
    updated_at: at(p.updated_at),
    merged_at: at(p.merged_at),
    closed_at: at(p.closed_at),
    additions: p.additions ?? null,
    deletions: p.deletions ?? null,
    changed_files: p.changed_files ?? null,
    url: p.html_url,
  };
}

export function reviewRow(s: RowScope, pullNumber: number, r: GhReview): Row {
  return {
    ...base(s, String(r.id), r),
    pull_request_external_id: itemKey(s.container, pullNumber),
    author: r.user?.login ?? null,
    state: r.state,
    submitted_at: at(r.submitted_at),
  };
}

/** A commit; its per-file patches (large, and not modelled) are left out of `raw`. */
export function commitRow(s: RowScope, c: GhCommit): Row {
  const { files: _files, ...raw } = c as GhCommit & { files?: unknown };
  return {
    ...base(s, c.sha, raw),
    sha: c.sha,
    container: s.container,
    author: c.author?.login ?? c.commit.author?.name ?? null,
    committed_at: at(c.commit.committer?.date ?? c.commit.author?.date),
    message_first_line: c.commit.message.split('\n', 1)[0] ?? '',
    additions: c.stats?.additions ?? null,
    deletions: c.stats?.deletions ?? null,
  };
}
