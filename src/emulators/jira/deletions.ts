/**
 * Deleting an issue, as Jira Cloud does it (`DELETE /rest/api/3/issue/{issueIdOrKey}`): for good,
 * with no trace left. The issue leaves its project's `issues` (what search lists, through the
 * search index) and `issuesById` (what `GET /issue/{id}` and its comment and changelog lists
 * read), so search no longer finds it and a read of it by id or key answers 404. Nothing else
 * changes: no other issue's `updated` moves, and an issue under a deleted epic renders without
 * its parent. Every deletion, whoever makes it (a test, churn), is reported to the site's watcher
 * (`watchDeletions`): the emulator sends its webhook from there.
 */
import { ValidationError } from '../../errors.js';
import type { IssueRec, SiteData } from './model.js';

/** Each site's deletion watcher (keyed by the site's data, so two emulators never share one). */
const watchers = new WeakMap<SiteData, (issue: IssueRec) => void>();

/** Calls `fn` with every issue deleted from `data` from now on (null: no one); one watcher per site. */
export function watchDeletions(data: SiteData, fn: ((issue: IssueRec) => void) | null): void {
  if (fn) watchers.set(data, fn);
  else watchers.delete(data);
}

/** The issue with id or key `idOrKey` (a key in any case), or undefined. */
export function findIssue(data: SiteData, idOrKey: string): IssueRec | undefined {
  const byId = data.issuesById.get(idOrKey);
  if (byId) return byId;
  const key = idOrKey.toUpperCase();
  return data.projects.find((p) => p.key === key.split('-')[0])?.issues.find((i) => i.key === key);
}

/**
 * Removes the issue with id or key `idOrKey` from every index that holds it and returns it; throws
 * when there is none.
 */
export function deleteIssue(data: SiteData, idOrKey: string): IssueRec {
  const issue = findIssue(data, idOrKey);
  if (!issue) throw new ValidationError('idOrKey', `no Jira issue ${idOrKey}`);
  const project = data.projects.find((p) => p.key === issue.projectKey);
  const at = project?.issues.indexOf(issue) ?? -1;
  if (project && at >= 0) project.issues.splice(at, 1);
  data.issuesById.delete(issue.id);
  watchers.get(data)?.(issue);
  return issue;
}
