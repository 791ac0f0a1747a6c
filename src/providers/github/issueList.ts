/**
 * The datasets read from the repository's issues list (`GET /issues?state=all&sort=updated&
 * direction=asc&since=<window start>`, issues and pull requests together): `work-items` (the
 * issues), `pull-requests` and `pull-request-reviews` (the pull requests, each with its detail or
 * reviews). A unit carrying several of them (`UnitInfo.datasets`) reads each page once and writes
 * every one's rows from it. An incremental unit probes the list first (conditional.ts): unchanged
 * since its last poll, it reads nothing.
 */
import { NonRetryableError } from '../../errors.js';
import type { UnitResult } from '../../sdk/types.js';
import { conditionalRead, PROBES } from './conditional.js';
import { workItemRow, type GhIssue } from './mapping.js';
import { resumableRead, type KeysetFormat } from '../kit/resume.js';
import { ascendingWindow, issuePages, writePages, type Job, type Output, type Parts } from './pages.js';
import { pullRows, reviewRows } from './pulls.js';

type Part = (job: Job) => Output<GhIssue>;

const PARTS: Readonly<Record<string, Part>> = {
  'work-items': (job) => ({
    surface: 'work_items',
    rows: (page) => page.filter((i) => !i.pull_request).map((i) => workItemRow(job.scope, i)),
  }),
  'pull-requests': (job) => ({ surface: 'pull_requests', rows: (page) => pullRows(job, page) }),
  'pull-request-reviews': (job) => ({ surface: 'pull_request_reviews', rows: (page) => reviewRows(job, page) }),
};

/** Whether `dataset` is read from the issues list. */
export function readFromIssueList(dataset: string): boolean {
  return Object.hasOwn(PARTS, dataset);
}

/**
 * A page in parts of as many pull requests as are asked for at once, when the unit asks for their
 * details or reviews (pages.ts `inParts`); whole pages otherwise.
 */
function partsFor(job: Job): Parts<GhIssue> | undefined {
  const details = job.datasets.some((d) => d === 'pull-requests' || d === 'pull-request-reviews');
  return details ? { costly: (i) => Boolean(i.pull_request), most: job.detailConcurrency } : undefined;
}

/**
 * Reads the unit's window of the issues list once for each of the unit's datasets (its own first):
 * a backfill stops past the window's end; an incremental unit after `maxPages` pages, its watermark
 * then moving only to the latest `updated_at` read. A unit deferred for a rate limit hands its
 * deferral the latest `updated_at` it wrote (../kit/resume.ts); its next attempt reads on from there.
 * An incremental first attempt whose probe answers 304 reads nothing (conditional.ts).
 */
export function readIssueList(job: Job): Promise<UnitResult> {
  const outputs = job.datasets.map((d) => {
    const part = Object.hasOwn(PARTS, d) ? PARTS[d] : undefined;
    if (!part) {
      const msg = `github: dataset ${d} is not read from the issues list (unit of ${job.ctx.unit.datasetKey})`;
      throw new NonRetryableError(msg, 'adapter_error');
    }
    return part(job);
  });
  const f: KeysetFormat = { v: 1, order: 'asc', surfaces: outputs.map((o) => o.surface) };
  return conditionalRead(job, PROBES.issues, () =>
    resumableRead(job.ctx, f, (p, resumed) => {
      const place = { f, p, resumed };
      const w = ascendingWindow(job, issuePages<GhIssue>(job, place), place, partsFor(job));
      return writePages(job, w.pages, outputs, w.watermark, p.counts);
    }),
  );
}
