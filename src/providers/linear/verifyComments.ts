/**
 * The comments' pass of Linear's verify of a team (./verify.ts; the steps: ../kit/verify.ts),
 * compared with `work_item_comments` of the team (a comment is in its issue's source: the store
 * finds it through its issue's row, ../../sinks/normalized/tombstones.ts).
 *
 * The listing is the root `comments` connection filtered to the team's issues (`filter: { issue: {
 * team: { key: { in: [team] } } } }`; Linear's `CommentFilter` names a comment's issue by a
 * `NullableIssueFilter`) with only `id updatedAt` (about 1.2 complexity points a comment), archived ones
 * included (an archive is not a delete), 250 a page, `orderBy: updatedAt` (latest first), paged by
 * the same update-time keyset as the issues' listing: one request per 250 comments. An unlisted
 * comment is confirmed by one `comments(filter: { id: { in: … } }, includeArchived: true)` query per
 * batch; the ids Linear does not answer (deleted with `commentDelete`, or gone with their issue) are
 * marked deleted. Missing and stale comments are read by id with the fields a family read writes of
 * a comment (and their `issueId`) and written through the unit's fenced sink, mapped as the family
 * read maps them (mapping.ts `commentRow`); one on no issue is not a work item's and is left out.
 */
import { PageWriter } from '../kit/write.js';
import { commentRow, type LnComment, type LnConnection } from './mapping.js';
import {
  commentFilter,
  COMMENTS_BY_IDS_QUERY,
  COMMENTS_VERIFY_CONFIRM_QUERY,
  COMMENTS_VERIFY_LIST_QUERY,
} from './queries.js';
import type { Job } from './units.js';
import type { LinearPass } from './verifyPass.js';

const SURFACE = 'work_item_comments';

/** Comments read by id at once: Linear's most for `first`. */
const FETCH_PAGE = 250;

/** A comment read by id: the family's fields and its issue's id. */
interface FetchedComment extends LnComment {
  issueId: string | null;
}

/** The comments' pass of the unit's team; the rows it writes are added to `counts`. */
export function commentPass(job: Job, counts: Record<string, number>): LinearPass {
  const writer = new PageWriter(job.ctx, counts);
  return {
    surface: SURFACE,
    list: { query: COMMENTS_VERIFY_LIST_QUERY, field: 'comments', filter: (upTo) => commentFilter(job.teams, upTo) },
    confirm: { query: COMMENTS_VERIFY_CONFIRM_QUERY, field: 'comments' },
    fetch: (ids) => fetchComments(job, writer, ids),
  };
}

/**
 * Reads these comments by id, `FETCH_PAGE` at a time, and writes each page's rows before asking for
 * the next. An id Linear no longer has is simply not written.
 */
async function fetchComments(job: Job, writer: PageWriter, ids: readonly string[]): Promise<void> {
  const q = COMMENTS_BY_IDS_QUERY;
  for (let n = 0; n < ids.length; n += FETCH_PAGE) {
    const part = ids.slice(n, n + FETCH_PAGE);
    const trail = job.pages.trail(`query ${q.name}`);
    let after: string | null = null;
    for (;;) {
      trail.visit(after);
      const data: { comments: LnConnection<FetchedComment> } = await job.client.query(q.name, q.text, {
        ids: part,
        first: part.length,
        after,
      });
      const { nodes, pageInfo } = data.comments;
      await writer.write(
        SURFACE,
        nodes.flatMap((c) => (c.issueId ? [commentRow(job.scope, c.issueId, c)] : [])),
      );
      if (!pageInfo.hasNextPage || !pageInfo.endCursor || nodes.length === 0) break;
      after = pageInfo.endCursor;
    }
  }
}
