/**
 * Run, unit, JobRun and outbox statuses (SPEC §2–§3) and their transition tables: the one place a
 * status or a status set is written. SQL renders these (src/store/sql.ts); it spells none itself.
 */

export const RUN_STATUSES = ['planned', 'dispatching', 'success', 'partial_failed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['success', 'partial_failed', 'failed', 'cancelled'];
/** Non-terminal ("live") runs: planned, dispatching. */
export const OPEN_RUN_STATUSES: readonly RunStatus[] = nonTerminal(RUN_STATUSES, TERMINAL_RUN_STATUSES);

export const UNIT_STATUSES = [
  'planned',
  'dispatching',
  'running',
  'retrying',
  'success',
  'failed',
  'cancelled',
] as const;
export type UnitStatus = (typeof UNIT_STATUSES)[number];
export const TERMINAL_UNIT_STATUSES: readonly UnitStatus[] = ['success', 'failed', 'cancelled'];
/** Non-terminal units: planned, dispatching, running, retrying. */
export const OPEN_UNIT_STATUSES: readonly UnitStatus[] = nonTerminal(UNIT_STATUSES, TERMINAL_UNIT_STATUSES);

export const JOB_RUN_STATUSES = ['pending', 'running', 'success', 'failed', 'cancelled'] as const;
export type JobRunStatus = (typeof JOB_RUN_STATUSES)[number];
export const TERMINAL_JOB_RUN_STATUSES: readonly JobRunStatus[] = ['success', 'failed', 'cancelled'];
/** JobRuns still open: pending, running. */
export const OPEN_JOB_RUN_STATUSES: readonly JobRunStatus[] = nonTerminal(JOB_RUN_STATUSES, TERMINAL_JOB_RUN_STATUSES);

export const OUTBOX_STATUSES = ['pending', 'dispatched'] as const;
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number];

/**
 * The status a row is created in (SPEC §3, §8): runs and units are planned (a unit through its column's
 * default), a JobRun starts pending. An outbox row is created by the arm transition.
 */
export const INITIAL_STATUS = { run: 'planned', unit: 'planned', jobRun: 'pending' } as const satisfies {
  run: RunStatus;
  unit: UnitStatus;
  jobRun: JobRunStatus;
};

/** What started a JobRun (`webhook`: a signed provider delivery armed the run). */
export const TRIGGERS = ['manual', 'schedule', 'backfill', 'api', 'webhook'] as const;
export type TriggeredBy = (typeof TRIGGERS)[number];
export const SYNC_MODES = ['incremental', 'backfill', 'full_resync', 'verify'] as const;
export type SyncMode = (typeof SYNC_MODES)[number];
/**
 * The modes whose successful units move their source's watermark (SPEC §8): a backfill reads a
 * past window and a verify compares listings, neither says everything up to its end was read.
 */
export const WATERMARK_MODES: readonly SyncMode[] = ['incremental', 'full_resync'];
export const TIERS = ['reference', 'work_item'] as const;
export type Tier = (typeof TIERS)[number];

export const OUTBOX_KINDS = ['dispatch_sync_run', 'finalize_sync_run', 'post_sync'] as const;
export type OutboxKind = (typeof OUTBOX_KINDS)[number];

export function isTerminalRun(status: RunStatus): boolean {
  return TERMINAL_RUN_STATUSES.includes(status);
}

export function isTerminalUnit(status: UnitStatus): boolean {
  return TERMINAL_UNIT_STATUSES.includes(status);
}

/**
 * One compare-and-set: the statuses it moves a row from, and the status it moves it to (or, for an
 * outcome decided at run time, the statuses it may move it to).
 */
