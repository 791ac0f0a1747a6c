/**
 * Jira's status rule (docs/normalized-store.md#status-normalization): an issue's status category
 * key and resolution onto `work_items.status`. new → todo; indeterminate → in_progress; done →
 * done, except that a done item resolved "Won't Do", "Duplicate" or "Cannot Reproduce" →
 * cancelled (a resolution left on an item that was reopened does not cancel it).
 */
import type { WorkItemStatus } from '../../sdk/normalized.js';
import { lookupStatus, statusKey } from '../kit/status.js';

export interface JiraStatusInput {
  category: string;
  resolution?: string | null;
}

const BY_CATEGORY: Readonly<Record<string, WorkItemStatus>> = {
  new: 'todo',
  indeterminate: 'in_progress',
  done: 'done',
};

/** Jira resolutions that mean the work was not done. */
export const JIRA_CANCELLED_RESOLUTIONS = ["won't do", 'duplicate', 'cannot reproduce'] as const;

/** The normalized status; throws `ValidationError` (`status.category`) for a category not listed. */
export function jiraStatus(input: JiraStatusInput): WorkItemStatus {
  const status = lookupStatus(BY_CATEGORY, input.category, 'status.category');
  return status === 'done' && cancels(input.resolution ?? null) ? 'cancelled' : status;
}

function cancels(resolution: string | null): boolean {
  return resolution !== null && (JIRA_CANCELLED_RESOLUTIONS as readonly string[]).includes(statusKey(resolution));
}
