/** Contracts of the schedule endpoints: cron schedules that start incremental, full-resync or verify runs. */
import { z } from 'zod';
import { SCHEDULE_MODES } from '../../planning/schedules.js';
import { IdParams, NoQuery, text, TimeOut, Uuid } from './common.js';
import { AUTH_ERRORS, endpoint, NoParams, V1 } from './endpoint.js';

const Id = z.string().meta({ format: 'uuid' });

const ScheduleMode = z
  .enum(SCHEDULE_MODES, {
    error:
      'must be incremental, full_resync or verify (a backfill needs a [since, before) window a schedule cannot give)',
  })
  .meta({ description: 'the run each slot starts', example: 'incremental' });

const Cron = text(200).meta({
  description: 'five fields (minute hour day-of-month month day-of-week) or a nickname such as @hourly',
  example: '0 * * * *',
});

const Timezone = text(100).meta({ description: 'IANA time zone the expression is read in', example: 'Europe/Berlin' });

export const NewScheduleBody = z
  .strictObject({
    integration_id: Uuid,
    cron: Cron,
    timezone: Timezone.optional().meta({ description: 'IANA time zone the expression is read in (default UTC)' }),
    mode: ScheduleMode.optional().meta({ description: 'the run each slot starts (default incremental)' }),
    enabled: z.boolean().optional().meta({ description: 'default true' }),
  })
  .meta({ id: 'NewSchedule' });

export const SchedulePatchBody = z
  .strictObject({
    cron: Cron.optional(),
    timezone: Timezone.optional(),
    mode: ScheduleMode.optional(),
    enabled: z.boolean().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, 'must change at least one of cron, timezone, mode, enabled')
  .meta({ id: 'SchedulePatch' });

export const Schedule = z
  .strictObject({
    id: Id,
    org_id: z.string(),
    integration_id: Id,
    cron: z.string(),
    timezone: z.string(),
    mode: z.enum(SCHEDULE_MODES),
    enabled: z.boolean(),
    next_run_at: TimeOut.nullable().meta({ description: 'the next slot (null while disabled)' }),
    last_run_at: TimeOut.nullable().meta({ description: 'when a scheduler last handled a slot' }),
    last_outcome: z.enum(['fired', 'skipped', 'failed']).nullable().meta({
      description: 'fired: started last_job_run_id; skipped: a run of that mode had not finished; failed: refused',
    }),
    last_error: z.string().nullable().meta({ description: 'why the last slot was skipped or failed' }),
    last_job_run_id: Id.nullable(),
    created_at: TimeOut,
    updated_at: TimeOut,
  })
  .meta({ id: 'Schedule' });

export const ScheduleList = z.strictObject({ items: z.array(Schedule) });

export const scheduleEndpoints = {
  createSchedule: endpoint({
    operationId: 'createSchedule',
    method: 'POST',
    path: `${V1}/schedules`,
    summary: 'Schedule runs of an integration with a cron expression',
    description:
      'Each slot creates a JobRun (triggered_by schedule) and plans the run. A slot that comes while a run of ' +
      'the same mode has not finished is skipped (last_outcome skipped); after downtime a schedule fires once, ' +
      'not once per missed slot.',
    tags: ['schedules'],
    scope: 'admin',
    params: NoParams,
    query: NoQuery,
    body: NewScheduleBody,
    success: { status: 201, description: 'the schedule', schema: Schedule },
    idempotent: true,
    errors: [400, ...AUTH_ERRORS, 404, 413, 415, 422],
  }),
  listSchedules: endpoint({
    operationId: 'listSchedules',
    method: 'GET',
    path: `${V1}/schedules`,
    summary: "The org's schedules, oldest first",
    tags: ['schedules'],
    scope: 'read',
    params: NoParams,
    query: NoQuery,
    success: { status: 200, description: 'the schedules', schema: ScheduleList },
    errors: [400, ...AUTH_ERRORS],
  }),
  getSchedule: endpoint({
    operationId: 'getSchedule',
    method: 'GET',
    path: `${V1}/schedules/:id`,
    summary: 'One schedule',
    tags: ['schedules'],
    scope: 'read',
    params: IdParams,
    query: NoQuery,
    success: { status: 200, description: 'the schedule', schema: Schedule },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
  updateSchedule: endpoint({
    operationId: 'updateSchedule',
    method: 'PATCH',
    path: `${V1}/schedules/:id`,
    summary: 'Change or enable/disable a schedule',
    description:
      'A new cron or time zone, or enabling, moves next_run_at to the first slot after now (slots missed while ' +
      'disabled do not fire); disabling clears it.',
    tags: ['schedules'],
    scope: 'admin',
    params: IdParams,
    query: NoQuery,
    body: SchedulePatchBody,
    success: { status: 200, description: 'the schedule', schema: Schedule },
    idempotent: true,
    errors: [400, ...AUTH_ERRORS, 404, 413, 415, 422],
  }),
  deleteSchedule: endpoint({
    operationId: 'deleteSchedule',
    method: 'DELETE',
    path: `${V1}/schedules/:id`,
    summary: 'Delete a schedule (the JobRuns it started stay)',
    tags: ['schedules'],
    scope: 'admin',
    params: IdParams,
    query: NoQuery,
    success: { status: 200, description: 'the deleted schedule', schema: Schedule },
    idempotent: true,
    errors: [400, ...AUTH_ERRORS, 404, 422],
  }),
} as const;
