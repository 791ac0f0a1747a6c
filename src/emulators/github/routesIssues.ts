/** Issues, issue comments and issue events. */
import { itemState, present, type CommentRecord, type EventRecord, type ItemRecord } from './model.js';
import { directed, itemsBy, unsorted, type ItemSort } from './orders.js';
import { enumParam, timeParam } from './query.js';
import { renderComment, renderEvent, renderIssue } from './renderItems.js';
import { errorAnswer, notFound, type Answer } from './responses.js';
import { repoOf, type HandlerResult, type RequestContext, type Route } from './routeTypes.js';

const ISSUES_DOCS = 'https://docs.github.com/rest/issues/issues';
const COMMENTS_DOCS = 'https://docs.github.com/rest/issues/comments';
const EVENTS_DOCS = 'https://docs.github.com/rest/issues/events';

/** The issue (or pull) with the number in the path, or null (a deleted one too: see `gone`). */
export function itemOf(ctx: RequestContext): ItemRecord | null {
  const n = Number(ctx.params.number);
  if (!Number.isInteger(n) || n < 1) return null;
  const item = repoOf(ctx).items[n - 1];
  return item && present(item) ? item : null;
}

/**
 * A deleted issue's answer: 410 Gone to a reader of the repository ("If the issue was deleted from
 * a repository where the authenticated user has read access, the API returns a 410 Gone status",
 * docs.github.com/rest/issues/issues#get-an-issue); otherwise 404 with `docs`.
 */
export function gone(ctx: RequestContext, docs: string): Answer {
  const n = Number(ctx.params.number);
  const item = Number.isInteger(n) && n >= 1 ? repoOf(ctx).items[n - 1] : undefined;
  return item && !present(item) ? errorAnswer(410, 'This issue was deleted', docs) : notFound(docs);
}

function listIssues(ctx: RequestContext): HandlerResult {
  const state = enumParam(ctx.param, 'state', ['open', 'closed', 'all'] as const, 'open');
  const sort = enumParam<ItemSort>(ctx.param, 'sort', ['created', 'updated', 'comments'], 'created');
  const direction = enumParam(ctx.param, 'direction', ['asc', 'desc'] as const, 'desc');
  const since = timeParam(ctx.param, 'since');
  const labels = (ctx.q.get('labels') ?? '').split(',').filter((s) => s !== '');
  const creator = ctx.q.get('creator');
  const assignee = ctx.q.get('assignee');
  const list = directed(itemsBy(repoOf(ctx), sort), direction).filter(
    (i) =>
      present(i) &&
      (state === 'all' || itemState(i) === state) &&
      (since === null || i.updatedAt >= since) &&
      labels.every((name) => i.labels.some((l) => l.name === name)) &&
      (creator === null || i.author.login === creator) &&
      matchesAssignee(i, assignee),
  );
  return { list, render: (i) => renderIssue(ctx.render, i as ItemRecord) };
}

function matchesAssignee(item: ItemRecord, assignee: string | null): boolean {
  if (assignee === null) return true;
  if (assignee === 'none') return item.assignees.length === 0;
  if (assignee === '*') return item.assignees.length > 0;
  return item.assignees.some((u) => u.login === assignee);
}

function getIssue(ctx: RequestContext): HandlerResult {
  const item = itemOf(ctx);
  return item ? { status: 200, body: renderIssue(ctx.render, item, true) } : gone(ctx, `${ISSUES_DOCS}#get-an-issue`);
}

/** Repository-wide comments: ascending by id without `sort`; with it, `direction` (default desc). */
function listRepoComments(ctx: RequestContext): HandlerResult {
  const sortGiven = ctx.q.get('sort') !== null && ctx.q.get('sort') !== '';
  const sort = enumParam(ctx.param, 'sort', ['created', 'updated'] as const, 'created');
  const direction = sortGiven ? enumParam(ctx.param, 'direction', ['asc', 'desc'] as const, 'desc') : 'asc';
  const since = timeParam(ctx.param, 'since');
  let ordered: readonly CommentRecord[] = repoOf(ctx).comments;
  if (sort === 'updated') ordered = ordered.slice().sort((a, b) => a.updatedAt - b.updatedAt || a.id - b.id);
  const list = directed(ordered, direction).filter((c) => present(c.item) && (since === null || c.updatedAt >= since));
  return { list, render: (c) => renderComment(ctx.render, c as CommentRecord) };
}

function listItemComments(ctx: RequestContext): HandlerResult {
  const item = itemOf(ctx);
  if (!item) return gone(ctx, `${COMMENTS_DOCS}#list-issue-comments`);
  const since = timeParam(ctx.param, 'since');
  const list = item.comments.filter((c) => since === null || c.updatedAt >= since);
  return { list, render: (c) => renderComment(ctx.render, c as CommentRecord) };
}

function getComment(ctx: RequestContext): HandlerResult {
  const id = Number(ctx.params.id);
  const c = repoOf(ctx).comments.find((x) => x.id === id && present(x.item));
  return c ? { status: 200, body: renderComment(ctx.render, c) } : notFound(`${COMMENTS_DOCS}#get-an-issue-comment`);
}

/**
 * Repository-wide events, each embedding its issue, in no time order: GitHub documents none for
 * this list (no `sort`, `direction` or `since`), so a reader may not stop early (orders.ts `unsorted`).
 */
function listRepoEvents(ctx: RequestContext): HandlerResult {
  const list = unsorted(repoOf(ctx), repoOf(ctx).events).filter((e) => present(e.item));
  return { list, render: (e) => renderEvent(ctx.render, e as EventRecord, true) };
}

/** One issue's events, in no time order either (GitHub documents none). */
function listItemEvents(ctx: RequestContext): HandlerResult {
  const item = itemOf(ctx);
  if (!item) return gone(ctx, `${EVENTS_DOCS}#list-issue-events`);
  return { list: unsorted(repoOf(ctx), item.events), render: (e) => renderEvent(ctx.render, e as EventRecord, false) };
}

const R = '/repos/{owner}/{repo}';

export const ISSUE_ROUTES: Route[] = [
  {
    path: `${R}/issues`,
    docs: `${ISSUES_DOCS}#list-repository-issues`,
    permission: 'issues=read',
    resource: 'Issue',
    handler: listIssues,
  },
  {
    path: `${R}/issues/comments`,
    docs: `${COMMENTS_DOCS}#list-issue-comments-for-a-repository`,
    permission: 'issues=read',
    resource: 'IssueComment',
    handler: listRepoComments,
  },
  {
    path: `${R}/issues/comments/{id}`,
    docs: `${COMMENTS_DOCS}#get-an-issue-comment`,
    permission: 'issues=read',
    resource: 'IssueComment',
    handler: getComment,
  },
  {
    path: `${R}/issues/events`,
    docs: `${EVENTS_DOCS}#list-issue-events-for-a-repository`,
    permission: 'issues=read',
    resource: 'IssueEvent',
    handler: listRepoEvents,
  },
  {
    path: `${R}/issues/{number}`,
    docs: `${ISSUES_DOCS}#get-an-issue`,
    permission: 'issues=read',
    resource: 'Issue',
    handler: getIssue,
  },
  {
    path: `${R}/issues/{number}/comments`,
    docs: `${COMMENTS_DOCS}#list-issue-comments`,
    permission: 'issues=read',
    resource: 'IssueComment',
    handler: listItemComments,
  },
  {
    path: `${R}/issues/{number}/events`,
    docs: `${EVENTS_DOCS}#list-issue-events`,
    permission: 'issues=read',
    resource: 'IssueEvent',
    handler: listItemEvents,
  },
];
