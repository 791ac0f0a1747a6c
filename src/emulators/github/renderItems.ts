/** REST shapes for issues, pull requests, comments, events, reviews and commits (OpenAPI-typed). */
import type { components } from '@octokit/openapi-types';
import {
  isoSeconds,
  itemState,
  type CommentRecord,
  type CommitRecord,
  type EventRecord,
  type ItemRecord,
  type PullDetails,
  type ReviewRecord,
} from './model.js';
import { nodeId } from '../core/random.js';
import {
  renderLabel,
  renderMilestone,
  renderRepository,
  renderUser,
  repoHtml,
  repoUrl,
  type RenderContext,
} from './renderRepo.js';

type Schemas = components['schemas'];

function reactions(url: string): Schemas['reaction-rollup'] {
  return { url, total_count: 0, '+1': 0, '-1': 0, laugh: 0, hooray: 0, confused: 0, heart: 0, rocket: 0, eyes: 0 };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : isoSeconds(ms);
}

/**
 * An issue as the issues endpoints return it; a pull request carries the `pull_request` key. Only
 * the single-issue answer (`single`) has `closed_by`, as on GitHub.
 */
export function renderIssue(ctx: RenderContext, item: ItemRecord, single = false): Schemas['issue'] {
  const repo = item.repo;
  const url = `${repoUrl(ctx, repo)}/issues/${item.number}`;
  const kind = item.pull ? 'pull' : 'issues';
  const html = `${repoHtml(ctx, repo)}/${kind}/${item.number}`;
  const issue: Schemas['issue'] = {
    url,
    repository_url: repoUrl(ctx, repo),
    labels_url: `${url}/labels{/name}`,
    comments_url: `${url}/comments`,
    events_url: `${url}/events`,
    html_url: html,
    id: item.id,
    node_id: nodeId(item.pull ? 'PullRequest' : 'Issue', item.id),
    number: item.number,
    title: item.title,
    user: renderUser(ctx, item.author),
    labels: item.labels.map((l) => renderLabel(ctx, repo, l)),
    state: itemState(item),
    locked: false,
    assignee: item.assignees[0] ? renderUser(ctx, item.assignees[0]) : null,
    assignees: item.assignees.map((u) => renderUser(ctx, u)),
    milestone: item.milestone ? renderMilestone(ctx, repo, item.milestone) : null,
    comments: item.comments.length,
    created_at: isoSeconds(item.createdAt),
    updated_at: isoSeconds(item.updatedAt),
    closed_at: iso(item.closedAt),
    author_association: item.author.association,
    type: null,
    active_lock_reason: null,
    body: item.body,
    reactions: reactions(`${url}/reactions`),
    timeline_url: `${url}/timeline`,
    performed_via_github_app: null,
    state_reason: item.closedAt === null || item.pull ? null : 'completed',
  };
  if (single) issue.closed_by = item.closedBy ? renderUser(ctx, item.closedBy) : null;
  if (item.pull) {
    const pullUrl = `${repoUrl(ctx, repo)}/pulls/${item.number}`;
    issue.draft = item.pull.draft;
    issue.pull_request = {
      url: pullUrl,
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      merged_at: iso(item.pull.mergedAt),
    };
  }
  return issue;
}

function branch(ctx: RenderContext, item: ItemRecord, ref: string, sha: string) {
  return {
    label: `${ctx.data.org.login}:${ref}`,
    ref,
    sha,
    user: renderUser(ctx, ctx.data.org),
    repo: renderRepository(ctx, item.repo),
  };
}

