/**
 * The emulator's routes of single comments, in Jira Cloud's REST v3 shapes:
 * - `POST /rest/api/3/comment/list` ("Get comments by IDs", getCommentsByIds): body `{ids: […]}`
 *   of 1 to COMMENT_LIST_MAX comment ids (numbers, or strings of digits), else 400 (Jira: "if the
 *   request contains more than 1000 IDs or is empty"); answers a `PageBeanComment` `{self,
 *   nextPage?, maxResults, startAt, total, isLast, values}` of the comments among them that exist,
 *   in id order, in one page (the operation takes no paging parameter), or pages of the
 *   emulator's `commentListPage` when set (`startAt` from the query);
 * - `GET /rest/api/3/issue/{issueIdOrKey}/comment/{id}`: the comment, or 404;
 * - `DELETE /rest/api/3/issue/{issueIdOrKey}/comment/{id}`: 204, the comment deleted
 *   (commentDeletions.ts), or 404.
 */
import type { Answer } from '../core/http.js';
import { deleteComment, findComment } from './commentDeletions.js';
import type { CommentRec, IssueRec } from './model.js';
import * as render from './render.js';
import { intParam, issueByIdOrKey, jiraError, type RouteContext } from './routeContext.js';

/** Ids one `comment/list` request takes at most. */
export const COMMENT_LIST_MAX = 1000;

/** A `comment/list` page the tests ask for: fewer than a full request's ids, so a reader must page. */
export const COMMENT_LIST_PAGE = 100;

const LIST_PATH = '/rest/api/3/comment/list';
const ONE = /^\/rest\/api\/3\/issue\/([^/]+)\/comment\/([^/]+)$/;

/** The answer of a comment route, or null when the request is for none. */
export function commentRoute(ctx: RouteContext): Answer | null {
  const p = ctx.path.replace(/\/+$/, '');
  if (p === LIST_PATH) return ctx.method === 'POST' ? commentList(ctx) : jiraError(405, 'Method Not Allowed');
  const m = ONE.exec(p);
  if (!m) return null;
  const issue = issueByIdOrKey(ctx, decodeURIComponent(m[1]!));
  const comment = issue && findComment(issue, decodeURIComponent(m[2]!));
  if (!issue || !comment) return jiraError(404, 'Can not find a comment for the id: ' + decodeURIComponent(m[2]!));
  if (ctx.method === 'GET') return { status: 200, body: render.comment(ctx.site, issue, comment) };
  if (ctx.method !== 'DELETE') return jiraError(405, 'Method Not Allowed');
  deleteComment(ctx.site.data, issue.id, comment.id, ctx.now);
  return { status: 204, body: '' };
}

/** The ids of a `comment/list` body, or null when it is not `{ids: [1..COMMENT_LIST_MAX numeric ids]}`. */
export function listIds(body: Record<string, unknown> | null): string[] | null {
  const ids: unknown = body?.ids;
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > COMMENT_LIST_MAX) return null;
  const out: string[] = [];
  for (const id of ids) {
    if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) out.push(String(id));
    else if (typeof id === 'string' && /^[0-9]{1,18}$/.test(id)) out.push(String(Number(id)));
    else return null;
  }
  return out;
}

function commentList(ctx: RouteContext): Answer {
  const ids = listIds(ctx.body);
  if (!ids) return jiraError(400, `The list of comment IDs must hold from 1 to ${COMMENT_LIST_MAX} IDs.`);
  const wanted = new Set(ids);
  const found: { issue: IssueRec; comment: CommentRec }[] = [];
  for (const issue of ctx.site.data.issuesById.values()) {
    for (const comment of issue.comments) if (wanted.has(comment.id)) found.push({ issue, comment });
  }
  found.sort((a, b) => Number(a.comment.id) - Number(b.comment.id));
  const startAt = intParam(ctx.q.get('startAt'), 0, 1e9);
  const maxResults = ctx.commentListPage ?? COMMENT_LIST_MAX;
  const page = found.slice(startAt, startAt + maxResults);
  const isLast = startAt + page.length >= found.length;
  const self = (at: number) => `${ctx.site.url}${LIST_PATH}?startAt=${at}&maxResults=${maxResults}`;
  return {
    status: 200,
    body: {
      self: self(startAt),
      ...(isLast ? {} : { nextPage: self(startAt + maxResults) }),
      maxResults,
      startAt,
      total: found.length,
      isLast,
      values: page.map((f) => render.comment(ctx.site, f.issue, f.comment)),
    },
  };
}
