/** dispatch_sync_run(run_id) — at-least-once; the unit CAS makes duplicates harmless. */
import type { Tx } from '../db/types.js';
import { isTerminalRun } from '../domain/statuses.js';
import { outboxBackoffMs } from '../domain/backoff.js';
import { describeError } from '../errors.js';
import {
  candidateBuckets,
  claimDispatchCandidates,
  countActiveInBucket,
  denyUnits,
  dispatchState,
  lockBuckets,
  markUnitsUnpublished,
} from '../store/dispatch.js';
import { runTrace } from '../observability/trace.js';
import { markJobRunRunning } from '../store/jobRuns.js';
import { armOutbox, recordOutboxError } from '../store/outbox.js';
import type { Bucket, DispatchedUnit, RunRow } from '../store/rows.js';
import { getRun, lockRunUnlessBusy, markRunDispatching } from '../store/runs.js';
import type { EngineContext } from '../context.js';
import { after } from '../clock.js';
import { finalizeInTx } from './finalizeSyncRun.js';
import { unitMessages } from '../broker/messages.js';

/** Units per publish (their run_sync_unit messages go out in one call). */
const PUBLISH_CHUNK = 256;
/**
 * Units the first dispatch transaction claims: workers start on them while a second transaction
 * claims the rest of a large run (claiming 2,000 units takes 50–100 ms). Each is committed, then
 * published. More slices would not start anything sooner, and every unit ending while planned
 * units remain wakes the run's dispatch row again.
 */
export const FIRST_SLICE = 64;
/** Units each later dispatch transaction claims: a 100,000-unit run is claimed and published in slices. */
export const NEXT_SLICE = 5000;

/**
 * When another transaction holds the run (a dispatch slice of a large run, a finalize, a cancel),
 * a dispatch task re-arms the run's dispatch this much later and returns instead of waiting: tasks
 * queueing on one run's lock held worker slots for seconds behind a 100,000-unit run's slices.
 */
export const BUSY_RETRY_MS = 500;

export type DispatchOutcome =
  | { kind: 'skipped'; reason: 'missing' | 'terminal' | 'busy' }
  | { kind: 'denied'; deniedUnits: number; runFailed: boolean }
  | { kind: 'dispatched'; units: number; published: boolean };

/**
 * Claims and publishes up to FIRST_SLICE of the run's dispatchable units, then, while a slice comes
 * back full, the rest the caps allow NEXT_SLICE at a time; the transaction that ends short re-arms
 * what is left.
 * A crash between the two leaves planned units and no pending dispatch row: the materializer's
 * next pass arms it (its last message went out, and the bucket has room).
 */
export async function dispatchSyncRun(ctx: EngineContext, runId: string): Promise<DispatchOutcome> {
  let units = 0;
  const seen: SeenOfRun = { buckets: null, referenceDone: false };
  for (let slice = FIRST_SLICE; ; slice = NEXT_SLICE) {
    const now = ctx.clock.now();
    const result = await ctx.db.transaction((tx) => dispatchInTx(ctx, tx, runId, now, slice, seen));
    if (result.kind !== 'claimed') return units > 0 ? { kind: 'dispatched', units, published: true } : result.outcome;
    await ctx.faults.hit('dispatch.afterCommit.beforePublish');
    const published = await publishUnits(ctx, result.run, result.units);
    units += result.units.length;
    if (!published || result.units.length < slice) return { kind: 'dispatched', units, published };
  }
}

type TxResult = { kind: 'done'; outcome: DispatchOutcome } | { kind: 'claimed'; run: RunRow; units: DispatchedUnit[] };

/**
 * What a dispatch task's first slice learned of its run that its later slices need not read again
 * (each such read walks every unit of the run: ~60 ms at 100,000 units, per slice):
 * - its total was checked against SYNC_RUN_MAX_UNITS (planning adds no unit to a run later), and
 *   whether every reference unit has ended (an ended unit does not reopen);
 * - the buckets of its units with dispatch work (a run's units keep their bucket; one whose
 *   candidates are gone claims nothing).
 * A later slice runs only after a full one, so the caps had room a moment before.
 */
interface SeenOfRun {
  buckets: Bucket[] | null;
  referenceDone: boolean;
}

async function dispatchInTx(
  ctx: EngineContext,
  tx: Tx,
  runId: string,
  now: Date,
  slice: number,
  seen: SeenOfRun,
): Promise<TxResult> {
  const run = await lockRunUnlessBusy(tx, runId);
  if (!run) return { kind: 'done', outcome: await busyOrMissing(tx, runId, now) };
  if (isTerminalRun(run.status)) return { kind: 'done', outcome: { kind: 'skipped', reason: 'terminal' } };
  const staleBefore = after(now, -ctx.settings.dispatchStaleMs);
  if (!seen.referenceDone) {
    const before = await dispatchState(tx, runId, now, staleBefore);
    if (before.total > ctx.settings.runMaxUnits) {
      return { kind: 'done', outcome: await denyRun(ctx, tx, run, before.inFlight, now, staleBefore) };
    }
    seen.referenceDone = before.openReference === 0;
  }
  const units = await claimWithinCaps(ctx, tx, runId, seen, slice, now, staleBefore);
  if (units.length > 0 && (await markRunDispatching(tx, runId, now))) await markJobRunRunning(tx, runId, now);
  if (units.length < slice) await rearm(ctx, tx, run, now, staleBefore);
  return { kind: 'claimed', run, units };
}

