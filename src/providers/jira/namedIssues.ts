/**
 * The work-item family unit (./workItems.ts) and the issues webhook deliveries named. Jira's search
 * is eventually consistent: an issue edited a moment ago may not be found by it yet, so a run armed
 * by a delivery could search, find nothing new and end. An incremental unit therefore also reads
 * each issue a delivery named for its project (`UnitContext.namedItems`) that its search did not
 * write, directly — `GET /rest/api/3/issue/{id}` (Data Center `/rest/api/2/issue/{id}`), which is
 * not behind the index — and writes it like a search's; an issue answering 404 was deleted (its
 * delete delivery tombstoned it) and one now in another project is left to that project's runs.
 * What it read is then forgotten; an issue named again while the unit ran is read by the next run.
 */
import { NonRetryableError } from '../../errors.js';
import type { UnitResult } from '../../sdk/types.js';
import { mapLimited } from '../kit/concurrency.js';
import { jiraApi } from './api.js';
import type { JiraIssue } from './mapping.js';
import type { Job } from './units.js';
import { familyAsk, familyRead, writeIssues } from './workItems.js';

/** Named issues read by one unit attempt at most (more are read by the next run). */
export const NAMED_ISSUES_PER_UNIT = 500;

/** The family's unit: the search of its window, then the named issues it did not write. */
export function workItemFamily(job: Job): Promise<UnitResult> {
  return familyRead(job, (written, counts) => readNamedIssues(job, written, counts));
}

/**
 * Reads and writes the named issues of the unit's project that `written` does not hold; forgets
 * every named issue it listed. Backfills leave them to incremental runs. Returns how many it wrote.
 */
export async function readNamedIssues(
  job: Job,
  written: ReadonlySet<string>,
  counts: Record<string, number>,
): Promise<number> {
  const named = job.ctx.namedItems;
  if (!named || job.backfill) return 0;
  const ids = await named.list(NAMED_ISSUES_PER_UNIT);
  const wanted = ids.filter((id) => !written.has(id) && /^[0-9]{1,18}$/.test(id));
  const read = await mapLimited(wanted, job.detailConcurrency, (id) => readIssue(job, id), job.ctx.signal);
  const issues = read.filter((i): i is JiraIssue => i !== null && projectOf(i) === job.project);
  if (issues.length > 0) await writeIssues(job, issues, counts);
  await named.forget(ids);
  return issues.length;
}

function projectOf(issue: JiraIssue): string | null {
  return (issue.fields as { project?: { key?: string } } | undefined)?.project?.key ?? null;
}

/** The issue as Jira has it now, with the fields a search asks for; null when it answers 404. */
async function readIssue(job: Job, id: string): Promise<JiraIssue | null> {
  const ask = familyAsk(job);
  try {
    return await job.jira.get<JiraIssue>(jiraApi(job.config).issue(id), {
      fields: ask.fields.join(','),
      ...(ask.expand ? { expand: ask.expand } : {}),
    });
  } catch (err) {
    if (err instanceof NonRetryableError && err.category === 'not_found') return null;
    throw err;
  }
}
