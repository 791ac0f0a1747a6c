/**
 * Jira Cloud's verify of a project's issue comments: the second pass of the work-item family's
 * verify unit (./verify.ts; the steps: ../kit/verify.ts), compared with `work_item_comments` of the
 * project (a comment is in its issue's source).
 *
 * Jira has no cheap listing of a project's comments, so the pass lists nothing: every stored live
 * comment neither written nor listed since the verify began is confirmed by `POST
 * /rest/api/3/comment/list` ("Get comments by IDs", operation getCommentsByIds of the Jira Cloud
 * platform REST API v3: body `IssueCommentListRequestBean` `{ids: [int64]}`, "A maximum of 1000
 * IDs can be specified", 400 "if the request contains more than 1000 IDs or is empty"; answer
 * `PageBeanComment` `{self, nextPage, maxResults, startAt, total, isLast, values: [Comment]}` of
 * the comments that exist and the caller may see; https://developer.atlassian.com/cloud/jira/
 * platform/rest/v3/api-group-issue-comments/#api-rest-api-3-comment-list-post), expanding nothing.
 * A comment the answer leaves out is gone (deleted, or with its issue; one the credential may no
 * longer see answers the same) and is marked by the kit; one it holds is compared by `updated`,
 * and a stale one written from the answer, mapped as the family read maps it (its issue is named
 * by the comment's `self`, `…/issue/{issueId}/comment/{id}`). The operation takes no page
 * parameter: an answer that is not the last (`isLast: false`) is followed by asking again for the
 * ids it has not yet answered. A failed or limited answer throws like any call (marks nothing).
 *
 * A comment missing from the store is found by the first pass: adding a comment moves its issue's
 * `updated`, so the issue is listed stale and written again with its family.
 *
 * Data Center has no such read (its REST v2 `comment` resource holds comment properties only:
 * https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/comment), and its per-comment
 * read (`GET /rest/api/2/issue/{issueId}/comment/{id}`) needs the comment's issue, which the
 * verify's view of the store (`SinkTombstones`) does not give: Data Center comments are not
 * verified (./verify.ts runs this pass on Cloud only).
 */
import type { ListedItem } from '../../domain/verify.js';
import { sourceScope, type VerifyReader } from '../kit/verify.js';
import { writeRows } from '../kit/write.js';
import { commentRow, type JiraComment } from './mapping.js';
import { parseJiraTime } from './timeZone.js';
import type { Job } from './units.js';

const SURFACE = 'work_item_comments';

/** The path of Cloud's read of comments by id. */
const COMMENT_LIST_PATH = '/rest/api/3/comment/list';

/** Ids one read of comments by id takes at most (and so the ids confirmed a step). */
export const COMMENT_LIST_MAX = 1000;

/** A page of `POST /rest/api/3/comment/list`. */
interface CommentListPage {
  startAt?: number;
  maxResults?: number;
  total?: number;
  isLast?: boolean;
  values?: JiraComment[];
}

/** A comment Jira answered, with the id of its issue (null when its `self` does not name one). */
interface Found {
  comment: JiraComment;
  issueId: string | null;
}

/**
 * The reader of the comments pass: lists nothing; confirms by `comment/list`, keeping the comments
 * of the last batch it confirmed so `fetch` writes them without asking again.
 */
export function commentReader(job: Job, counts: Record<string, number>): VerifyReader {
  const known = new Map<string, Found>();
  return {
    scope: sourceScope(job.ctx, job.scope.provider, SURFACE, job.project),
    confirmBatch: COMMENT_LIST_MAX,
    list: nothing,
    async confirm(ids) {
      known.clear();
      for (const f of await commentsByIds(job, ids)) known.set(String(f.comment.id), f);
      return [...known.values()].map((f) => listed(f.comment));
    },
    async fetch(ids) {
      // Every id the kit fetches is of the batch just confirmed; anything else is read again.
      const others = ids.filter((id) => !known.has(id));
      for (const f of await commentsByIds(job, others)) known.set(String(f.comment.id), f);
      const found = ids.map((id) => known.get(id)).filter((f): f is Found => f !== undefined);
      counts[SURFACE] = (counts[SURFACE] ?? 0) + (await writeRows(job.ctx, SURFACE, rowsOf(job, found)));
    },
  };
}

/** The rows of the comments found, as the family read maps them; one naming no issue is left unwritten. */
function rowsOf(job: Job, found: readonly Found[]): Record<string, unknown>[] {
  const rows = [];
  for (const f of found) {
    if (f.issueId === null) {
      job.ctx.logger.warn({ unitId: job.ctx.unit.id, commentId: f.comment.id }, 'jira comment names no issue');
      continue;
    }
    rows.push(commentRow(job.scope, f.issueId, f.comment));
  }
  return rows;
}

/** No listing: every stored comment is confirmed. */
async function* nothing(): AsyncGenerator<ListedItem[]> {}

function listed(c: JiraComment): ListedItem {
  const ms = parseJiraTime(c.updated);
  return { id: String(c.id), updatedAt: Number.isFinite(ms) ? new Date(ms) : null };
}

/** The issue id in a comment's `self` (`…/issue/{issueId}/comment/{id}`), or null. */
function issueIdOf(c: Pick<JiraComment, 'self'>): string | null {
  return /\/issue\/([0-9]+)\/comment\/[0-9]+\/?$/.exec(c.self ?? '')?.[1] ?? null;
}

/**
 * Of `ids`, the comments Jira has now (that the caller may see), up to COMMENT_LIST_MAX ids a
 * request; an id that is no Jira comment id is not asked for (nothing Jira has). Each answer that is
 * not the last is followed by a request for the ids not yet answered.
 */
async function commentsByIds(job: Job, ids: readonly string[]): Promise<Found[]> {
  const numeric = [...new Set(ids.filter((id) => /^[0-9]{1,15}$/.test(id)))];
  const found: Found[] = [];
  for (let at = 0; at < numeric.length; at += COMMENT_LIST_MAX) {
    found.push(...(await readBatch(job, numeric.slice(at, at + COMMENT_LIST_MAX))));
  }
  return found;
}

/** One batch of at most COMMENT_LIST_MAX ids, page after page. */
async function readBatch(job: Job, ids: readonly string[]): Promise<Found[]> {
  const wanted = new Set(ids);
  const found = new Map<string, Found>();
  // Each page asks for the ids not yet answered: a page that answers none of them would ask the
  // same again, which the trail stops as a pagination loop.
  const trail = job.pages.trail(`POST ${COMMENT_LIST_PATH}`);
  for (;;) {
    const ask = [...wanted].filter((id) => !found.has(id));
    if (ask.length === 0) break;
    trail.visit(ask.length);
    const page = await job.jira.post<CommentListPage>(COMMENT_LIST_PATH, { ids: ask.map(Number) });
    for (const c of page.values ?? []) {
      const id = String(c.id);
      if (wanted.has(id)) found.set(id, { comment: c, issueId: issueIdOf(c) });
    }
    if (page.isLast !== false) break;
  }
  return [...found.values()];
}
