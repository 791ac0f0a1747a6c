/** Pull requests, their reviews, and the default branch's commits. */
import { DAY_MS, itemState, present, type CommitRecord, type ItemRecord, type RepoRecord } from './model.js';
import { directed, itemsBy } from './orders.js';
import { AnswerError, enumParam, timeParam } from './query.js';
import { renderCommit, renderPull, renderPullSimple, renderReview } from './renderItems.js';
import { errorAnswer, notFound } from './responses.js';
import { repoOf, type HandlerResult, type RequestContext, type Route } from './routeTypes.js';
import { itemOf } from './routesIssues.js';
import type { ReviewRecord } from './model.js';

const PULLS_DOCS = 'https://docs.github.com/rest/pulls/pulls';
const REVIEWS_DOCS = 'https://docs.github.com/rest/pulls/reviews';
const COMMITS_DOCS = 'https://docs.github.com/rest/commits/commits';

type PullSort = 'created' | 'updated' | 'popularity' | 'long-running';

/**
 * `sort` created (default) / updated / popularity (comments) / long-running (open over a month,
 * active within the last month, by creation); `direction` defaults to desc for created, else asc.
 */
function listPulls(ctx: RequestContext): HandlerResult {
  const state = enumParam(ctx.param, 'state', ['open', 'closed', 'all'] as const, 'open');
  const sort = enumParam<PullSort>(ctx.param, 'sort', ['created', 'updated', 'popularity', 'long-running'], 'created');
  const direction = enumParam(ctx.param, 'direction', ['asc', 'desc'] as const, sort === 'created' ? 'desc' : 'asc');
  const base = ctx.q.get('base');
  const head = ctx.q.get('head');
  const org = ctx.render.data.org.login;
  const repo = repoOf(ctx);
  const byKey = itemsBy(repo, sort === 'updated' ? 'updated' : sort === 'popularity' ? 'comments' : 'created');
  const monthAgo = ctx.now - 30 * DAY_MS;
  const list = directed(byKey, sort === 'long-running' ? flip(direction) : direction).filter(
    (i) =>
      i.pull !== null &&
      present(i) &&
      (state === 'all' || itemState(i) === state) &&
      (base === null || base === 'main') &&
      (head === null || head === `${org}:${i.pull.headRef}`) &&
      (sort !== 'long-running' || (i.createdAt <= monthAgo && i.updatedAt >= monthAgo)),
  );
  return { list, render: (i) => renderPullSimple(ctx.render, i as ItemRecord, (i as ItemRecord).pull!) };
}

/** long-running orders by age: the longest-running (oldest) first when descending. */
function flip(direction: 'asc' | 'desc'): 'asc' | 'desc' {
  return direction === 'asc' ? 'desc' : 'asc';
}

function getPull(ctx: RequestContext): HandlerResult {
  const item = itemOf(ctx);
  if (!item?.pull) return notFound(`${PULLS_DOCS}#get-a-pull-request`);
  return { status: 200, body: renderPull(ctx.render, item, item.pull) };
}

function listReviews(ctx: RequestContext): HandlerResult {
  const item = itemOf(ctx);
  if (!item?.pull) return notFound(`${REVIEWS_DOCS}#list-reviews-for-a-pull-request`);
  return { list: item.pull.reviews, render: (r) => renderReview(ctx.render, r as ReviewRecord) };
}

const shaIndex = new WeakMap<RepoRecord, Map<string, number>>();

function commitPosition(repo: RepoRecord, sha: string): number | undefined {
  let index = shaIndex.get(repo);
  if (!index) {
    index = new Map(repo.commits.map((c, i) => [c.sha, i]));
    shaIndex.set(repo, index);
  }
  return index.get(sha);
}

/** A pull request's head commit (not on the default branch): built from the pull's record. */
function headCommit(repo: RepoRecord, item: ItemRecord): CommitRecord {
  const pull = item.pull!;
  const parent = repo.commits.findLast((c) => c.date <= item.createdAt)?.sha ?? null;
  return {
    sha: pull.headSha,
    author: item.author,
    date: item.createdAt,
    message: item.title,
    parent,
    additions: pull.additions,
    deletions: pull.deletions,
    files: [],
  };
}

