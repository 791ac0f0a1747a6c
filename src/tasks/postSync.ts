/**
 * post_sync(run_id) — fan-out to the registered post-sync handlers, once per (run, handler).
 * at-most-once: the receipt commits BEFORE the handler runs (a crash after it loses the delivery,
 * never doubles it — also against a broker that redelivers). exactly-once: the receipt and the
 * handler's writes commit in ONE transaction (a duplicate finds the receipt and does nothing).
 */
import type { Tx } from '../db/types.js';
import { coveredWindow } from '../domain/windows.js';
import { describeError } from '../errors.js';
import type { IntegrationInfo, PostSyncHandler, PostSyncPayload } from '../sdk/types.js';
import { getIntegration } from '../store/integrations.js';
import { insertReceipt } from '../store/ledger.js';
import { ackPostSync } from '../store/outbox.js';
import { getRun } from '../store/runs.js';
import { succeededByTier } from '../store/units.js';
import type { EngineContext } from '../context.js';

export interface PostSyncOutcome {
  delivered: string[];
  duplicates: string[];
  failed: string[];
  nothingToPublish: boolean;
}

export async function postSync(ctx: EngineContext, runId: string): Promise<PostSyncOutcome> {
  const out: PostSyncOutcome = { delivered: [], duplicates: [], failed: [], nothingToPublish: false };
  const built = await buildPayload(ctx, runId);
  if (!built) out.nothingToPublish = true;
  for (const handler of built ? ctx.registry.postSyncHandlersFor(built.integration) : []) {
    const status = await deliver(ctx, handler, built!.payload);
    out[status].push(handler.name);
  }
  // exactly-once: the row stays pending until every handler has its receipt (then it is acknowledged).
  if (ctx.settings.postSyncDelivery === 'exactly-once') {
    await ctx.faults.hit('postSync.afterHandlers.beforeAck');
    await ackPostSync(ctx.db, runId, ctx.clock.now());
  }
  return out;
}

async function deliver(
  ctx: EngineContext,
  handler: PostSyncHandler,
  payload: PostSyncPayload,
): Promise<'delivered' | 'duplicates' | 'failed'> {
  const mode = ctx.settings.postSyncDelivery;
  const logger = ctx.logger.child({ runId: payload.runId, handler: handler.name });
  const claim = (tx: Tx) => insertReceipt(tx, payload.orgId, payload.runId, handler.name, mode, ctx.clock.now());
  const run = (tx: Tx) =>
    handler.run(payload, { tx, idempotencyKey: `${payload.runId}:${handler.name}`, clock: ctx.clock, logger });
  try {
    if (mode === 'exactly-once') {
      const ran = await ctx.db.transaction(async (tx) => (await claim(tx)) && (await run(tx), true));
      return ran ? 'delivered' : 'duplicates';
    }
    if (!(await claim(ctx.db))) return 'duplicates';
    await ctx.faults.hit('postSync.afterReceipt.beforeHandler');
    await ctx.db.transaction(run);
    return 'delivered';
  } catch (err) {
    logger.error({ err: describeError(err), delivery: mode }, 'post-sync handler failed');
    if (mode === 'exactly-once') throw err;
    return 'failed';
  }
}

/** The payload from the run's successful units only; null when there are none. */
export async function buildPayload(
  ctx: EngineContext,
  runId: string,
): Promise<{ payload: PostSyncPayload; integration: IntegrationInfo } | null> {
  const run = await getRun(ctx.db, runId);
  if (!run) return null;
  const tiers = await succeededByTier(ctx.db, runId);
  if (tiers.length === 0) return null;
  const row = await getIntegration(ctx.db, run.integration_id);
  if (!row) return null;
  const windowed = tiers.filter((t) => t.tier === 'work_item');
  const w = coveredWindow(
    (windowed.length > 0 ? windowed : tiers).map((t) => ({ since: t.since_at, before: t.before_at })),
  );
  return {
    integration: { id: row.id, orgId: row.org_id, provider: row.provider, name: row.name, config: row.config },
    payload: {
      orgId: run.org_id,
      runId,
      integrationId: run.integration_id,
      provider: tiers[0]!.provider,
      datasets: [...new Set(tiers.flatMap((t) => t.datasets))].sort(),
      window: { from: w.from?.toISOString() ?? null, to: w.to?.toISOString() ?? null },
    },
  };
}
