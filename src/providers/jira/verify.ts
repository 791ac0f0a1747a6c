/**
 * Jira's verify of a project's issues (the steps: ../kit/verify.ts). The listing is the search with
 * `fields=updated` (ids and update times only), 100 a page, by `updated` ascending; a resumed one
 * searches again from the latest `updated` it compared. Missing and stale issues are fetched with
 * their family by `id in (…)` and written like a family read's (workItems.ts).
 *
 * The search is eventually consistent, and its pages are positions: an issue edited during the
 * listing moves to its end and one that was not yet listed can slip past a page boundary. So an
 * issue the listing did not show is first asked for by `id in (…)` again, and one the search still
 * does not find is read directly (`GET /rest/api/3/issue/{id}`): only a 404 there marks it deleted
 * (Jira deletes issues for good; an issue the credential may no longer see answers the same).
 *
 * On Data Center the listing is `GET /rest/api/2/search` with `fields=updated`, read as the keyset of
 * ./searchDc.ts (from the latest `updated` listed, so an issue edited during the listing shifts no
 * page), and the direct read `GET /rest/api/2/issue/{id}`.
 *
 * When the unit carries `work-item-comments`, a second pass verifies the project's comments
 * (./verifyComments.ts, Cloud only); a deferred unit's checkpoint names the pass it stood in.
 */
import type { ListedItem } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import type { UnitResult } from '../../sdk/types.js';
import { mapLimited } from '../kit/concurrency.js';
import { resumableRead, type KeysetFormat } from '../kit/resume.js';
import { runVerify, sourceScope, VERIFY_COUNTS, type VerifyReader } from '../kit/verify.js';
import { jiraApi } from './api.js';
import { deploymentOf } from './config.js';
import { idsJql } from './jql.js';
import type { IssuePage } from './searchDc.js';
import { parseJiraTime } from './timeZone.js';
import type { Job } from './units.js';
import { commentReader } from './verifyComments.js';
import { callerTimeZone, FAMILY, fetchFamily, idPages, result, windowPages } from './workItems.js';

/** Issues a listing page holds. */
const LIST_PAGE = 100;

/** A verify's checkpoint: its listing's keyset, then its pass through the store; verify and family counts. */
const VERIFY_RESUME: KeysetFormat = { v: 1, order: 'asc', surfaces: [...VERIFY_COUNTS, ...Object.values(FAMILY)] };

interface UpdatedIssue {
  id: string;
  fields?: { updated?: string };
}

/** A listing asks for ids and update times only. */
const LIST_ASK = { fields: ['updated'], maxResults: LIST_PAGE };

/** The verify unit of the work-item family: its result counts the family's rows and the verify's. */
export function verifyFamily(job: Job): Promise<UnitResult> {
  return resumableRead(job.ctx, VERIFY_RESUME, async (p, resumed) => {
    const readers = [await verifyReader(job, p.counts)];
    if (verifiesComments(job)) readers.push(commentReader(job, p.counts));
    await runVerify(job.ctx, readers, { f: VERIFY_RESUME, p, resumed });
    const verify = Object.fromEntries(VERIFY_COUNTS.map((k) => [k, p.counts[k] ?? 0]));
    const family = Object.fromEntries(Object.values(FAMILY).map((s) => [s, p.counts[s] ?? 0]));
    return { ...result(job, family), verify };
  });
}

/** Whether the unit verifies comments too: it carries them, on Cloud (./verifyComments.ts). */
function verifiesComments(job: Job): boolean {
  return job.datasets.includes('work-item-comments') && deploymentOf(job.config) === 'cloud';
}

async function verifyReader(job: Job, counts: Record<string, number>): Promise<VerifyReader> {
  const timeZone = await callerTimeZone(job);
  const { ctx } = job;
  return {
    scope: sourceScope(ctx, job.scope.provider, 'work_items', job.project),
    list: (from) =>
      listing(windowPages(job, { project: job.project, since: from, before: null, timeZone }, LIST_ASK, ' (ids)')),
    confirm: (ids) => confirm(job, ids),
    fetch: (ids) => fetchFamily(job, ids, counts),
  };
}

/** A search's pages as ids and update times. */
async function* listing(pages: AsyncGenerator<IssuePage>): AsyncGenerator<ListedItem[]> {
  for await (const page of pages) yield page.issues.map(listed);
}

function listed(i: UpdatedIssue): ListedItem {
  const ms = i.fields?.updated ? parseJiraTime(i.fields.updated) : Number.NaN;
  return { id: String(i.id), updatedAt: Number.isFinite(ms) ? new Date(ms) : null };
}

/** Of `ids`, the issues Jira has: by `id in (…)`, and those it does not find there read directly. */
async function confirm(job: Job, ids: readonly string[]): Promise<ListedItem[]> {
  const numeric = ids.filter((id) => /^[0-9]{1,18}$/.test(id));
  const found: ListedItem[] = [];
  if (numeric.length > 0) {
    for await (const page of listing(idPages(job, idsJql(job.project, numeric), LIST_ASK, ' (ids)'))) {
      found.push(...page);
    }
  }
  const seen = new Set(found.map((i) => i.id));
  const unseen = ids.filter((id) => !seen.has(id));
  const direct = await mapLimited(unseen, job.detailConcurrency, (id) => readIssue(job, id), job.ctx.signal);
  return [...found, ...direct.filter((i): i is ListedItem => i !== null)];
}

/** The issue as Jira has it now, or null when it answers 404 (deleted, or no longer visible). */
async function readIssue(job: Job, id: string): Promise<ListedItem | null> {
  try {
    const issue = await job.jira.get<UpdatedIssue>(jiraApi(job.config).issue(id), {
      fields: 'updated',
    });
    return listed(issue);
  } catch (err) {
    if (err instanceof NonRetryableError && err.category === 'not_found') return null;
    throw err;
  }
}
