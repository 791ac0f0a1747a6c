/** POST /sync-runs/:id/cancel, GET /sync-runs/:id, GET /sync-runs/:id/units. */
import type { FastifyInstance } from 'fastify';
import { cancelRunInTx } from '../../planning/cancel.js';
import { readRunView } from '../../planning/runView.js';
import { getRunOfOrg, listRunUnitViews } from '../../store/admin.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { ApiError } from '../errors.js';
import { answerIdempotently } from '../idempotency.js';
import { mount } from '../mount.js';
import { decodeIdCursor, encodeIdCursor } from '../cursors.js';
import { presentJobRun, presentRun, presentUnit } from '../present.js';
import type { RouteDeps } from './deps.js';

const DEFAULT_LIMIT = 50;

function runNotFound(id: string): ApiError {
  return new ApiError(404, 'not_found', 'sync run not found', { entity: 'sync run', id });
}

export function runRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.cancelRun, async ({ params, request, reply }) => {
    const { orgId } = principalOf(request);
    const op = { orgId, operation: 'cancelRun', target: params.id, status: endpoints.cancelRun.success.status };
    return answerIdempotently(ctx, request, reply, op, async (tx) => {
      const outcome = await cancelRunInTx(tx, ctx.clock, params.id, orgId);
      return { status: 'accepted', sync_run_id: params.id, outcome };
    });
  });

  mount(app, endpoints.getRun, async ({ params, request }) => {
    const view = await readRunView(ctx.db, params.id, principalOf(request).orgId);
    if (!view) throw runNotFound(params.id);
    const { run, units, job_run: jobRun, verify } = view;
    const job = jobRun ? presentJobRun(jobRun) : null;
    return { run: presentRun(run), unit_counts: units, job_run: job, verify_counts: verify };
  });

  mount(app, endpoints.listUnits, async ({ params, query, request }) => {
    const { orgId } = principalOf(request);
    const afterId = query.cursor === undefined ? undefined : decodeIdCursor(query.cursor);
    const run = await getRunOfOrg(ctx.db, orgId, params.id);
    if (!run) throw runNotFound(params.id);
    const limit = query.limit ?? DEFAULT_LIMIT;
    const rows = await listRunUnitViews(ctx.db, {
      orgId,
      runId: run.id,
      status: query.status,
      afterId,
      limit: limit + 1,
    });
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    return { items: items.map(presentUnit), next_cursor: rows.length > limit && last ? encodeIdCursor(last.id) : null };
  });
}
