/** reconcile_sync_dispatch: expire → repair → materialize → relay → prune; each phase commits alone. */
import { describeError } from '../errors.js';
import { pruneIdempotencyRecords } from '../store/idempotency.js';
import { repairJobRuns } from '../store/jobRuns.js';
import { pruneDispatchedOutbox } from '../store/outbox.js';
import { pruneWebhookDeliveries } from '../store/webhookDeliveries.js';
import { pruneNamedItems } from '../store/webhookNamedItems.js';
import { recordPass } from '../store/reconcile.js';
import { armRememberedRuns } from '../planning/webhooks.js';
import type { EngineContext } from '../context.js';
import { after } from '../clock.js';
import { pruneBudgetSamples, type BudgetSampleCounters } from './budgetSamples.js';
import { expireLeases, type ExpireCounters } from './expire.js';
import { materialize, type MaterializeCounters } from './materialize.js';
import { sampleOutbox, type OutboxSampleCounters } from './outboxSamples.js';
import { probeParkedRows, relayDue, type RelayCounters } from './relay.js';

export type PassCounters = ExpireCounters &
  MaterializeCounters &
  BudgetSampleCounters &
  OutboxSampleCounters &
  Omit<RelayCounters, 'skipped'> & {
    observer_repairs: number;
    pruned: number;
    pruned_idempotency: number;
    /** Webhook deliveries older than SYNC_WEBHOOK_DELIVERY_RETENTION_HOURS (never one still to arm a run). */
    pruned_webhook_deliveries: number;
    relay_skipped: number;
    /** Runs armed for webhook deliveries remembered while their integration had a live run. */
    webhook_runs_armed: number;
  };

const DAY_MS = 86_400_000;

/** One pass. Returns its counters and records them in reconciler_passes. */
export async function reconcilePass(ctx: EngineContext, reconcilerId = 'reconciler'): Promise<PassCounters> {
  const startedAt = ctx.clock.now();
  const timer = performance.now();
  let counters: PassCounters | null = null;
  let error: unknown = null;
  try {
    const expired = await expireLeases(ctx);
    const observer_repairs = await ctx.db.transaction((tx) =>
      repairJobRuns(tx, ctx.clock.now(), ctx.settings.reconcileBatch),
    );
    const materialized = await materialize(ctx);
    const webhook_runs_armed = await armRememberedRuns(ctx.db, ctx, ctx.settings.reconcileBatch);
    const probed = await probeParkedRows(ctx);
    const { skipped, ...relayed } = await relayDue(ctx);
    relayed.parked_woken += probed;
    const pruned = await prune(ctx);
    const pruned_idempotency = await pruneIdempotency(ctx);
    const pruned_webhook_deliveries = await pruneDeliveries(ctx);
    const prunedSamples = await pruneBudgetSamples(ctx);
    const sampled = await sampleOutbox(ctx);
    counters = {
      ...expired,
      observer_repairs,
      ...materialized,
      ...relayed,
      relay_skipped: skipped,
      pruned,
      pruned_idempotency,
      pruned_webhook_deliveries,
      ...prunedSamples,
      webhook_runs_armed,
      ...sampled,
    };
    return counters;
  } catch (err) {
    error = err;
    throw err;
  } finally {
    ctx.metrics?.passEnded(error ? 'error' : 'ok', (performance.now() - timer) / 1000);
    await recordPass(ctx.db, {
      reconciler: reconcilerId,
      startedAt,
      finishedAt: ctx.clock.now(),
      counters: { ...(counters ?? {}) },
      error: error ? describeError(error) : null,
    }).catch((err) => ctx.logger.warn({ err: describeError(err) }, 'could not record reconciler pass'));
  }
}

/** Retention: dispatched rows of runs terminal for longer than the retention, in bounded batches. */
function prune(ctx: EngineContext): Promise<number> {
  const cutoff = after(ctx.clock.now(), -ctx.settings.outboxRetentionDays * DAY_MS);
  return inBatches(ctx, (batch) => pruneDispatchedOutbox(ctx.db, cutoff, batch));
}

/** Retention: Idempotency-Key answers older than SYNC_IDEMPOTENCY_RETENTION_HOURS, in bounded batches. */
function pruneIdempotency(ctx: EngineContext): Promise<number> {
  const cutoff = after(ctx.clock.now(), -ctx.settings.idempotencyRetentionMs);
  return inBatches(ctx, (batch) => pruneIdempotencyRecords(ctx.db, cutoff, batch));
}

/**
 * Retention: webhook deliveries older than SYNC_WEBHOOK_DELIVERY_RETENTION_HOURS, in bounded batches;
 * one still waiting to arm a run (pending, no run yet) stays.
 */
function pruneDeliveries(ctx: EngineContext): Promise<number> {
  const cutoff = after(ctx.clock.now(), -ctx.settings.webhookDeliveryRetentionMs);
  return inBatches(ctx, async (batch) => {
    // Items deliveries named that no run read since (a source no longer synced) go with them.
    await pruneNamedItems(ctx.db, cutoff, batch);
    return pruneWebhookDeliveries(ctx.db, cutoff, batch);
  });
}

/** Deletes in batches of ten scan batches, each its own statement, at most ten per pass. Returns how many. */
async function inBatches(ctx: EngineContext, deleteBatch: (batch: number) => Promise<number>): Promise<number> {
  const batch = ctx.settings.reconcileBatch * 10;
  let total = 0;
  for (let i = 0; i < 10; i++) {
    const n = await deleteBatch(batch);
    total += n;
    if (n < batch) break;
  }
  return total;
}