/** `GET /pulls` entries. */
export function renderPullSimple(
  ctx: RenderContext,
  item: ItemRecord,
  pull: PullDetails,
): Schemas['pull-request-simple'] {
  const repo = item.repo;
  const url = `${repoUrl(ctx, repo)}/pulls/${item.number}`;
  const issueUrl = `${repoUrl(ctx, repo)}/issues/${item.number}`;
  const html = `${repoHtml(ctx, repo)}/pull/${item.number}`;
  const statuses = `${repoUrl(ctx, repo)}/statuses/${pull.headSha}`;
  const baseSha = repo.commits.findLast((c) => c.date <= item.createdAt)?.sha ?? pull.headSha;
  return {
    url,
    id: item.id,
    node_id: nodeId('PullRequest', item.id),
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: issueUrl,
    number: item.number,
    state: itemState(item),
    locked: false,
    title: item.title,
    user: renderUser(ctx, item.author),
    body: item.body,
    created_at: isoSeconds(item.createdAt),
    updated_at: isoSeconds(item.updatedAt),
    closed_at: iso(item.closedAt),
    merged_at: iso(pull.mergedAt),
    merge_commit_sha: pull.mergeSha,
    assignee: item.assignees[0] ? renderUser(ctx, item.assignees[0]) : null,
    assignees: item.assignees.map((u) => renderUser(ctx, u)),
    requested_reviewers: pull.requestedReviewers.map((u) => renderUser(ctx, u)),
    requested_teams: [],
    // The description says `string`; GitHub sends null for a label without one, and so does this.
    labels: item.labels.map((l) => ({ ...renderLabel(ctx, repo, l), description: l.description as string })),
    milestone: item.milestone ? renderMilestone(ctx, repo, item.milestone) : null,
    draft: pull.draft,
    commits_url: `${url}/commits`,
    review_comments_url: `${url}/comments`,
    review_comment_url: `${repoUrl(ctx, repo)}/pulls/comments{/number}`,
    comments_url: `${issueUrl}/comments`,
    statuses_url: statuses,
    head: branch(ctx, item, pull.headRef, pull.headSha),
    base: branch(ctx, item, 'main', baseSha),
    _links: {
      self: { href: url },
      html: { href: html },
      issue: { href: issueUrl },
      comments: { href: `${issueUrl}/comments` },
      review_comments: { href: `${url}/comments` },
      review_comment: { href: `${repoUrl(ctx, repo)}/pulls/comments{/number}` },
      commits: { href: `${url}/commits` },
      statuses: { href: statuses },
    },
    author_association: item.author.association,
    auto_merge: null,
    active_lock_reason: null,
  };
}

/** `GET /pulls/{n}`: the simple shape plus merge state and size. */
export function renderPull(ctx: RenderContext, item: ItemRecord, pull: PullDetails): Schemas['pull-request'] {
  const simple = renderPullSimple(ctx, item, pull);
  const open = item.closedAt === null;
  return {
    ...simple,
    user: renderUser(ctx, item.author),
    state: itemState(item),
    labels: item.labels.map((l) => renderLabel(ctx, item.repo, l)),
    head: { ...simple.head, user: renderUser(ctx, ctx.data.org) },
    base: { ...simple.base, user: renderUser(ctx, ctx.data.org) },
    merged: pull.mergedAt !== null,
    mergeable: open ? true : null,
    rebaseable: open ? true : null,
    mergeable_state: open ? 'clean' : 'unknown',
    merged_by: pull.mergedBy ? renderUser(ctx, pull.mergedBy) : null,
    comments: item.comments.length,
    review_comments: 0,
    maintainer_can_modify: false,
    commits: pull.commits,
    additions: pull.additions,
    deletions: pull.deletions,
    changed_files: pull.changedFiles,
  };
}

export function renderComment(ctx: RenderContext, c: CommentRecord): Schemas['issue-comment'] {
  const repo = c.item.repo;
  const url = `${repoUrl(ctx, repo)}/issues/comments/${c.id}`;
  const kind = c.item.pull ? 'pull' : 'issues';
  return {
    url,
    html_url: `${repoHtml(ctx, repo)}/${kind}/${c.item.number}#issuecomment-${c.id}`,
    issue_url: `${repoUrl(ctx, repo)}/issues/${c.item.number}`,
    id: c.id,
    node_id: nodeId('IssueComment', c.id),
    user: renderUser(ctx, c.author),
    created_at: isoSeconds(c.createdAt),
    updated_at: isoSeconds(c.updatedAt),
    author_association: c.author.association,
    body: c.body,
    reactions: reactions(`${url}/reactions`),
    performed_via_github_app: null,
  };
}

