/** The one commit that ends a unit's attempt: terminal write or retry, plus what it arms. */
import { decideExpiry } from '../domain/retryPolicy.js';
import { rateLimitBudgetExceeded, rateLimitDelayMs } from '../domain/backoff.js';
import type { ErrorCategory } from '../errors.js';
import type { TraceCarrier } from '../observability/trace.js';
import { describeError, InjectedFault } from '../errors.js';
import type { DatasetSpec } from '../providers/types.js';
import { armOutboxRows } from '../store/outbox.js';
import type { UnitRow } from '../store/rows.js';
import { finishUnits, retryOwnUnit, runsWithoutOpenUnits, type EndedUnit, type EndFacts } from '../store/units.js';
import { advanceWatermark } from '../store/watermarks.js';
import { armAfterUnitEnd, MAX_RUNS_WOKEN } from './afterUnitEnd.js';
import { Coalescer } from './coalesce.js';
import { EndRechecks, type RunRef } from './endRechecks.js';
import { after, type EngineContext } from './context.js';

export type EndOutcome = 'success' | 'failed' | 'retrying' | 'lease_lost';

export interface Terminal {
  status: 'success' | 'failed';
  result: Record<string, unknown>;
  error: string | null;
  touchedSurfaces: readonly string[];
  /** Where the watermark moves on success (incremental / full_resync only). */
  watermark: Date | null;
}

interface EndRequest {
  unit: UnitRow;
  owner: string;
  t: Terminal;
  dataset: DatasetSpec | undefined;
  trace: TraceCarrier | null | undefined;
}

/**
 * 'lease_lost'; the unit's terminal status and whether it saw other open units; or the error that
 * ended this unit alone (after its batch failed and it was ended again on its own).
 */
type Ended = 'lease_lost' | { status: Terminal['status']; sawOthers: boolean } | { error: unknown };

/** An end and the sequence number of the commit that made it (see ./endRechecks.ts). */
interface Committed {
  ended: Ended;
  commit: number;
}

/**
 * One end statement of an engine at a time: while it commits, the ends that arrive fill the
 * next one (an idle worker's end still goes out at once). Two workers' ends still run side by side.
 */
const ENDS_IN_FLIGHT = 1;

/** Group commit of one engine's unit ends, and their re-checks (never shared between engines). */
const enders = new WeakMap<EngineContext, { ends: Coalescer<EndRequest, Committed>; rechecks: EndRechecks }>();

function batchesOf(ctx: EngineContext) {
  let b = enders.get(ctx);
  if (!b) {
    const reads = new Coalescer((runs: RunRef[]) => recheckBatch(ctx, runs), 1);
    const rechecks = new EndRechecks((ref) => reads.submit(ref));
    b = { ends: new Coalescer((reqs) => endAndCount(ctx, rechecks, reqs), ENDS_IN_FLIGHT), rechecks };
    enders.set(ctx, b);
  }
  return b;
}

/**
 * Success or failure in ONE commit: the CAS on our own live lease, the finalize / freed-capacity
 * wake-ups (one statement), and the watermark when one moves. A lost lease writes nothing. After
 * commit, a unit that saw other open units re-checks with a fresh snapshot and arms finalize if
 * the run became finalizable (or a later end batch of this engine stands in for that re-check, see
 * ./endRechecks.ts). Ends that happen at the same time in one engine share that commit (each unit
 * its own CAS, its own watermark and wake-ups), so under load a commit finishes many units.
 */
export async function endUnit(
  ctx: EngineContext,
  unit: UnitRow,
  owner: string,
  t: Terminal,
  dataset: DatasetSpec | undefined,
  trace?: TraceCarrier | null,
): Promise<EndOutcome> {
  const b = batchesOf(ctx);
  b.rechecks.queuedEnd(unit.sync_run_id);
  const { ended, commit } = await b.ends.submit({ unit, owner, t, dataset, trace });
  if (ended === 'lease_lost') return 'lease_lost';
  if ('error' in ended) throw ended.error;
  await ctx.faults.hit('unit.afterComplete.beforeRecheck');
  if (ended.sawOthers) inBackground(ctx, b.rechecks.after({ orgId: unit.org_id, runId: unit.sync_run_id, trace }, commit), unit.sync_run_id);
  return ended.status;
}

/** Re-checks still running after their units' tasks returned, per engine. */
const background = new WeakMap<EngineContext, Set<Promise<void>>>();

/**
 * The unit's task does not wait for its re-check: the worker slot goes to the next message while
 * the re-check waits for a later batch or runs. A re-check that fails, or dies with its process,
 * is the materializer's finalizable scan's (as a crash between commit and re-check always was).
 */
function inBackground(ctx: EngineContext, recheck: Promise<void>, runId: string): void {
  let set = background.get(ctx);
  if (!set) background.set(ctx, (set = new Set()));
  const tracked = recheck.catch((err: unknown) =>
    ctx.logger.warn({ runId, err: describeError(err) }, 'finalize re-check failed; the materializer arms finalize'),
  );
  set.add(tracked);
  void tracked.finally(() => set.delete(tracked));
}