/** The run is held by another transaction (re-armed shortly: it still wants dispatching), or gone. */
async function busyOrMissing(tx: Tx, runId: string, now: Date): Promise<DispatchOutcome> {
  const run = await getRun(tx, runId);
  if (!run) return { kind: 'skipped', reason: 'missing' };
  const target = [{ orgId: run.org_id, runId }];
  await armOutbox(tx, 'dispatch_sync_run', target, after(now, BUSY_RETRY_MS), now, runTrace(run));
  return { kind: 'skipped', reason: 'busy' };
}

/**
 * Per bucket, under sorted advisory locks: claim at most cap − active candidates, and at most
 * `slice` in all. In a task's first slice a bucket already full is passed over without its lock:
 * behind a backlog many runs' dispatches find no room, and they must not queue on the lock that
 * dispatches which can claim need (a slot freed just after the look wakes the oldest waiting run,
 * see endWakes.ts; the countdown re-arm stays). Later slices follow a full one: they lock the
 * buckets the first found open and count under the lock only.
 */
async function claimWithinCaps(
  ctx: EngineContext,
  tx: Tx,
  runId: string,
  seen: SeenOfRun,
  slice: number,
  now: Date,
  staleBefore: Date,
): Promise<DispatchedUnit[]> {
  const cap = ctx.settings.concurrencyPerBucket;
  let buckets = seen.buckets;
  if (!buckets) {
    buckets = [];
    for (const bucket of await candidateBuckets(tx, runId)) {
      if ((await countActiveInBucket(tx, bucket, now, staleBefore)) < cap) buckets.push(bucket);
    }
    seen.buckets = buckets;
  }
  await lockBuckets(tx, buckets);
  const claimed: DispatchedUnit[] = [];
  for (const bucket of buckets) {
    if (claimed.length >= slice) break;
    const active = await countActiveInBucket(tx, bucket, now, staleBefore);
    const limit = Math.min(cap - active, slice - claimed.length);
    const includeWorkItems = seen.referenceDone;
    claimed.push(...(await claimDispatchCandidates(tx, { runId, bucket, limit, now, staleBefore, includeWorkItems })));
  }
  return claimed;
}

/** Capped or not-yet-due units re-arm the dispatch row; a run with nothing left arms finalize. */
async function rearm(ctx: EngineContext, tx: Tx, run: RunRow, now: Date, staleBefore: Date): Promise<void> {
  const s = await dispatchState(tx, run.id, now, staleBefore);
  const target = [{ orgId: run.org_id, runId: run.id }];
  const times: number[] = [];
  if (s.waiting > 0) times.push(now.getTime() + ctx.settings.redispatchCountdownMs);
  if (s.nextRetryAt) times.push(s.nextRetryAt.getTime());
  if (times.length > 0) {
    await armOutbox(tx, 'dispatch_sync_run', target, new Date(Math.min(...times)), now, runTrace(run));
  } else if (s.inFlight === 0) {
    await armOutbox(tx, 'finalize_sync_run', target, now, now, runTrace(run));
  }
}

/** Total-cap denial: fail what has not started; with nothing in flight the run fails at once. */
async function denyRun(
  ctx: EngineContext,
  tx: Tx,
  run: RunRow,
  inFlight: number,
  now: Date,
  staleBefore: Date,
): Promise<DispatchOutcome> {
  const denied = await denyUnits(tx, run.id, now, staleBefore);
  ctx.logger.warn({ runId: run.id, deniedUnits: denied.length }, 'run exceeds SYNC_RUN_MAX_UNITS: dispatch denied');
  if (inFlight === 0) {
    await finalizeInTx(ctx, tx, run.id, now, { capped_unit_ids: denied });
    return { kind: 'denied', deniedUnits: denied.length, runFailed: true };
  }
  await armOutbox(tx, 'finalize_sync_run', [{ orgId: run.org_id, runId: run.id }], now, now, runTrace(run));
  return { kind: 'denied', deniedUnits: denied.length, runFailed: false };
}

/**
 * After commit: run_sync_unit messages of up to SYNC_UNITS_PER_MESSAGE claimed units each, carrying
 * the run's trace, in chunks so workers start on the first while the rest is published; on failure
 * re-arm the dispatch row with backoff
 * and its last_error (a parked row, due as soon as the broker takes messages again — see relayDue).
 * Units of chunks already published are marked unpublished too: if still unclaimed they are
 * published again, and the claim CAS makes the duplicate harmless.
 */
async function publishUnits(ctx: EngineContext, run: RunRow, units: DispatchedUnit[]): Promise<boolean> {
  if (units.length === 0) return true;
  const trace = runTrace(run);
  try {
    for (let i = 0; i < units.length; i += PUBLISH_CHUNK) {
      await ctx.broker.publish(unitMessages(units.slice(i, i + PUBLISH_CHUNK), ctx.settings.unitsPerMessage, trace));
    }
    return true;
  } catch (err) {
    const now = ctx.clock.now();
    ctx.logger.warn(
      { runId: run.id, unitIds: units.map((u) => u.id), err: describeError(err) },
      'run_sync_unit publish failed; dispatch re-armed',
    );
    await ctx.db.transaction(async (tx) => {
      await markUnitsUnpublished(tx, units);
      await armOutbox(
        tx,
        'dispatch_sync_run',
        [{ orgId: run.org_id, runId: run.id }],
        after(now, outboxBackoffMs(1)),
        now,
        trace,
      );
      await recordOutboxError(tx, run.id, 'dispatch_sync_run', describeError(err));
    });
    return false;
  }
}
