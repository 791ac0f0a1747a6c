/** Phase 1: running units whose lease expired → retrying (eligible) or failed. */
import type { Tx } from '../db/types.js';
import { decideExpiry, type ExpiryDecision } from '../domain/retryPolicy.js';
import { runTrace, type TraceCarrier } from '../observability/trace.js';
import type { IntegrationInfo } from '../sdk/types.js';
import { declaredSurfaces, specsOf } from '../providers/datasets.js';
import { lockBuckets } from '../store/dispatch.js';
import { getIntegration } from '../store/integrations.js';
import { armEndWakes, type EndedRef } from '../store/endWakes.js';
import type { Wake } from '../store/outbox.js';
import type { UnitRow } from '../store/rows.js';
import { expireToFailed, expireToRetrying, findExpiredUnits } from '../store/reconcile.js';
import { getRun } from '../store/runs.js';
import type { EngineContext } from '../context.js';
import { after } from '../clock.js';

export interface ExpireCounters {
  expired_units: number;
  expired_retry_units: number;
  expired_retry_exhausted_units: number;
}

/** Expires batches of expired leases until a batch comes back short. */
export async function expireLeases(ctx: EngineContext): Promise<ExpireCounters> {
  const c: ExpireCounters = { expired_units: 0, expired_retry_units: 0, expired_retry_exhausted_units: 0 };
  for (;;) {
    const decided: ExpiryDecision[] = [];
    const found = await ctx.db.transaction((tx) => {
      decided.length = 0; // a retried transaction starts over
      return expireBatch(ctx, tx, c, decided);
    });
    for (const d of decided) ctx.metrics?.leaseExpired(d);
    await ctx.faults.hit('reconciler.afterExpire');
    if (found < ctx.settings.reconcileBatch) return c;
  }
}

async function expireBatch(ctx: EngineContext, tx: Tx, c: ExpireCounters, decided: ExpiryDecision[]): Promise<number> {
  const now = ctx.clock.now();
  const units = await findExpiredUnits(tx, now, ctx.settings.reconcileBatch);
  if (units.length === 0) return 0;
  await lockBuckets(tx, units);
  const integrations = new Map<string, IntegrationInfo | null>();
  const traces = new Map<string, TraceCarrier | null>();
  // What the batch's ends wake, and its retries' own dispatch wake-ups, are armed at its end in one
  // statement (one lock order), by the rule every unit end follows (../store/endWakes.ts).
  const ended: EndedRef[] = [];
  const wakes: Wake[] = [];
  for (const unit of units) {
    const facts = await surfaceFacts(ctx, tx, unit, integrations);
    const decision = decideExpiry(
      ctx.retryEligibility,
      { provider: unit.provider, mode: unit.mode, datasetKey: unit.dataset_key, ...facts },
      unit.expired_lease_retry_count,
      ctx.settings.expiredLeaseMaxRetries,
    );
    const row = await applyDecision(ctx, tx, unit, decision, now, wakes);
    if (!row) continue;
    c.expired_units += 1;
    if (decision === 'retry') c.expired_retry_units += 1;
    if (decision === 'retry_exhausted') c.expired_retry_exhausted_units += 1;
    decided.push(decision);
    ctx.logger.warn({ runId: unit.sync_run_id, unitId: unit.id, decision }, 'unit lease expired');
    if (!traces.has(row.sync_run_id)) traces.set(row.sync_run_id, runTrace(await getRun(tx, row.sync_run_id)));
    ended.push({ unitId: row.id, trace: traces.get(row.sync_run_id) });
  }
  await armEndWakes(tx, ended, wakes, now);
  return units.length;
}

async function applyDecision(
  ctx: EngineContext,
  tx: Tx,
  unit: UnitRow,
  d: ExpiryDecision,
  now: Date,
  wakes: Wake[],
): Promise<UnitRow | null> {
  const base = { unitId: unit.id, owner: unit.lease_owner!, now };
  if (d !== 'retry') {
    return expireToFailed(tx, {
      ...base,
      category: d === 'retry_exhausted' ? 'worker_lost_retry_exhausted' : 'worker_lost',
    });
  }
  const availableAt = after(now, ctx.settings.expiredLeaseRetryBackoffMs);
  const row = await expireToRetrying(tx, { ...base, availableAt });
  if (row) wakes.push({ kind: 'dispatch_sync_run', orgId: row.org_id, runId: row.sync_run_id, availableAt });
  return row;
}

/** The surfaces the unit's dataset declares and the sink's retry-safe set (static, from the registry). */
async function surfaceFacts(
  ctx: EngineContext,
  tx: Tx,
  unit: UnitRow,
  cache: Map<string, IntegrationInfo | null>,
): Promise<{ declaredSurfaces: readonly string[]; retrySafeSurfaces: readonly string[] }> {
  const none = { declaredSurfaces: ['<unknown>'], retrySafeSurfaces: [] };
  if (!cache.has(unit.integration_id)) {
    const row = await getIntegration(tx, unit.integration_id);
    cache.set(
      unit.integration_id,
      row && { id: row.id, orgId: row.org_id, provider: row.provider, name: row.name, config: row.config },
    );
  }
  const integration = cache.get(unit.integration_id);
  if (!integration || !ctx.registry.has(integration.provider)) return none;
  const provider = ctx.registry.get(integration.provider);
  const specs = specsOf(provider, integration, [unit.dataset_key, ...unit.carried_datasets]);
  if (!specs) return none;
  const retrySafeSurfaces = ctx.registry.sinkFor(provider).retrySafeSurfaces;
  return { declaredSurfaces: declaredSurfaces(specs), retrySafeSurfaces };
}
