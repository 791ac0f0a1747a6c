/**
 * Creating, changing and deleting schedules: validated before anything is written, the next slot
 * computed in the schedule's time zone, and a NOTIFY so running schedulers re-read their wait.
 */
import type { Clock } from '../clock.js';
import type { Db, Tx } from '../db/types.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { getIntegration } from '../store/integrations.js';
import {
  deleteSchedule as deleteScheduleRow,
  getSchedule,
  insertSchedule,
  notifySchedulesChanged,
  updateSchedule as updateScheduleRow,
  type ScheduleMode,
  type ScheduleRow,
} from '../store/schedules.js';
import { nextSlot, validateSchedule } from './scheduleCron.js';

/** The modes a schedule may start: every mode but backfill. */
export const SCHEDULE_MODES = ['incremental', 'full_resync', 'verify'] as const satisfies readonly ScheduleMode[];

export interface NewSchedule {
  orgId: string;
  integrationId: string;
  cron: string;
  /** IANA time zone the cron expression is read in. @default 'UTC' */
  timezone?: string;
  /** @default 'incremental' */
  mode?: string;
  /** @default true */
  enabled?: boolean;
}

export interface SchedulePatch {
  cron?: string;
  timezone?: string;
  mode?: string;
  enabled?: boolean;
}

/** incremental, full_resync or verify; a backfill is refused because a cron slot gives it no window. */
export function validateScheduleMode(mode: string): ScheduleMode {
  if (mode === 'backfill') {
    throw new ValidationError(
      'mode',
      'a backfill needs a [since, before) window, which a schedule cannot give; schedule incremental ' +
        '(continues from the watermark), full_resync or verify, and trigger backfills by hand',
    );
  }
  if (!SCHEDULE_MODES.includes(mode as ScheduleMode))
    throw new ValidationError('mode', `must be one of ${SCHEDULE_MODES.join(', ')}`);
  return mode as ScheduleMode;
}

/** A new schedule's values, checked and in canonical form: what `createScheduleInTx` writes. */
export interface CheckedNewSchedule {
  orgId: string;
  integrationId: string;
  cron: string;
  timezone: string;
  mode: ScheduleMode;
  enabled: boolean;
}

/** Checks a new schedule (ValidationError naming the field); reads nothing. */
export function checkNewSchedule(s: NewSchedule, now: Date): CheckedNewSchedule {
  if (!s.orgId.trim()) throw new ValidationError('org', 'must not be empty');
  const mode = validateScheduleMode(s.mode ?? 'incremental');
  const { cron, timezone } = validateSchedule(s.cron, s.timezone ?? 'UTC', now);
  return { orgId: s.orgId, integrationId: s.integrationId, cron, timezone, mode, enabled: s.enabled ?? true };
}

/** Creates a schedule of an integration of the org (NotFoundError otherwise); its first slot is the next after now. */
export async function createSchedule(db: Db, clock: Clock, s: NewSchedule): Promise<ScheduleRow> {
  const now = clock.now();
  const checked = checkNewSchedule(s, now);
  return db.transaction((tx) => createScheduleInTx(tx, checked, now));
}

/** The same inside the caller's transaction, for values `checkNewSchedule` returned. */
export async function createScheduleInTx(tx: Tx, s: CheckedNewSchedule, now: Date): Promise<ScheduleRow> {
  const integration = await getIntegration(tx, s.integrationId, { orgId: s.orgId });
  if (!integration) throw new NotFoundError('integration', s.integrationId);
  const nextRunAt = s.enabled ? nextSlot(s.cron, s.timezone, now) : null;
  const row = await insertSchedule(tx, { ...s, nextRunAt }, now);
  await notifySchedulesChanged(tx);
  return row;
}

/** A patch with its mode checked, and its cron and time zone checked as far as they go without the row. */
export interface CheckedSchedulePatch extends Omit<SchedulePatch, 'mode'> {
  mode?: ScheduleMode;
}

/** Checks a patch (ValidationError naming the field) before any lookup, so bad input is a 400 for any id. */
export function checkSchedulePatch(patch: SchedulePatch, now: Date): CheckedSchedulePatch {
  const mode = patch.mode === undefined ? undefined : validateScheduleMode(patch.mode);
  if (patch.timezone !== undefined || patch.cron !== undefined) {
    validateSchedule(patch.cron ?? '* * * * *', patch.timezone ?? 'UTC', now);
  }
  return { ...patch, mode };
}

/**
 * Changes a schedule of the org. A new cron or time zone, or enabling it, moves the next slot to
 * the first after now (slots missed while disabled do not fire); disabling clears it.
 */
export async function updateSchedule(
  db: Db,
  clock: Clock,
  id: string,
  orgId: string | null,
  patch: SchedulePatch,
): Promise<ScheduleRow> {
  const now = clock.now();
  const checked = checkSchedulePatch(patch, now);
  return db.transaction((tx) => updateScheduleInTx(tx, id, orgId, checked, now));
}

/** The same inside the caller's transaction, for a patch `checkSchedulePatch` returned. */
export async function updateScheduleInTx(
  tx: Tx,
  id: string,
  orgId: string | null,
  patch: CheckedSchedulePatch,
  now: Date,
): Promise<ScheduleRow> {
  const row = await getSchedule(tx, id, { orgId: orgId ?? undefined, lock: true });
  if (!row) throw new NotFoundError('schedule', id);
  const { cron, timezone } = validateSchedule(patch.cron ?? row.cron, patch.timezone ?? row.timezone, now);
  const enabled = patch.enabled ?? row.enabled;
  const moved = cron !== row.cron || timezone !== row.timezone || (enabled && !row.enabled);
  const nextRunAt = !enabled
    ? null
    : moved || row.next_run_at === null
      ? nextSlot(cron, timezone, now)
      : row.next_run_at;
  const updated = await updateScheduleRow(
    tx,
    id,
    { cron, timezone, mode: patch.mode ?? row.mode, enabled, nextRunAt },
    now,
  );
  if (!updated) throw new NotFoundError('schedule', id);
  await notifySchedulesChanged(tx);
  return updated;
}

/** Deletes a schedule of the org (its JobRuns stay, unlinked); NotFoundError when there is none. */
export async function deleteSchedule(db: Db, id: string, orgId: string | null): Promise<ScheduleRow> {
  return db.transaction((tx) => deleteScheduleInTx(tx, id, orgId));
}

/** The same inside the caller's transaction. */
export async function deleteScheduleInTx(tx: Tx, id: string, orgId: string | null): Promise<ScheduleRow> {
  const row = await deleteScheduleRow(tx, id, orgId);
  if (!row) throw new NotFoundError('schedule', id);
  await notifySchedulesChanged(tx);
  return row;
}
