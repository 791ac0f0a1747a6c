/** The relay: claim due outbox rows, re-check, publish, mark — until nothing is due. */
import type { TaskMessage } from '../broker/types.js';
import { outboxBackoffMs } from '../domain/backoff.js';
import { describeError, InjectedFault } from '../errors.js';
import { PublishSpans } from '../observability/spans.js';
import { tracerOf } from '../observability/trace.js';
import {
  awaitOutboxAck,
  claimDueOutboxRows,
  markOutboxDispatched,
  markOutboxPublishFailed,
  releaseOutboxClaims,
  type ClaimedOutboxRow,
  type ClaimRef,
} from '../store/outbox.js';
import type { OutboxRow } from '../store/rows.js';
import { after, type EngineContext } from '../tasks/context.js';
import { outboxMessage } from '../tasks/messages.js';

export interface RelayCounters {
  relayed_dispatch: number;
  relayed_finalize: number;
  relayed_post_sync: number;
  publish_failures: number;
  skipped: number;
}

export function emptyRelayCounters(): RelayCounters {
  return { relayed_dispatch: 0, relayed_finalize: 0, relayed_post_sync: 0, publish_failures: 0, skipped: 0 };
}

const COUNTER: Record<string, keyof RelayCounters> = {
  dispatch_sync_run: 'relayed_dispatch',
  finalize_sync_run: 'relayed_finalize',
  post_sync: 'relayed_post_sync',
};

/** While a backlog lasts, each full claim doubles the next, up to this many SYNC_RECONCILE_BATCH. */
const MAX_BATCH_GROWTH = 10;

/**
 * Claims and relays batches until fewer than a batch are due. While one batch is published and
 * marked, the next is already being claimed (claims are disjoint: SKIP LOCKED and live claims),
 * so the database and the broker work at the same time; during a backlog the batch grows.
 */
export async function relayDue(ctx: EngineContext): Promise<RelayCounters> {
  const counters = emptyRelayCounters();
  const base = ctx.settings.reconcileBatch;
  let size = base;
  let rows = await claimBatch(ctx, size);
  while (rows.length > 0) {
    await ctx.faults.hit('relay.afterClaim.beforePublish');
    const full = rows.length >= size;
    size = full ? Math.min(size * 2, base * MAX_BATCH_GROWTH) : size;
    const next = full ? claimBatch(ctx, size) : null;
    next?.catch(() => undefined);
    try {
      await relayBatch(ctx, rows, counters);
    } catch (err) {
      // An error, not a crash (an injected fault stands for a dead process): give back what is
      // still claimed so the next relay need not wait for the claim to expire.
      const claimed = [...rows, ...((await next?.catch(() => [])) ?? [])];
      if (!(err instanceof InjectedFault)) {
        await releaseOutboxClaims(ctx.db, claimed.map(ref), ctx.clock.now()).catch(() => undefined);
      }
      throw err;
    }
    rows = next ? await next : [];
  }
  return counters;
}

/** Claims a batch with the facts the re-check needs (read in the claim's own statement). */
function claimBatch(ctx: EngineContext, batch: number): Promise<ClaimedOutboxRow[]> {
  const now = ctx.clock.now();
  return claimDueOutboxRows(ctx.db, now, after(now, ctx.settings.claimTimeoutMs), batch, after(now, -ctx.settings.dispatchStaleMs));
}

async function relayBatch(ctx: EngineContext, rows: ClaimedOutboxRow[], c: RelayCounters): Promise<void> {
  const atMostOncePostSync = ctx.settings.postSyncDelivery === 'at-most-once';
  const skip: OutboxRow[] = [];
  const publish: OutboxRow[] = [];
  const postSyncFirst: OutboxRow[] = [];
  const unknown: OutboxRow[] = [];
  for (const row of rows) {
    if (row.kind === 'post_sync') (atMostOncePostSync ? postSyncFirst : publish).push(row);
    else if (row.kind === 'dispatch_sync_run') (row.run_live && (row.run_needs_dispatch || !row.run_open) ? publish : skip).push(row);
    else if (row.kind === 'finalize_sync_run') (row.run_live && !row.run_open ? publish : skip).push(row);
    else unknown.push(row);
  }
  if (skip.length > 0) {
    await markOutboxDispatched(ctx.db, skip.map(ref), ctx.clock.now());
    c.skipped += skip.length;
    for (const r of skip) ctx.metrics?.relaySkippedRows(r.kind);
  }
  await failRows(ctx, unknown, new Error('unknown outbox kind'), c);
  await relayPostSyncAtMostOnce(ctx, postSyncFirst, c);
  await publishThenMark(ctx, publish, c);
}

