/**
 * GitHub's verify of a repository's issue comments (`work-item-comments`; the steps:
 * ../kit/verify.ts), compared with `work_item_comments` (a comment is in its issue's source).
 *
 * The listing is the repository's comments list (`GET /repos/{owner}/{repo}/issues/comments`,
 * `sort=updated&direction=asc`, 100 a page, by keyset on `updated_at` like the comments unit's read:
 * pages.ts `keysetPages`). It lists comments on pull requests too, which are left out as the
 * comments unit leaves them out, and holds each comment whole: a missing or stale one is written
 * from the page just listed, mapped as the comments unit maps it, without asking for it again.
 *
 * GitHub has no read of several comments by id: an unseen one is confirmed by `GET
 * /repos/{owner}/{repo}/issues/comments/{comment_id}` (4 at a time): 404 (deleted, or deleted with
 * its issue) and 410 are gone, and so is an answer of another repository's issue (one transferred
 * with its comments: GitHub answers 301 to its new place, which the client follows); any other
 * answer is the comment as it is now, compared like a listed one.
 */
import type { ListedItem } from '../../domain/verify.js';
import type { UnitResult } from '../../sdk/types.js';
import { freshProgress, resumableRead, type KeysetFormat } from '../kit/resume.js';
import { CONFIRM_SINGLES, runVerify, sourceScope, VERIFY_COUNTS, type VerifyReader } from '../kit/verify.js';
import { PageWriter } from '../kit/write.js';
import { commentRow, isPullRequestComment, type GhComment } from './mapping.js';
import { details, keysetPages, type Job } from './pages.js';
import { inRepository, isGone, timeOf } from './verify.js';

const SURFACE = 'work_item_comments';

/** A verify's checkpoint: its listing's keyset, then its pass through the store; verify and row counts. */
const VERIFY_RESUME: KeysetFormat = { v: 1, order: 'asc', surfaces: [...VERIFY_COUNTS, SURFACE] };

/** The verify unit of the comments list: its result counts the comments written and the verify's. */
export function verifyComments(job: Job): Promise<UnitResult> {
  return resumableRead(job.ctx, VERIFY_RESUME, async (p, resumed) => {
    await runVerify(job.ctx, commentReader(job, p.counts), { f: VERIFY_RESUME, p, resumed });
    const written = p.counts[SURFACE] ?? 0;
    return {
      items: written,
      touchedSurfaces: written > 0 ? [SURFACE] : [],
      verify: Object.fromEntries(VERIFY_COUNTS.map((k) => [k, p.counts[k] ?? 0])),
    };
  });
}

/**
 * The reader: the comments list's issue comments by id, those of the last page listed (and of the
 * last batch confirmed) kept, so `fetch` writes them without asking again.
 */
export function commentReader(job: Job, counts: Record<string, number>): VerifyReader {
  const known = new Map<string, GhComment>();
  const writer = new PageWriter(job.ctx, counts);
  const keep = (comments: readonly GhComment[]): ListedItem[] => {
    known.clear();
    for (const c of comments) known.set(String(c.id), c);
    return comments.map((c) => ({ id: String(c.id), updatedAt: timeOf(c.updated_at) }));
  };
  let home: string | null = null; // the repository's URL as the listing names it
  const read = (ids: readonly string[]) => details(job, ids, (id) => readComment(job, id, home));
  return {
    scope: sourceScope(job.ctx, job.scope.provider, SURFACE, job.scope.container),
    confirmBatch: CONFIRM_SINGLES,
    async *list(from) {
      const place = { f: VERIFY_RESUME, p: freshProgress(VERIFY_RESUME), resumed: false };
      const route = 'GET /repos/{owner}/{repo}/issues/comments';
      const params = { sort: 'updated', direction: 'asc' };
      for await (const page of keysetPages<GhComment>({ ...job, since: from }, route, params, place)) {
        home = (page[0] && repositoryUrl(page[0])) ?? home;
        yield keep(page.filter((c) => !isPullRequestComment(c)));
      }
    },
    async confirm(ids) {
      return keep((await read(ids)).filter((c): c is GhComment => c !== null));
    },
    async fetch(ids) {
      // Every id the kit fetches is of the page or batch just handed to it; anything else is read.
      const comments = ids.map((id) => known.get(id)).filter((c): c is GhComment => c !== undefined);
      const others = await read(ids.filter((id) => !known.has(id)));
      comments.push(...others.filter((c): c is GhComment => c !== null));
      await writer.write(
        SURFACE,
        comments.map((c) => commentRow(job.scope, c)),
      );
    },
  };
}

/** The API URL of the repository of a comment's issue (its `issue_url` without `/issues/{number}`). */
function repositoryUrl(c: GhComment): string | undefined {
  const m = /^(.*)\/issues\/\d+$/.exec(c.issue_url ?? '');
  return m?.[1];
}

/**
 * Comment `id` as GitHub has it now on an issue of this repository, or null when it is not there:
 * deleted (404, or 410), or moved with its issue to another repository. `home`: the repository's
 * URL as the listing named it (a renamed repository's new one), when it showed one.
 */
async function readComment(job: Job, id: string, home: string | null): Promise<GhComment | null> {
  if (!/^\d+$/.test(id)) return null; // no GitHub comment id: nothing GitHub has
  const { owner, repo } = job.repo;
  try {
    const res = await job.gh.request('GET /repos/{owner}/{repo}/issues/comments/{comment_id}', {
      owner,
      repo,
      comment_id: Number(id),
    });
    const c = res.data as unknown as GhComment;
    const ours = String(c.id) === id && !isPullRequestComment(c) && inRepository(job, repositoryUrl(c), home);
    return ours ? c : null;
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
}
