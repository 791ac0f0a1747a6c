/**
 * Linear's status rule (docs/normalized-store.md#status-normalization): an issue's workflow state
 * type onto `work_items.status`. backlog, unstarted, triage → todo; started → in_progress;
 * completed → done; canceled (or cancelled) → cancelled.
 */
import type { WorkItemStatus } from '../../sdk/normalized.js';
import { lookupStatus } from '../kit/status.js';

export interface LinearStatusInput {
  stateType: string;
}

const BY_STATE_TYPE: Readonly<Record<string, WorkItemStatus>> = {
  backlog: 'todo',
  unstarted: 'todo',
  triage: 'todo',
  started: 'in_progress',
  completed: 'done',
  canceled: 'cancelled',
  cancelled: 'cancelled',
};

/** The normalized status; throws `ValidationError` (`status.stateType`) for a type not listed. */
export function linearStatus(input: LinearStatusInput): WorkItemStatus {
  return lookupStatus(BY_STATE_TYPE, input.stateType, 'status.stateType');
}
