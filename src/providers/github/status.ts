/**
 * GitHub issue state → the normalized `work_items.status` (open → todo, or in_progress when
 * labelled "in progress"; closed as not_planned → cancelled; other closed → done).
 *
 * Local stand-in with the same rules as the normalized store's `normalizeStatus({ provider:
 * 'github', … })`; replace its use with that helper once src/sinks/normalized is in this tree.
 */
export type WorkItemStatus = 'todo' | 'in_progress' | 'done' | 'cancelled';

const IN_PROGRESS_LABELS = new Set(['in progress', 'in-progress', 'in_progress']);

export function githubIssueStatus(
  state: string,
  stateReason: string | null,
  labels: readonly string[],
): WorkItemStatus {
  if (state.trim().toLowerCase() === 'closed') return stateReason === 'not_planned' ? 'cancelled' : 'done';
  return labels.some((l) => IN_PROGRESS_LABELS.has(l.trim().toLowerCase())) ? 'in_progress' : 'todo';
}
