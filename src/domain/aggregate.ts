import type { RunStatus, UnitStatus } from './statuses.js';

export type UnitCounts = Partial<Record<UnitStatus, number>>;

export interface RunOutcome {
  status: RunStatus;
  total: number;
  completed: number;
  failed: number;
  cancelled: number;
  error: string | null;
}

/** The terminal status of a run whose units are all terminal (SPEC §3); null if any is not. */
export function aggregateRun(counts: UnitCounts): RunOutcome | null {
  const n = (s: UnitStatus) => counts[s] ?? 0;
  const open = n('planned') + n('dispatching') + n('running') + n('retrying');
  if (open > 0) return null;
  const completed = n('success');
  const failed = n('failed');
  const cancelled = n('cancelled');
  const total = completed + failed + cancelled;
  const base = { total, completed, failed, cancelled };
  if (total === 0) return { ...base, status: 'failed', error: 'no sync units planned' };
  if (completed === 0 && failed === 0) return { ...base, status: 'cancelled', error: null };
  if (failed === 0) return { ...base, status: 'success', error: null };
  if (completed === 0) return { ...base, status: 'failed', error: `${failed} of ${total} units failed` };
  return { ...base, status: 'partial_failed', error: `${failed} of ${total} units failed` };
}

/** The JobRun status that mirrors a terminal run status. */
export function jobRunStatusFor(run: RunStatus): 'success' | 'failed' | 'cancelled' | 'running' | 'pending' {
  switch (run) {
    case 'planned':
      return 'pending';
    case 'dispatching':
      return 'running';
    case 'success':
      return 'success';
    case 'cancelled':
      return 'cancelled';
    case 'failed':
    case 'partial_failed':
      return 'failed';
  }
}
