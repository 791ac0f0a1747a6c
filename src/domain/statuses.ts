/** Run, unit, JobRun and outbox statuses (SPEC §2–§3) and their transition tables. */

export const RUN_STATUSES = ['planned', 'dispatching', 'success', 'partial_failed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['success', 'partial_failed', 'failed', 'cancelled'];

export const UNIT_STATUSES = ['planned', 'dispatching', 'running', 'retrying', 'success', 'failed', 'cancelled'] as const;
export type UnitStatus = (typeof UNIT_STATUSES)[number];
export const TERMINAL_UNIT_STATUSES: readonly UnitStatus[] = ['success', 'failed', 'cancelled'];

export type JobRunStatus = 'pending' | 'running' | 'success' | 'failed' | 'cancelled';
export type TriggeredBy = 'manual' | 'schedule' | 'backfill' | 'api';
export type SyncMode = 'incremental' | 'backfill' | 'full_resync';
export const SYNC_MODES: readonly SyncMode[] = ['incremental', 'backfill', 'full_resync'];
export type Tier = 'reference' | 'work_item';

export const OUTBOX_KINDS = ['dispatch_sync_run', 'finalize_sync_run', 'post_sync'] as const;
export type OutboxKind = (typeof OUTBOX_KINDS)[number];
export type OutboxStatus = 'pending' | 'dispatched';

export function isTerminalRun(status: RunStatus): boolean {
  return TERMINAL_RUN_STATUSES.includes(status);
}

export function isTerminalUnit(status: UnitStatus): boolean {
  return TERMINAL_UNIT_STATUSES.includes(status);
}

/** Who may move a unit, and why (SPEC §3). */
export type UnitEvent =
  | 'dispatch'
  | 'redispatch_stale'
  | 'claim'
  | 'succeed'
  | 'fail'
  | 'defer'
  | 'expire_retry'
  | 'expire_fail'
  | 'deny'
  | 'cancel';

const UNIT_TRANSITIONS: Record<UnitEvent, { from: readonly UnitStatus[]; to: UnitStatus }> = {
  dispatch: { from: ['planned', 'retrying'], to: 'dispatching' },
  redispatch_stale: { from: ['dispatching'], to: 'dispatching' },
  claim: { from: ['dispatching'], to: 'running' },
  succeed: { from: ['running'], to: 'success' },
  fail: { from: ['running'], to: 'failed' },
  defer: { from: ['running'], to: 'retrying' },
  expire_retry: { from: ['running'], to: 'retrying' },
  expire_fail: { from: ['running'], to: 'failed' },
  deny: { from: ['planned', 'dispatching'], to: 'failed' },
  cancel: { from: ['planned', 'dispatching', 'running', 'retrying'], to: 'cancelled' },
};

/** The status after `event`, or null when the event is not allowed from `from`. */
export function nextUnitStatus(from: UnitStatus, event: UnitEvent): UnitStatus | null {
  const t = UNIT_TRANSITIONS[event];
  return t.from.includes(from) ? t.to : null;
}

export type RunEvent = 'start_dispatch' | 'finalize' | 'deny_all' | 'cancel';

/** The run transitions: planned → dispatching → terminal, once. */
export function runEventAllowed(from: RunStatus, event: RunEvent): boolean {
  switch (event) {
    case 'start_dispatch':
      return from === 'planned';
    case 'finalize':
    case 'deny_all':
    case 'cancel':
      return !isTerminalRun(from);
  }
}
