/** The one transaction that ends a unit's attempt: terminal write or retry, plus what it arms. */
import { decideExpiry } from '../domain/retryPolicy.js';
import { rateLimitBudgetExceeded, rateLimitDelayMs } from '../domain/backoff.js';
import type { ErrorCategory } from '../errors.js';
import type { TraceCarrier } from '../observability/trace.js';
import { describeError } from '../errors.js';
import type { DatasetSpec } from '../providers/types.js';
import { armOutbox } from '../store/outbox.js';
import type { UnitRow } from '../store/rows.js';
import { finishUnit, hasOtherOpenUnit, retryOwnUnit } from '../store/units.js';
import { advanceWatermark } from '../store/watermarks.js';
import { armAfterUnitEnd, MAX_RUNS_WOKEN } from './afterUnitEnd.js';
import { after, type EngineContext } from './context.js';

export type EndOutcome = 'success' | 'failed' | 'retrying' | 'lease_lost';

class LostDuringEnd extends Error {}

export interface Terminal {
  status: 'success' | 'failed';
  result: Record<string, unknown>;
  error: string | null;
  touchedSurfaces: readonly string[];
  /** Where the watermark moves on success (incremental / full_resync only). */
  watermark: Date | null;
}

/**
 * Success or failure in ONE transaction: the CAS on our own live lease, the watermark, and the
 * finalize / freed-capacity wake-ups. A lost lease writes nothing. After commit, a unit that saw
 * other open units re-checks with a fresh snapshot and arms finalize if the run became finalizable.
 */
export async function endUnit(
  ctx: EngineContext,
  unit: UnitRow,
  owner: string,
  t: Terminal,
  dataset: DatasetSpec | undefined,
  trace?: TraceCarrier | null,
): Promise<EndOutcome> {
  let sawOthers: boolean;
  try {
    sawOthers = await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now();
      const row = await finishUnit(tx, { unitId: unit.id, owner, now, ...t }, MAX_RUNS_WOKEN);
      if (!row) throw new LostDuringEnd();
      if (t.status === 'success' && t.watermark && unit.source_id && unit.mode !== 'backfill' && dataset?.keepsWatermark) {
        await advanceWatermark(
          tx,
          { orgId: unit.org_id, integrationId: unit.integration_id, sourceId: unit.source_id, datasetKey: unit.dataset_key, at: t.watermark },
          now,
        );
      }
      const sawOthers = await armAfterUnitEnd(tx, row, now, trace, row);
      await ctx.faults.hit('unit.complete.beforeCommit');
      return sawOthers;
    });
  } catch (err) {
    if (err instanceof LostDuringEnd) return 'lease_lost';
    throw err;
  }
  await ctx.faults.hit('unit.afterComplete.beforeRecheck');
  if (sawOthers) await recheckFinalizable(ctx, unit, trace);
  return t.status;
}

/** Of two "last" units racing, the later one sees the run finalizable here and arms finalize. */
export async function recheckFinalizable(ctx: EngineContext, unit: UnitRow, trace?: TraceCarrier | null): Promise<void> {
  if (await hasOtherOpenUnit(ctx.db, unit.sync_run_id, null)) return;
  await ctx.db.transaction((tx) => {
    const now = ctx.clock.now();
    return armOutbox(tx, 'finalize_sync_run', [{ orgId: unit.org_id, runId: unit.sync_run_id }], now, now, trace);
  });
}

/** running → retrying with a wake-up of the dispatch row at `availableAt` (earliest wins). */
async function retryUnit(
  ctx: EngineContext,
  unit: UnitRow,
  owner: string,
  reason: 'rate_limit' | 'soft_timeout',
  delayMs: number,
  error: string,
  trace?: TraceCarrier | null,
): Promise<EndOutcome> {
  const outcome = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now();
    const availableAt = after(now, delayMs);
    const row = await retryOwnUnit(tx, { unitId: unit.id, owner, now, availableAt, reason, error });
    if (!row) return 'lease_lost' as const;
    const own = { kind: 'dispatch_sync_run' as const, orgId: unit.org_id, runId: unit.sync_run_id, availableAt, trace };
    await armAfterUnitEnd(tx, row, now, trace, undefined, [own]);
    return 'retrying' as const;
  });
  if (outcome === 'retrying') ctx.metrics?.unitRetried(reason);
  return outcome;
}

export function failure(category: ErrorCategory, err: unknown, extra: Record<string, unknown> = {}): Terminal {
  return {
    status: 'failed',
    result: { error_category: category, ...extra },
    error: describeError(err),
    touchedSurfaces: [],
    watermark: null,
  };
}

/** A RateLimitError: defer within budget (more than 10 deferrals or 2 h → failed `rate_limit`). */
export async function deferUnit(
  ctx: EngineContext,
  unit: UnitRow,
  owner: string,
  retryAfterMs: number,
  err: unknown,
  dataset: DatasetSpec | undefined,
  trace?: TraceCarrier | null,
): Promise<EndOutcome> {
  const now = ctx.clock.now().getTime();
  const first = unit.rate_limit_first_seen_at?.getTime() ?? null;
  if (rateLimitBudgetExceeded(unit.rate_limit_deferrals, first, now)) {
    return endUnit(ctx, unit, owner, failure('rate_limit', err, { rate_limit_deferrals: unit.rate_limit_deferrals }), dataset, trace);
  }
  return retryUnit(ctx, unit, owner, 'rate_limit', rateLimitDelayMs(retryAfterMs, ctx.random), describeError(err), trace);
}

/** Soft timeout: treated like an expired lease — eligible units retry, others fail (`timeout`). */
export async function softTimeoutUnit(
  ctx: EngineContext,
  unit: UnitRow,
  owner: string,
  facts: { declaredSurfaces: readonly string[]; retrySafeSurfaces: readonly string[] },
  err: unknown,
  dataset: DatasetSpec | undefined,
  trace?: TraceCarrier | null,
): Promise<EndOutcome> {
  const decision = decideExpiry(
    ctx.retryEligibility,
    { provider: unit.provider, mode: unit.mode, datasetKey: unit.dataset_key, ...facts },
    unit.expired_lease_retry_count,
    ctx.settings.expiredLeaseMaxRetries,
  );
  if (decision === 'retry') {
    return retryUnit(ctx, unit, owner, 'soft_timeout', ctx.settings.expiredLeaseRetryBackoffMs, describeError(err), trace);
  }
  return endUnit(ctx, unit, owner, failure('timeout', err), dataset, trace);
}