/** dispatch / finalize (and exactly-once post_sync): publish while claimed, then mark. */
async function publishThenMark(ctx: EngineContext, rows: OutboxRow[], c: RelayCounters): Promise<void> {
  if (rows.length === 0) return;
  const spans = new PublishSpans(tracerOf(ctx), rows);
  try {
    await ctx.broker.publish(rows.map(outboxMessage));
  } catch (err) {
    spans.failed(err);
    await failRows(ctx, rows, err, c);
    return;
  }
  spans.ok();
  await ctx.faults.hit('relay.afterPublish.beforeMark');
  const now = ctx.clock.now();
  const acks = rows.filter((r) => r.kind === 'post_sync');
  const marks = rows.filter((r) => r.kind !== 'post_sync');
  const done = [
    ...(await markOutboxDispatched(ctx.db, marks.map(ref), now)),
    ...(await awaitOutboxAck(ctx.db, acks.map(ref), after(now, ctx.settings.claimTimeoutMs), now)),
  ];
  if (done.length < rows.length) {
    const marked = new Set(done);
    for (const r of rows.filter((row) => !marked.has(row.id))) {
      ctx.logger.warn({ runId: r.sync_run_id, outboxId: r.id, kind: r.kind }, 'outbox claim lost before mark (another relay took over)');
    }
  }
  for (const r of rows) {
    c[COUNTER[r.kind]!] += 1;
    ctx.metrics?.relayPublished(r.kind);
    ctx.logger.debug({ runId: r.sync_run_id, outboxId: r.id, kind: r.kind, attempts: r.attempts }, 'outbox row published');
  }
}

/** post_sync at-most-once: mark dispatched and commit FIRST, then publish; a failure is logged, never re-armed. */
async function relayPostSyncAtMostOnce(ctx: EngineContext, rows: OutboxRow[], c: RelayCounters): Promise<void> {
  if (rows.length === 0) return;
  const marked = new Set(await markOutboxDispatched(ctx.db, rows.map(ref), ctx.clock.now()));
  const mine = rows.filter((r) => marked.has(r.id));
  await ctx.faults.hit('relay.postSync.afterMark.beforePublish');
  const messages: TaskMessage[] = mine.map(outboxMessage);
  const spans = new PublishSpans(tracerOf(ctx), mine);
  try {
    await ctx.broker.publish(messages);
    spans.ok();
    c.relayed_post_sync += mine.length;
    ctx.metrics?.relayPublished('post_sync', mine.length);
    for (const r of mine) ctx.logger.debug({ runId: r.sync_run_id, outboxId: r.id, kind: r.kind, attempts: r.attempts }, 'outbox row published');
  } catch (err) {
    spans.failed(err);
    c.publish_failures += mine.length;
    ctx.metrics?.relayFailed('post_sync', mine.length);
    for (const r of mine) {
      ctx.logger.error({ runId: r.sync_run_id, outboxId: r.id, err: describeError(err) }, 'post_sync_publish_lost');
    }
  }
}

async function failRows(ctx: EngineContext, rows: OutboxRow[], err: unknown, c: RelayCounters): Promise<void> {
  if (rows.length === 0) return;
  const now = ctx.clock.now();
  const error = describeError(err);
  await markOutboxPublishFailed(
    ctx.db,
    rows.map((r) => ({ ...ref(r), retryAt: after(now, outboxBackoffMs(r.attempts)), error })),
    now,
  );
  c.publish_failures += rows.length;
  for (const r of rows) ctx.metrics?.relayFailed(r.kind);
  for (const r of rows) ctx.logger.warn({ runId: r.sync_run_id, outboxId: r.id, kind: r.kind, err: error }, 'outbox publish failed');
}

function ref(r: OutboxRow): ClaimRef {
  return { id: r.id, claimToken: r.claim_token! };
}
