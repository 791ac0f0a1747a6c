/**
 * POST /integrations/:id/sync and /backfill: JobRun, plan and outbox row in one transaction;
 * 202 once it commits. Nothing here touches the broker, so the answer never waits for Redis.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { triggerInTx, validateTrigger, type TriggerArgs } from '../../planning/triggers.js';
import { principalOf } from '../auth.js';
import { IdempotencyKey } from '../contracts/common.js';
import { endpoints } from '../contracts/endpoints.js';
import { fromZodError } from '../errors.js';
import { runIdempotent } from '../idempotency.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

function idempotencyKey(request: FastifyRequest): string | undefined {
  const raw = request.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const r = IdempotencyKey.safeParse(raw);
  if (!r.success) {
    const e = fromZodError(r.error, 'header');
    e.details.field = 'Idempotency-Key';
    throw e;
  }
  return r.data;
}

async function trigger(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: string,
  args: Omit<TriggerArgs, 'orgId' | 'maxWindowDays' | 'trace'>,
): Promise<unknown> {
  const { orgId } = principalOf(request);
  const key = idempotencyKey(request);
  const full: TriggerArgs = {
    ...args,
    orgId,
    maxWindowDays: deps.maxBackfillDays,
    trace: deps.traceContext?.(request) ?? null,
  };
  validateTrigger(full);
  const answer = await runIdempotent(
    { db: deps.ctx.db, clock: deps.ctx.clock },
    { orgId, key, fingerprint: [operation, args.integrationId, request.body ?? null] },
    202,
    async (tx) => {
      const t = await triggerInTx(tx, deps.ctx, full);
      return { status: 'accepted', job_run_id: t.jobRunId, sync_run_id: t.syncRunId };
    },
  );
  if (answer.replayed) reply.header(REPLAYED_HEADER, 'true');
  reply.code(answer.status);
  return answer.body;
}

export function triggerRoutes(app: FastifyInstance, deps: RouteDeps): void {
  mount(app, endpoints.triggerSync, ({ params, body, request, reply }) =>
    trigger(deps, request, reply, 'sync', {
      integrationId: params.id,
      mode: body.mode,
      triggeredBy: 'api',
      force: body.force ?? false,
    }),
  );

  mount(app, endpoints.triggerBackfill, ({ params, body, request, reply }) =>
    trigger(deps, request, reply, 'backfill', {
      integrationId: params.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: body.since,
      before: body.before,
      datasets: body.datasets,
      force: body.force ?? false,
    }),
  );
}