/** Resolves once every re-check this engine started has been made (a graceful stop waits for it). */
export async function settleRechecks(ctx: EngineContext): Promise<void> {
  const set = background.get(ctx);
  while (set && set.size > 0) await Promise.all([...set]);
}

/** One batch of ends, told to the re-checks: when it started, whether it committed, which runs it finished units of. */
async function endAndCount(ctx: EngineContext, rechecks: EndRechecks, reqs: EndRequest[]): Promise<Committed[]> {
  const batch = rechecks.begin(reqs.map((r) => r.unit.sync_run_id));
  let ended: Ended[];
  try {
    ended = await endBatch(ctx, reqs);
  } catch (err) {
    rechecks.failed(batch);
    throw err;
  }
  const finished = new Set(reqs.filter((_, i) => isFinished(ended[i]!)).map((r) => r.unit.sync_run_id));
  const commit = rechecks.committed(batch, finished);
  return ended.map((e) => ({ ended: e, commit }));
}

function isFinished(e: Ended): boolean {
  return e !== 'lease_lost' && !('error' in e);
}

/**
 * One batch of ends. If it fails (other than by an injected crash) and held more than one unit,
 * every unit is ended again on its own, so one unit's error never fails another.
 */
async function endBatch(ctx: EngineContext, reqs: EndRequest[]): Promise<Ended[]> {
  try {
    return await endOnce(ctx, reqs);
  } catch (err) {
    if (reqs.length === 1 || err instanceof InjectedFault) throw err;
    return Promise.all(reqs.map((r) => endBatch(ctx, [r]).then((e) => e[0]!, (error: unknown) => ({ error }))));
  }
}

/**
 * The terminal CAS statement arms everything the batch's ends wake (finishUnits), so a batch that
 * moves no watermark commits it on its own: one statement, one round trip. A batch that moves one
 * (incremental and full_resync successes) adds the watermark upserts in the same transaction; so
 * does a batch while the `unit.complete.beforeCommit` fault point is armed (tests hold ends there,
 * between their writes and their commits).
 */
async function endOnce(ctx: EngineContext, reqs: EndRequest[]): Promise<Ended[]> {
  const items = reqs.map((r) => ({ unitId: r.unit.id, owner: r.owner, ...r.t, trace: r.trace }));
  if (!reqs.some(movesWatermark) && !ctx.faults.isArmed('unit.complete.beforeCommit')) {
    return endedOf(reqs, await finishUnits(ctx.db, items, ctx.clock.now(), MAX_RUNS_WOKEN));
  }
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now();
    const ended = endedOf(reqs, await finishUnits(tx, items, now, MAX_RUNS_WOKEN));
    for (const [i, { unit, t }] of reqs.entries()) {
      if (ended[i] === 'lease_lost' || !movesWatermark(reqs[i]!)) continue;
      const at = t.watermark!;
      await advanceWatermark(tx, { orgId: unit.org_id, integrationId: unit.integration_id, sourceId: unit.source_id!, datasetKey: unit.dataset_key, at }, now);
    }
    for (const e of ended) if (e !== 'lease_lost') await ctx.faults.hit('unit.complete.beforeCommit');
    return ended;
  });
}

/** A success that moves its source's watermark (incremental / full_resync of a dataset that keeps one). */
function movesWatermark({ unit, t, dataset }: EndRequest): boolean {
  return t.status === 'success' && t.watermark !== null && unit.source_id !== null && unit.mode !== 'backfill' && dataset?.keepsWatermark === true;
}

/** Each request's end: its row came back from the CAS (same id and owner), or its lease was lost. */
function endedOf(reqs: EndRequest[], rows: (EndedUnit & EndFacts)[]): Ended[] {
  return reqs.map(({ unit, owner, t }) => {
    const row = rows.find((r) => r.id === unit.id && r.lease_owner === owner);
    return row ? { status: t.status, sawOthers: row.others_open } : 'lease_lost';
  });
}

/** Re-checks, each made after its unit's commit: one read, one transaction if needed. */
async function recheckBatch(ctx: EngineContext, runs: RunRef[]): Promise<void[]> {
  const done = new Set(await runsWithoutOpenUnits(ctx.db, [...new Set(runs.map((r) => r.runId))]));
  const finalize = runs.filter((r) => done.has(r.runId));
  if (finalize.length > 0) {
    await ctx.db.transaction((tx) => {
      const now = ctx.clock.now();
      return armOutboxRows(tx, finalize.map((r) => ({ kind: 'finalize_sync_run' as const, orgId: r.orgId, runId: r.runId, availableAt: now, trace: r.trace })), now);
    });
  }
  return runs.map(() => undefined);
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
    await armAfterUnitEnd(tx, row, now, trace, [own]);
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
