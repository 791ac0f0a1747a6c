/**
 * Status normalization: each provider family's own status mapped onto `work_items.status`
 * (`todo | in_progress | done | cancelled`); the provider's text goes to `status_raw`.
 *
 * - GitHub (issue state + state_reason): open → todo, or in_progress when labelled "in progress"
 *   (also "in-progress", "in_progress", any case); closed with state_reason not_planned → cancelled;
 *   any other closed → done.
 * - Linear (workflow state type): backlog, unstarted, triage → todo; started → in_progress;
 *   completed → done; canceled (or cancelled) → cancelled.
 * - Jira (status category key + resolution): new → todo; indeterminate → in_progress; done → done,
 *   except that a done item resolved "Won't Do", "Duplicate" or "Cannot Reproduce" → cancelled (a
 *   resolution left on an item that was reopened does not cancel it).
 *
 * Values are matched ignoring case and surrounding spaces; a value outside these lists throws a
 * `ValidationError` naming the field (the provider decides whether to skip the item or fail).
 */
import { ValidationError } from '../../errors.js';
import type { WorkItemStatus } from './surfaces.js';

export type StatusInput =
  | { provider: 'github'; state: string; stateReason?: string | null; labels?: readonly string[] }
  | { provider: 'linear'; stateType: string }
  | { provider: 'jira'; category: string; resolution?: string | null };

/** The GitHub labels (lower case) that put an open issue in progress, and whose `labeled` event starts it. */
export const GITHUB_IN_PROGRESS_LABELS: readonly string[] = ['in progress', 'in-progress', 'in_progress'];

const IN_PROGRESS_LABELS = new Set(GITHUB_IN_PROGRESS_LABELS);

/** Whether a GitHub label name is an in-progress label (ignoring case and surrounding spaces). */
export function isGithubInProgressLabel(name: string): boolean {
  return IN_PROGRESS_LABELS.has(key(name));
}

const LINEAR: Readonly<Record<string, WorkItemStatus>> = {
  backlog: 'todo',
  unstarted: 'todo',
  triage: 'todo',
  started: 'in_progress',
  completed: 'done',
  canceled: 'cancelled',
  cancelled: 'cancelled',
};

const JIRA: Readonly<Record<string, WorkItemStatus>> = { new: 'todo', indeterminate: 'in_progress', done: 'done' };

/** Jira resolutions that mean the work was not done. */
export const JIRA_CANCELLED_RESOLUTIONS = ["won't do", 'duplicate', 'cannot reproduce'] as const;

/** Maps a provider's status onto the normalized one; throws `ValidationError` for an unknown value. */
export function normalizeStatus(input: StatusInput): WorkItemStatus {
  switch (input.provider) {
    case 'github':
      return github(input.state, input.stateReason ?? null, input.labels ?? []);
    case 'linear':
      return lookup(LINEAR, input.stateType, 'status.stateType');
    case 'jira':
      return jira(input.category, input.resolution ?? null);
    default:
      throw new ValidationError('status.provider', `unknown provider family ${JSON.stringify(providerOf(input))}`);
  }
}

function github(state: string, stateReason: string | null, labels: readonly string[]): WorkItemStatus {
  const s = key(state);
  if (s === 'open') return labels.some(isGithubInProgressLabel) ? 'in_progress' : 'todo';
  if (s === 'closed') return stateReason !== null && key(stateReason) === 'not_planned' ? 'cancelled' : 'done';
  throw new ValidationError('status.state', `expected open or closed, got ${JSON.stringify(state)}`);
}

function jira(category: string, resolution: string | null): WorkItemStatus {
  const status = lookup(JIRA, category, 'status.category');
  const cancelled = resolution !== null && (JIRA_CANCELLED_RESOLUTIONS as readonly string[]).includes(key(resolution));
  return status === 'done' && cancelled ? 'cancelled' : status;
}

function lookup(table: Readonly<Record<string, WorkItemStatus>>, value: string, field: string): WorkItemStatus {
  const k = typeof value === 'string' ? key(value) : '';
  if (!Object.hasOwn(table, k)) {
    throw new ValidationError(field, `expected one of ${Object.keys(table).join(', ')}, got ${JSON.stringify(value)}`);
  }
  return table[k]!;
}

/** Lower case, trimmed, typographic apostrophes as plain ones ("Won’t Do"). */
function key(value: string): string {
  return value
    .trim()
    .toLowerCase()
    .replace(/\u2019/g, "'");
}

function providerOf(input: never): unknown {
  return (input as { provider?: unknown }).provider;
}
