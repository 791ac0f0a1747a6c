/**
 * POST /integrations/:id/sync and /backfill: JobRun, plan and outbox row in one transaction;
 * 202 once it commits. Nothing here touches the broker, so the answer never waits for Redis.
 * Refusals: bad input 400 (before anything else), a run over SYNC_RUN_MAX_UNITS 422
 * `run_too_large`, an unfinished run of the mode 409 `run_conflict`, the integration at
 * SYNC_INTEGRATION_MAX_LIVE_RUNS 409 `too_many_live_runs`; none of them writes anything.
 * An integration whose provider finds its sources has them refreshed first, outside the trigger's
 * transaction (planning/sourceDiscovery.ts); when they cannot be found the answer is
 * `source_discovery_failed`: 422 when the credential or installation is refused, else 503.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RunTooLargeError, TooManyLiveRunsError } from '../../errors.js';
import { refreshDiscoveredSources, SourceDiscoveryError } from '../../planning/sourceDiscovery.js';
import { triggerInTx, validateTrigger, type TriggerArgs } from '../../planning/triggers.js';
import { getIdempotencyRecord } from '../../store/idempotency.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { ApiError } from '../errors.js';
import { answerIdempotently, idempotencyKeyOf } from '../idempotency.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

export { IDEMPOTENCY_HEADER, REPLAYED_HEADER } from '../idempotency.js';

/** The trigger's own refusals as API errors (the others map in ../errors.ts). */
function refusal(err: unknown): unknown {
  if (err instanceof RunTooLargeError) {
    return new ApiError(
      422,
      err.code,
      err.message,
      { units: err.units, max_units: err.maxUnits, by_dataset: err.byDataset, setting: 'SYNC_RUN_MAX_UNITS' },
      { cause: err },
    );
  }
  if (err instanceof TooManyLiveRunsError) {
    return new ApiError(
      409,
      err.code,
      `this integration has ${err.liveRuns} unfinished run${err.liveRuns === 1 ? '' : 's'}, the cap is ` +
        `${err.maxLiveRuns} (SYNC_INTEGRATION_MAX_LIVE_RUNS, force or not); wait for one to finish or cancel one`,
      { live_runs: err.liveRuns, max_live_runs: err.maxLiveRuns, setting: 'SYNC_INTEGRATION_MAX_LIVE_RUNS' },
      { cause: err },
    );
  }
  if (err instanceof SourceDiscoveryError) {
    const refused = err.category === 'auth' || err.category === 'not_found';
    const details = { category: err.category, integration_id: err.integrationId };
    return new ApiError(refused ? 422 : 503, err.code, err.message, details, { cause: err });
  }
  return err;
}

/** Whether the request replays an answer recorded under its Idempotency-Key (nothing is refreshed then). */
async function replays(deps: RouteDeps, request: FastifyRequest, orgId: string): Promise<boolean> {
  const key = idempotencyKeyOf(request);
  return key !== undefined && (await getIdempotencyRecord(deps.ctx.db, orgId, key)) !== null;
}

async function trigger(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: string,
  args: Omit<TriggerArgs, 'orgId' | 'maxWindowDays' | 'trace'>,
): Promise<unknown> {
  const { orgId } = principalOf(request);
  const full: TriggerArgs = {
    ...args,
    orgId,
    maxWindowDays: deps.maxBackfillDays,
    trace: deps.traceContext?.(request) ?? null,
  };
  validateTrigger(full);
  try {
    if (!(await replays(deps, request, orgId))) await refreshDiscoveredSources(deps.ctx, orgId, args.integrationId);
    return await answerIdempotently(
      deps.ctx,
      request,
      reply,
      { orgId, operation, target: args.integrationId, status: 202 },
      async (tx) => {
        const t = await triggerInTx(tx, deps.ctx, full);
        return { status: 'accepted', job_run_id: t.jobRunId, sync_run_id: t.syncRunId };
      },
    );
  } catch (err) {
    throw refusal(err);
  }
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
