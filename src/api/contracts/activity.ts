/**
 * Contract of the activity report behind the dashboard's charts: per hour, what ended (runs and
 * units by status), the drain rate, rate-limit deferrals, the outbox's sampled depth and (admin
 * tokens only) reconciler passes; per UTC day, the work-item-metrics handler's latest figures.
 */
import { z } from 'zod';
import {
  TERMINAL_RUN_STATUSES,
  TERMINAL_UNIT_STATUSES,
  type RunStatus,
  type UnitStatus,
} from '../../domain/statuses.js';
import { TimeOut } from './common.js';
import { AUTH_ERRORS, endpoint, NoParams, V1 } from './endpoint.js';

const Id = z.string().meta({ format: 'uuid' });
const Count = z.number().int().min(0);
const Hours = z.number().min(0).nullable();

/** Longest window, in hours (30 days). */
export const MAX_ACTIVITY_HOURS = 720;
export const DEFAULT_ACTIVITY_HOURS = 24;
/** Longest span of daily metrics, in days. */
export const MAX_ACTIVITY_DAYS = 90;
export const DEFAULT_ACTIVITY_DAYS = 14;

/** A query integer from 1 to `max`, given as decimal digits. */
function upTo(max: number, description: string, example: string) {
  const message = `must be an integer from 1 to ${max}`;
  return z
    .string()
    .regex(/^[0-9]{1,3}$/, message)
    .transform(Number)
    .refine((n) => n >= 1 && n <= max, message)
    .optional()
    .meta({ description, example });
}

/** One count per member of `keys`, in their order. */
function counts<K extends string>(keys: readonly K[]) {
  return z.strictObject(Object.fromEntries(keys.map((k) => [k, Count])) as Record<K, typeof Count>);
}

export const ActivityQuery = z.strictObject({
  hours: upTo(
    MAX_ACTIVITY_HOURS,
    `the hourly series cover the current hour and the hours before it, this many in all, 1–${MAX_ACTIVITY_HOURS} ` +
      `(default ${DEFAULT_ACTIVITY_HOURS})`,
    '24',
  ),
  days: upTo(
    MAX_ACTIVITY_DAYS,
    `the daily metrics cover today (UTC) and the days before it, this many in all, 1–${MAX_ACTIVITY_DAYS} ` +
      `(default ${DEFAULT_ACTIVITY_DAYS})`,
    '14',
  ),
});

export const ActivityHour = z
  .strictObject({
    start: TimeOut.meta({ description: 'the hour (UTC) this bucket starts' }),
    runs: counts<RunStatus>(TERMINAL_RUN_STATUSES).meta({ description: 'runs that ended in the hour, by status' }),
    units: counts<UnitStatus>(TERMINAL_UNIT_STATUSES).meta({
      description: 'units that ended in the hour (their last update), by status',
    }),
    units_per_minute: z.number().min(0).meta({
      description: 'drain rate: units ended per minute of the hour (of its minutes so far for the current hour)',
    }),
    rate_limit_deferrals: Count.meta({ description: 'rate-limit deferrals taken by the units that ended in the hour' }),
    outbox: z
      .strictObject({
        samples: Count.meta({ description: 'minutes sampled in the hour' }),
        pending_max: Count.meta({ description: "the org's largest pending outbox count sampled" }),
        due_max: Count.meta({ description: "the org's largest count of pending rows already due sampled" }),
        oldest_due_age_seconds_max: z.number().min(0).nullable().meta({
          description: "the largest age of the org's longest-due row sampled, in seconds (null when none was due)",
        }),
      })
      .nullable()
      .meta({ description: "the org's outbox depth as the reconciler sampled it (null: no sample in the hour)" }),
    reconciler: z
      .strictObject({
        passes: Count,
        errors: Count.meta({ description: 'passes that ended with an error' }),
        avg_duration_ms: Count.nullable(),
      })
      .nullable()
      .meta({ description: 'reconciler passes started in the hour, every org together: null unless admin' }),
  })
  .meta({ id: 'ActivityHour' });

export const ActivityMetricsDay = z
  .strictObject({
    integration_id: Id,
    integration_name: z.string(),
    day: z.string().meta({ description: 'UTC day, YYYY-MM-DD', example: '2026-01-01' }),
    computed_at: TimeOut.meta({ description: 'when the generation shown was computed (the latest of the day)' }),
    items_created: Count,
    items_completed: Count,
    wip: Count.meta({ description: 'work items open at the end of the day' }),
    cycle_time_p50_hours: Hours,
    cycle_time_p90_hours: Hours,
    prs_merged: Count,
    pr_time_to_merge_p50_hours: Hours,
  })
  .meta({ id: 'ActivityMetricsDay' });

export const Activity = z
  .strictObject({
    since: TimeOut.meta({ description: 'start of the first hour (inclusive)' }),
    until: TimeOut.meta({ description: 'the time of the answer (exclusive)' }),
    hours: z.array(ActivityHour).meta({ description: 'one bucket per hour, oldest first' }),
    includes_system: z.boolean().meta({ description: 'whether the system-wide series (reconciler) are given' }),
    work_item_metrics: z.strictObject({
      first_day: z.string(),
      last_day: z.string(),
      days: z.array(ActivityMetricsDay).meta({
        description: 'per UTC day and integration that has figures, by day then integration name',
      }),
    }),
  })
  .meta({ id: 'Activity' });

export const activityEndpoints = {
  getActivity: endpoint({
    operationId: 'getActivity',
    method: 'GET',
    path: `${V1}/activity`,
    summary: "The org's activity per hour and its work-item metrics per day (the dashboard's charts)",
    description:
      'Per hour of the last `hours` (default 24; the current hour is the last bucket): runs and units that ' +
      'ended, by status; the drain rate (units ended per minute); the rate-limit deferrals those units took; ' +
      "and the org's outbox depth as the reconciler samples it (at most once a minute, kept 7 days). " +
      'Reconciler passes per hour are system-wide (every org together): they are given to admin tokens ' +
      'only (`includes_system`), null for read tokens. Per UTC day of the last `days` (default 14): the ' +
      "work-item-metrics handler's latest figures per integration.",
    tags: ['operations'],
    scope: 'read',
    params: NoParams,
    query: ActivityQuery,
    success: { status: 200, description: 'the activity', schema: Activity },
    errors: [400, ...AUTH_ERRORS],
  }),
} as const;
