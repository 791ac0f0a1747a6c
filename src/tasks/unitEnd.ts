/** How a unit's attempt ends: a terminal write, a deferral within budget, or a soft-timeout retry. */
import type { EngineContext } from '../context.js';
import { rateLimitBudgetExceeded, rateLimitDelayMs } from '../domain/backoff.js';
import { decideExpiry } from '../domain/retryPolicy.js';
import type { ErrorCategory, RateLimitError } from '../errors.js';
import { describeError } from '../errors.js';
import type { TraceCarrier } from '../observability/trace.js';
import type { DatasetSpec } from '../sdk/types.js';
import type { UnitRow } from '../store/rows.js';
import type { EndOutcome, Terminal } from './unitEnds.js';

export type { EndOutcome, Terminal } from './unitEnds.js';

/** The terminal end of a unit by its lease holder (see UnitEnds.end). */
export function endUnit(
  ctx: EngineContext,
  unit: UnitRow,
  owner: string,
  t: Terminal,
  dataset: DatasetSpec | undefined,
  trace?: TraceCarrier | null,
): Promise<EndOutcome> {
  return ctx.unitEnds.end(unit, owner, t, dataset, trace);
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

/**
 * A RateLimitError: `retrying` until the limit lifts plus a jitter of a tenth of the wait, 250 ms to 5 s
 * (../domain/backoff.ts; at most its `spreadMs` when set), within the policy
 * (SYNC_RATE_LIMIT_MAX_DEFERRALS deferrals, SYNC_RATE_LIMIT_MAX_WAIT_SECONDS of wait); past
 * either it fails `rate_limit`. `liftsAt` (absolute) wins over `retryAfterMs` when given.
 * `checkpoint` (JSON text, already bounded: ./checkpoint.ts) is stored for the next attempt.
 */
export async function deferUnit(
  ctx: EngineContext,
  unit: UnitRow,
  owner: string,
  err: RateLimitError,
  checkpoint: string | null,
  dataset: DatasetSpec | undefined,
  trace?: TraceCarrier | null,
): Promise<EndOutcome> {
  const now = ctx.clock.now().getTime();
  const first = unit.rate_limit_first_seen_at?.getTime() ?? null;
  const wait = err.liftsAt ? err.liftsAt.getTime() - now : err.retryAfterMs;
  const delayMs = rateLimitDelayMs(wait, ctx.random, err.spreadMs ?? undefined);
  const policy = { maxDeferrals: ctx.settings.rateLimitMaxDeferrals, maxWaitMs: ctx.settings.rateLimitMaxWaitMs };
  if (rateLimitBudgetExceeded(unit.rate_limit_deferrals, first, now, policy, delayMs)) {
    const t = failure('rate_limit', err, { rate_limit_deferrals: unit.rate_limit_deferrals });
    return endUnit(ctx, unit, owner, t, dataset, trace);
  }
  const retry = { reason: 'rate_limit' as const, delayMs, error: describeError(err), checkpoint };
  return ctx.unitEnds.retry(unit, owner, retry, trace);
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
    const backoffMs = ctx.settings.expiredLeaseRetryBackoffMs;
    return ctx.unitEnds.retry(
      unit,
      owner,
      { reason: 'soft_timeout', delayMs: backoffMs, error: describeError(err) },
      trace,
    );
  }
  return endUnit(ctx, unit, owner, failure('timeout', err), dataset, trace);
}