/** The commit `ref` names: a default-branch SHA, `main`, a pull's head SHA or head branch. */
function resolveRef(repo: RepoRecord, ref: string): { chain: readonly CommitRecord[]; head: CommitRecord | null } {
  if (ref === 'main' || ref === 'HEAD') return { chain: repo.commits, head: null };
  const pos = commitPosition(repo, ref);
  if (pos !== undefined) return { chain: repo.commits.slice(0, pos + 1), head: null };
  const item = repo.heads.get(ref) ?? repo.items.find((i) => i.pull?.headRef === ref);
  if (item?.pull) {
    const head = headCommit(repo, item);
    const upTo = head.parent === null ? -1 : (commitPosition(repo, head.parent) ?? -1);
    return { chain: repo.commits.slice(0, upTo + 1), head };
  }
  throw new AnswerError(errorAnswer(422, `No commit found for SHA: ${ref}`, `${COMMITS_DOCS}#list-commits`));
}

/**
 * An empty repository (no commit yet) answers its commit lists and commits with 409 "Git
 * Repository is empty." (github/rest-api-description#385; the 409 `conflict` response of
 * `repos/list-commits`).
 */
function emptyRepo(repo: RepoRecord, docs: string): void {
  if (repo.empty) throw new AnswerError(errorAnswer(409, 'Git Repository is empty.', docs));
}

/** Newest first; `since` / `until` bound the commit date (inclusive); `sha` picks where to start. */
function listCommits(ctx: RequestContext): HandlerResult {
  const repo = repoOf(ctx);
  emptyRepo(repo, `${COMMITS_DOCS}#list-commits`);
  const since = timeParam(ctx.param, 'since');
  const until = timeParam(ctx.param, 'until');
  const author = ctx.q.get('author');
  const { chain, head } = resolveRef(repo, ctx.q.get('sha') || 'main');
  const all = head ? [...chain, head] : chain;
  const list = directed(all, 'desc').filter(
    (c) =>
      (since === null || c.date >= since) &&
      (until === null || c.date <= until) &&
      (author === null || c.author.login === author),
  );
  return { list, render: (c) => renderCommit(ctx.render, { repo }, c as CommitRecord, false) };
}

function getCommit(ctx: RequestContext): HandlerResult {
  const repo = repoOf(ctx);
  emptyRepo(repo, `${COMMITS_DOCS}#get-a-commit`);
  const ref = ctx.params.ref ?? '';
  const { chain, head } = resolveRef(repo, ref);
  const commit = head ?? chain.at(-1);
  if (!commit) return notFound(`${COMMITS_DOCS}#get-a-commit`);
  return { status: 200, body: renderCommit(ctx.render, { repo }, commit, true) };
}

const R = '/repos/{owner}/{repo}';

export const PULL_ROUTES: Route[] = [
  {
    path: `${R}/pulls`,
    docs: `${PULLS_DOCS}#list-pull-requests`,
    permission: 'pull_requests=read',
    resource: 'PullRequest',
    handler: listPulls,
  },
  {
    path: `${R}/pulls/{number}`,
    docs: `${PULLS_DOCS}#get-a-pull-request`,
    permission: 'pull_requests=read',
    resource: 'PullRequest',
    handler: getPull,
  },
  {
    path: `${R}/pulls/{number}/reviews`,
    docs: `${REVIEWS_DOCS}#list-reviews-for-a-pull-request`,
    permission: 'pull_requests=read',
    resource: 'PullRequestReview',
    handler: listReviews,
  },
  {
    path: `${R}/commits`,
    docs: `${COMMITS_DOCS}#list-commits`,
    permission: 'contents=read',
    resource: 'Commit',
    handler: listCommits,
  },
  {
    path: `${R}/commits/{ref}`,
    docs: `${COMMITS_DOCS}#get-a-commit`,
    permission: 'contents=read',
    resource: 'Commit',
    handler: getCommit,
  },
];
