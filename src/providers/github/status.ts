/**
 * GitHub's status rule (docs/normalized-store.md#status-normalization): an issue's state and
 * state_reason, and its labels, onto `work_items.status`. Open → todo, or in_progress when labelled
 * "in progress" (also "in-progress", "in_progress", any case); closed with state_reason not_planned
 * → cancelled; any other closed → done.
 */
import { ValidationError } from '../../errors.js';
import type { WorkItemStatus } from '../../sdk/normalized.js';
import { statusKey } from '../kit/status.js';

export interface GithubStatusInput {
  state: string;
  stateReason?: string | null;
  labels?: readonly string[];
}

/** The GitHub labels (lower case) that put an open issue in progress, and whose `labeled` event starts it. */
export const GITHUB_IN_PROGRESS_LABELS: readonly string[] = ['in progress', 'in-progress', 'in_progress'];

const IN_PROGRESS_LABELS = new Set(GITHUB_IN_PROGRESS_LABELS);

/** Whether a GitHub label name is an in-progress label (ignoring case and surrounding spaces). */
export function isGithubInProgressLabel(name: string): boolean {
  return IN_PROGRESS_LABELS.has(statusKey(name));
}

/** The normalized status; throws `ValidationError` (`status.state`) for a state other than open or closed. */
export function githubStatus(input: GithubStatusInput): WorkItemStatus {
  const state = statusKey(input.state);
  if (state === 'open') return (input.labels ?? []).some(isGithubInProgressLabel) ? 'in_progress' : 'todo';
  if (state === 'closed') return notPlanned(input.stateReason ?? null) ? 'cancelled' : 'done';
  throw new ValidationError('status.state', `expected open or closed, got ${JSON.stringify(input.state)}`);
}

function notPlanned(stateReason: string | null): boolean {
  return stateReason !== null && statusKey(stateReason) === 'not_planned';
}
