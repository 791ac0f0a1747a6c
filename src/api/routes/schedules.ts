/** POST/GET /schedules, GET/PATCH/DELETE /schedules/:id — every query filtered by the token's org. */
import type { FastifyInstance } from 'fastify';
import {
  checkNewSchedule,
  checkSchedulePatch,
  createScheduleInTx,
  deleteScheduleInTx,
  updateScheduleInTx,
} from '../../planning/schedules.js';
import { getSchedule, listSchedules, type ScheduleRow } from '../../store/schedules.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { ApiError } from '../errors.js';
import { answerIdempotently } from '../idempotency.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

export function presentSchedule(s: ScheduleRow) {
  return {
    id: s.id,
    org_id: s.org_id,
    integration_id: s.integration_id,
    cron: s.cron,
    timezone: s.timezone,
    mode: s.mode,
    enabled: s.enabled,
    next_run_at: s.next_run_at,
    last_run_at: s.last_run_at,
    last_outcome: s.last_outcome,
    last_error: s.last_error,
    last_job_run_id: s.last_job_run_id,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

function scheduleNotFound(id: string): ApiError {
  return new ApiError(404, 'not_found', 'schedule not found', { entity: 'schedule', id });
}

export function scheduleRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.createSchedule, async ({ body, request, reply }) => {
    const { orgId } = principalOf(request);
    const now = ctx.clock.now();
    const checked = checkNewSchedule(
      {
        orgId,
        integrationId: body.integration_id,
        cron: body.cron,
        timezone: body.timezone,
        mode: body.mode,
        enabled: body.enabled,
      },
      now,
    );
    const op = { orgId, operation: 'createSchedule', target: null, status: endpoints.createSchedule.success.status };
    return answerIdempotently(ctx, request, reply, op, async (tx) =>
      presentSchedule(await createScheduleInTx(tx, checked, now)),
    );
  });

  mount(app, endpoints.listSchedules, async ({ request }) => {
    const rows = await listSchedules(ctx.db, principalOf(request).orgId);
    return { items: rows.map(presentSchedule) };
  });

  mount(app, endpoints.getSchedule, async ({ params, request }) => {
    const row = await getSchedule(ctx.db, params.id, { orgId: principalOf(request).orgId });
    if (!row) throw scheduleNotFound(params.id);
    return presentSchedule(row);
  });

  mount(app, endpoints.updateSchedule, async ({ params, body, request, reply }) => {
    const { orgId } = principalOf(request);
    const now = ctx.clock.now();
    const patch = checkSchedulePatch(body, now);
    const op = {
      orgId,
      operation: 'updateSchedule',
      target: params.id,
      status: endpoints.updateSchedule.success.status,
    };
    return answerIdempotently(ctx, request, reply, op, async (tx) =>
      presentSchedule(await updateScheduleInTx(tx, params.id, orgId, patch, now)),
    );
  });

  mount(app, endpoints.deleteSchedule, async ({ params, request, reply }) => {
    const { orgId } = principalOf(request);
    const op = {
      orgId,
      operation: 'deleteSchedule',
      target: params.id,
      status: endpoints.deleteSchedule.success.status,
    };
    return answerIdempotently(ctx, request, reply, op, async (tx) =>
      presentSchedule(await deleteScheduleInTx(tx, params.id, orgId)),
    );
  });
}