/** An issue event; the repository-wide list also embeds the issue, as GitHub does. */
export function renderEvent(ctx: RenderContext, e: EventRecord, withIssue: boolean): Schemas['issue-event'] {
  const repo = e.item.repo;
  const out: Schemas['issue-event'] = {
    id: e.id,
    node_id: nodeId(`${e.event}Event`, e.id),
    url: `${repoUrl(ctx, repo)}/issues/events/${e.id}`,
    actor: renderUser(ctx, e.actor),
    event: e.event,
    commit_id: e.commitId,
    commit_url: e.commitId ? `${repoUrl(ctx, repo)}/commits/${e.commitId}` : null,
    created_at: isoSeconds(e.createdAt),
    performed_via_github_app: null,
  };
  if (e.label) out.label = { name: e.label.name, color: e.label.color };
  if (e.event === 'assigned' && e.subject) {
    out.assignee = renderUser(ctx, e.subject);
    out.assigner = renderUser(ctx, e.actor);
  }
  if (e.event === 'review_requested' && e.subject) {
    out.review_requester = renderUser(ctx, e.actor);
    out.requested_reviewer = renderUser(ctx, e.subject);
  }
  if (e.milestone) out.milestone = { title: e.milestone.title };
  if (withIssue) out.issue = renderIssue(ctx, e.item);
  return out;
}

export function renderReview(ctx: RenderContext, r: ReviewRecord): Schemas['pull-request-review'] {
  const repo = r.item.repo;
  const pullUrl = `${repoUrl(ctx, repo)}/pulls/${r.item.number}`;
  const html = `${repoHtml(ctx, repo)}/pull/${r.item.number}#pullrequestreview-${r.id}`;
  return {
    id: r.id,
    node_id: nodeId('PullRequestReview', r.id),
    user: renderUser(ctx, r.author),
    body: r.body,
    state: r.state,
    html_url: html,
    pull_request_url: pullUrl,
    author_association: r.author.association,
    _links: { html: { href: html }, pull_request: { href: pullUrl } },
    submitted_at: isoSeconds(r.submittedAt),
    commit_id: r.item.pull?.headSha ?? null,
  };
}

/** A commit; `detail` adds stats and files (the single-commit endpoint). */
export function renderCommit(
  ctx: RenderContext,
  item: { repo: ItemRecord['repo'] },
  c: CommitRecord,
  detail: boolean,
): Schemas['commit'] {
  const base = repoUrl(ctx, item.repo);
  const git = { name: c.author.login, email: `${c.author.login}@users.noreply.example`, date: isoSeconds(c.date) };
  const out: Schemas['commit'] = {
    sha: c.sha,
    node_id: nodeId('Commit', parseInt(c.sha.slice(0, 8), 16)),
    commit: {
      author: git,
      committer: git,
      message: c.message,
      tree: { sha: c.sha.split('').reverse().join(''), url: `${base}/git/trees/${c.sha}` },
      url: `${base}/git/commits/${c.sha}`,
      comment_count: 0,
      verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
    },
    url: `${base}/commits/${c.sha}`,
    html_url: `${repoHtml(ctx, item.repo)}/commit/${c.sha}`,
    comments_url: `${base}/commits/${c.sha}/comments`,
    author: renderUser(ctx, c.author),
    committer: renderUser(ctx, c.author),
    parents: c.parent
      ? [
          {
            sha: c.parent,
            url: `${base}/commits/${c.parent}`,
            html_url: `${repoHtml(ctx, item.repo)}/commit/${c.parent}`,
          },
        ]
      : [],
  };
  if (detail) {
    out.stats = { total: c.additions + c.deletions, additions: c.additions, deletions: c.deletions };
    out.files = c.files.map((filename, i) => diffEntry(ctx, item.repo, c, filename, i));
  }
  return out;
}

function diffEntry(
  ctx: RenderContext,
  repo: ItemRecord['repo'],
  c: CommitRecord,
  filename: string,
  i: number,
): Schemas['diff-entry'] {
  const n = c.files.length;
  const additions = Math.floor(c.additions / n) + (i < c.additions % n ? 1 : 0);
  const deletions = Math.floor(c.deletions / n) + (i < c.deletions % n ? 1 : 0);
  const path = encodeURIComponent(filename).replace(/%2F/g, '/');
  return {
    sha: c.sha,
    filename,
    status: 'modified',
    additions,
    deletions,
    changes: additions + deletions,
    blob_url: `${repoHtml(ctx, repo)}/blob/${c.sha}/${path}`,
    raw_url: `${repoHtml(ctx, repo)}/raw/${c.sha}/${path}`,
    contents_url: `${repoUrl(ctx, repo)}/contents/${path}?ref=${c.sha}`,
    patch: `@@ -1,${deletions} +1,${additions} @@`,
  };
}