export interface Transition<S extends string> {
  readonly from: readonly S[];
  readonly to: S | readonly S[];
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

export interface UnitTransition extends Transition<UnitStatus> {
  readonly to: UnitStatus;
}

/** The unit transitions (SPEC §3), as the SQL of src/store performs them. */
export const UNIT_TRANSITIONS = {
  /** dispatch_sync_run, within the caps: planned units at once, retrying ones once due (available_at ≤ now). */
  dispatch: { from: ['planned', 'retrying'], to: 'dispatching' },
  /** dispatch_sync_run: a dispatching unit gone stale (or never published) is published again. */
  redispatch_stale: { from: ['dispatching'], to: 'dispatching' },
  /** run_sync_unit: new lease owner, attempts+1. */
  claim: { from: ['dispatching'], to: 'running' },
  /** The lease holder's outcome, under its own live lease. */
  succeed: { from: ['running'], to: 'success' },
  fail: { from: ['running'], to: 'failed' },
  /** The lease holder defers: a provider rate limit, or an eligible soft timeout. */
  defer: { from: ['running'], to: 'retrying' },
  /** The reconciler, on an expired lease: eligible units retry, the others fail. */
  expire_retry: { from: ['running'], to: 'retrying' },
  expire_fail: { from: ['running'], to: 'failed' },
  /**
   * Total-cap denial (`dispatch_denied`): every unit not started — planned, retrying (due or not:
   * a denied run is finalized, so nothing may be left waiting) and stale dispatching ones.
   */
  deny: { from: ['planned', 'retrying', 'dispatching'], to: 'failed' },
  /** Run cancellation: any non-terminal unit. */
  cancel: { from: OPEN_UNIT_STATUSES, to: 'cancelled' },
} as const satisfies Record<UnitEvent, UnitTransition>;

/** The status after `event`, or null when the event is not allowed from `from`. */
export function nextUnitStatus(from: UnitStatus, event: UnitEvent): UnitStatus | null {
  const t: UnitTransition = UNIT_TRANSITIONS[event];
  return t.from.includes(from) ? t.to : null;
}

export type RunEvent = 'start_dispatch' | 'finalize' | 'deny_all' | 'cancel';

/** The run transitions (SPEC §3): planned → dispatching → terminal, once. */
export const RUN_TRANSITIONS = {
  /** dispatch_sync_run's first publish (sets started_at). */
  start_dispatch: { from: ['planned'], to: 'dispatching' },
  /** finalize_sync_run, once every unit is terminal: the outcome of the units (aggregateRun). */
  finalize: { from: OPEN_RUN_STATUSES, to: TERMINAL_RUN_STATUSES },
  /** Total-cap denial with nothing in flight. */
  deny_all: { from: OPEN_RUN_STATUSES, to: 'failed' },
  cancel: { from: OPEN_RUN_STATUSES, to: 'cancelled' },
} as const satisfies Record<RunEvent, Transition<RunStatus>>;

/** Whether `event` may move a run that is `from`. */
export function runEventAllowed(from: RunStatus, event: RunEvent): boolean {
  const t: Transition<RunStatus> = RUN_TRANSITIONS[event];
  return t.from.includes(from);
}

export type JobRunEvent = 'start' | 'complete';

/** The JobRun transitions (SPEC §3, an observer of its run). */
export const JOB_RUN_TRANSITIONS = {
  /** The run is dispatching. */
  start: { from: ['pending'], to: 'running' },
  /** The run is terminal (its JobRun status: jobRunStatusFor), by finalize or observer repair. */
  complete: { from: OPEN_JOB_RUN_STATUSES, to: TERMINAL_JOB_RUN_STATUSES },
} as const satisfies Record<JobRunEvent, Transition<JobRunStatus>>;

export type OutboxEvent = 'arm' | 'mark_dispatched';

/** The outbox row transitions (SPEC §4). */
export const OUTBOX_TRANSITIONS = {
  /** The wake-up upsert: a new, pending or dispatched row is pending. */
  arm: { from: OUTBOX_STATUSES, to: 'pending' },
  /** The relay's mark (or post_sync's acknowledgement), under the row's claim. */
  mark_dispatched: { from: ['pending'], to: 'dispatched' },
} as const satisfies Record<OutboxEvent, Transition<OutboxStatus>>;

/** The members of `all` that are not in `terminal`, in `all`'s order. */
function nonTerminal<S extends string>(all: readonly S[], terminal: readonly S[]): readonly S[] {
  return all.filter((s) => !terminal.includes(s));
}
