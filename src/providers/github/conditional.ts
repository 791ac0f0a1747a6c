/**
 * Conditional polls: an incremental unit that finds its list unchanged since its last poll spends
 * nothing of the primary rate limit.
 *
 * GitHub answers a request carrying `If-None-Match: <the ETag of an earlier answer>` with
 * `304 Not Modified` when the answer would be the same, and "making a conditional request does not
 * count against your primary rate limit if a 304 response is returned and the request was made
 * while correctly authorized" (docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api
 * #use-conditional-requests-if-appropriate; docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api).
 *
 * An incremental read's own requests cannot be made conditional: their URL carries `since=<the
 * watermark less the overlap>`, a new URL every poll, and an ETag answers one URL. So each
 * incremental read starts with a probe whose URL never changes: the list's first page with no
 * `since`, newest first (`sort=updated&direction=desc` for the issues and comments lists; the
 * commits list is newest first by itself), `per_page` as the read's. Any edit moves an object to
 * the head of that page (its `updated_at` is now; a pushed commit is the branch's newest), so the
 * page, and its ETag, change whenever the read would find anything: a 304 means nothing changed
 * since the probe of the poll that recorded the ETag. The unit then ends without reading, writes
 * nothing, and its watermark moves to `before` as after an empty read. On any other answer the
 * unit reads as it would without a probe (one request more than without it, on polls that find
 * something).
 *
 * Why a 304 may move the watermark: the tag is recorded only after the read that followed its
 * probe has written its rows and reached the end of its list (not one stopped by `maxPages`, a
 * rate-limit deferral or a failure), so every change up to that probe is stored; a crash between
 * the writes and the record leaves the older tag (or none), whose probe answers 200 and reads
 * again. A 304 says no change came after that probe. Other limits of the probe:
 * - Only incremental units probe, and only a first attempt (a resumed one reads on from its
 *   checkpoint). A backfill, full resync or verify reads its window in full.
 * - The request key holds the probe's URL and the datasets the unit writes from the list, so a
 *   dataset enabled later (whose watermark starts over) never takes another unit set's tag.
 * - An integration that is not in the database (deleted while the unit runs) keeps no tags: no
 *   probe is sent for it, the unit reads as without one.
 * - A tag recorded by a unit whose probe came before another's is still true of its own probe:
 *   whichever is recorded last, a 304 against it skips nothing unwritten.
 */
import type { UnitResult } from '../../sdk/types.js';
import { readProviderEtag, recordProviderEtag } from '../../store/etags.js';
import { headerOf } from '../kit/headers.js';
import { PER_PAGE, type Job } from './pages.js';

/** The repository lists an incremental unit probes. */
export type ProbeRoute =
  | 'GET /repos/{owner}/{repo}/issues'
  | 'GET /repos/{owner}/{repo}/issues/comments'
  | 'GET /repos/{owner}/{repo}/commits';

/** The probes of the lists: the first page, newest first, without `since`. */
export const PROBES = {
  issues: { route: 'GET /repos/{owner}/{repo}/issues', params: { state: 'all', sort: 'updated', direction: 'desc' } },
  comments: { route: 'GET /repos/{owner}/{repo}/issues/comments', params: { sort: 'updated', direction: 'desc' } },
  commits: { route: 'GET /repos/{owner}/{repo}/commits', params: {} },
} as const satisfies Record<string, Probe>;

export interface Probe {
  route: ProbeRoute;
  params: Readonly<Record<string, string>>;
}

/** What an unchanged list's unit returns: nothing written, the watermark to `before`. */
const UNCHANGED: UnitResult = { items: 0, touchedSurfaces: [], notModified: true };

/** Whether `job` probes before it reads: an incremental unit's first attempt. */
export function probes(job: Job): boolean {
  return job.ctx.unit.mode === 'incremental' && job.ctx.checkpoint === null;
}

/** The probe's URL for `job`'s repository. */
export function probeUrl(job: Job, probe: Probe): string {
  const { owner, repo } = job.repo;
  return job.gh.request.endpoint(probe.route, { owner, repo, per_page: PER_PAGE, ...probe.params }).url;
}

/** The key a probe's ETag is kept under: the datasets written from the list, and the probe's URL. */
export function requestKey(job: Job, url: string): string {
  return `${[...job.datasets].sort().join('+')} GET ${url}`;
}

/**
 * `read` behind the list's probe (module comment): a 304 ends the unit unchanged; otherwise `read`
 * runs, and the probe's ETag is recorded once it has read its list to the end (its result moves the
 * watermark to `before`: no `watermark` of its own).
 */
export async function conditionalRead(job: Job, probe: Probe, read: () => Promise<UnitResult>): Promise<UnitResult> {
  if (!probes(job)) return read();
  const { ctx } = job;
  const url = probeUrl(job, probe);
  const key = requestKey(job, url);
  const stored = await readProviderEtag(ctx.db, ctx.integration.id, key);
  if (stored === null) return read();
  job.pages.trail(`GET ${new URL(url).pathname} (probe)`).visit(url);
  const headers = stored.etag === null ? {} : { 'if-none-match': stored.etag };
  const res = await job.gh.request({ method: 'GET', url, headers });
  if (res.status === 304) return { ...UNCHANGED };
  const result = await read();
  const etag = headerOf(res.headers, 'etag');
  if (etag !== undefined && result.watermark === undefined) {
    await recordProviderEtag(ctx.db, ctx.integration.id, key, etag, ctx.clock.now());
  }
  return result;
}
