/** The relay: claim due outbox rows, re-check, publish, mark — until nothing is due. */
import type { TaskMessage } from '../broker/types.js';
import { outboxBackoffMs } from '../domain/backoff.js';
import { describeError, InjectedFault } from '../errors.js';
import { PublishSpans } from '../observability/spans.js';
import { tracerOf } from '../observability/trace.js';
import {
  awaitOutboxAck,
  claimDueOutboxRows,
  hasParkedOutboxRows,
  markOutboxDispatched,
  markOutboxPublishFailed,
  releaseOutboxClaims,
  wakeParkedOutboxRows,
  type ClaimedOutboxRow,
  type ClaimRef,
} from '../store/outbox.js';
import type { OutboxRow } from '../store/rows.js';
import type { EngineContext } from '../context.js';
import { after } from '../clock.js';
import { outboxMessage } from '../broker/messages.js';

export interface RelayCounters {
  relayed_dispatch: number;
  relayed_finalize: number;
  relayed_post_sync: number;
  publish_failures: number;
  /** Rows a failed publish had parked, due again because the broker took messages again. */
  parked_woken: number;
  skipped: number;
}

export function emptyRelayCounters(): RelayCounters {
  return {
    relayed_dispatch: 0,
    relayed_finalize: 0,
    relayed_post_sync: 0,
    publish_failures: 0,
    parked_woken: 0,
    skipped: 0,
  };
}

/** When the first publish of a relay call went through (null: none did). */
interface Published {
  since: Date | null;
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
  const published: Published = { since: null };
  await relayRound(ctx, counters, published);
  // The broker took a publish: rows parked by publishes that failed before it are due again (once
  // per call, so a row that fails again waits for the next relay).
  if (published.since) {
    const limit = ctx.settings.reconcileBatch * MAX_BATCH_GROWTH;
    counters.parked_woken += await wakeParkedOutboxRows(ctx.db, ctx.clock.now(), published.since, limit);
    if (counters.parked_woken > 0) await relayRound(ctx, counters, { since: null });
  }
  return counters;
}

/**
 * A full pass with parked rows asks the broker; if it answers, the row parked longest is tried now
 * (and, if its publish goes through, wakes the others). While the broker fails, rows keep their
 * backoff. Returns how many rows it woke (0 or 1).
 */
export async function probeParkedRows(ctx: EngineContext): Promise<number> {
  const now = ctx.clock.now();
  if (!(await hasParkedOutboxRows(ctx.db, now))) return 0;
  try {
    await ctx.broker.ping();
  } catch {
    return 0;
  }
  return wakeParkedOutboxRows(ctx.db, now, now, 1);
}

async function relayRound(ctx: EngineContext, counters: RelayCounters, published: Published): Promise<void> {
  const base = ctx.settings.reconcileBatch;
  let size = base;
  let rows = await claimBatch(ctx, size);
  // The previous batch's marks run while this batch is published (the rows are disjoint).
  let marking: { rows: ClaimedOutboxRow[]; done: Promise<void> } | null = null;
  while (rows.length > 0) {
    await ctx.faults.hit('relay.afterClaim.beforePublish');
    const full = rows.length >= size;
    size = full ? Math.min(size * 2, base * MAX_BATCH_GROWTH) : size;
    const next = full ? claimBatch(ctx, size) : null;
    next?.catch(() => undefined);
    const previous: typeof marking = marking;
    try {
      const stage = await relayBatch(ctx, rows, counters, published);
      stage.marked.catch(() => undefined);
      marking = { rows, done: stage.marked };
      await previous?.done;
    } catch (err) {
      await previous?.done.catch(() => undefined);
      await releaseUnlessCrash(ctx, err, [
        ...(previous?.rows ?? []),
        ...rows,
        ...((await next?.catch(() => [])) ?? []),
      ]);
      throw err;
    }
    rows = next ? await next : [];
  }
  const last: typeof marking = marking;
  await last?.done.catch(async (err: unknown) => {
    await releaseUnlessCrash(ctx, err, last.rows);
    throw err;
  });
}

/**
 * An error, not a crash (an injected fault stands for a dead process): give back what is still
 * claimed so the next relay need not wait for the claim to expire (rows already marked are left
 * alone by the release's guard).
 */
async function releaseUnlessCrash(ctx: EngineContext, err: unknown, rows: ClaimedOutboxRow[]): Promise<void> {
  if (err instanceof InjectedFault) return;
  await releaseOutboxClaims(ctx.db, rows.map(ref), ctx.clock.now()).catch(() => undefined);
}

/** Claims a batch with the facts the re-check needs (read in the claim's own statement). */
function claimBatch(ctx: EngineContext, batch: number): Promise<ClaimedOutboxRow[]> {
  const now = ctx.clock.now();
  return claimDueOutboxRows(
    ctx.db,
    now,
    after(now, ctx.settings.claimTimeoutMs),
    batch,
    after(now, -ctx.settings.dispatchStaleMs),
  );
}

/** Relays one claimed batch; resolves once published, with the marks of what it published still running. */
async function relayBatch(
  ctx: EngineContext,
  rows: ClaimedOutboxRow[],
  c: RelayCounters,
  published: Published,
): Promise<{ marked: Promise<void> }> {
  const atMostOncePostSync = ctx.settings.postSyncDelivery === 'at-most-once';
  const skip: OutboxRow[] = [];
  const publish: OutboxRow[] = [];
  const postSyncFirst: OutboxRow[] = [];
  const unknown: OutboxRow[] = [];
  for (const row of rows) {
    if (row.kind === 'post_sync') (atMostOncePostSync ? postSyncFirst : publish).push(row);
    else if (row.kind === 'dispatch_sync_run')
      (row.run_live && (row.run_needs_dispatch || !row.run_open) ? publish : skip).push(row);
    else if (row.kind === 'finalize_sync_run') (row.run_live && !row.run_open ? publish : skip).push(row);
    else unknown.push(row);
  }
  if (skip.length > 0) {
    await markOutboxDispatched(ctx.db, skip.map(ref), ctx.clock.now());
    c.skipped += skip.length;
    for (const r of skip) ctx.metrics?.relaySkippedRows(r.kind);
  }
  await failRows(ctx, unknown, new Error('unknown outbox kind'), c);
  await relayPostSyncAtMostOnce(ctx, postSyncFirst, c, published);
  return publishThenMark(ctx, publish, c, published);
}

/** dispatch / finalize (and exactly-once post_sync): publish while claimed, then mark (resolving once published). */
async function publishThenMark(
  ctx: EngineContext,
  rows: OutboxRow[],
  c: RelayCounters,
  published: Published,
): Promise<{ marked: Promise<void> }> {
  if (rows.length === 0) return { marked: Promise.resolve() };
  const spans = new PublishSpans(tracerOf(ctx), rows);
  const startedAt = ctx.clock.now();
  try {
    await ctx.broker.publish(rows.map(outboxMessage));
  } catch (err) {
    spans.failed(err);
    await failRows(ctx, rows, err, c);
    return { marked: Promise.resolve() };
  }
  published.since ??= startedAt;
  spans.ok();
  await ctx.faults.hit('relay.afterPublish.beforeMark');
  return { marked: markPublished(ctx, rows, c) };
}

/** Marks published rows dispatched (exactly-once post_sync rows: awaiting their ack). */
async function markPublished(ctx: EngineContext, rows: OutboxRow[], c: RelayCounters): Promise<void> {
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
      ctx.logger.warn(
        { runId: r.sync_run_id, outboxId: r.id, kind: r.kind },
        'outbox claim lost before mark (another relay took over)',
      );
    }
  }
  for (const r of rows) {
    c[COUNTER[r.kind]!] += 1;
    ctx.metrics?.relayPublished(r.kind);
    ctx.logger.debug(
      { runId: r.sync_run_id, outboxId: r.id, kind: r.kind, attempts: r.attempts },
      'outbox row published',
    );
  }
}

/** post_sync at-most-once: mark dispatched and commit FIRST, then publish; a failure is logged, never re-armed. */
async function relayPostSyncAtMostOnce(
  ctx: EngineContext,
  rows: OutboxRow[],
  c: RelayCounters,
  published: Published,
): Promise<void> {
  if (rows.length === 0) return;
  const marked = new Set(await markOutboxDispatched(ctx.db, rows.map(ref), ctx.clock.now()));
  const mine = rows.filter((r) => marked.has(r.id));
  await ctx.faults.hit('relay.postSync.afterMark.beforePublish');
  const messages: TaskMessage[] = mine.map(outboxMessage);
  const spans = new PublishSpans(tracerOf(ctx), mine);
  const startedAt = ctx.clock.now();
  try {
    await ctx.broker.publish(messages);
    if (messages.length > 0) published.since ??= startedAt;
    spans.ok();
    c.relayed_post_sync += mine.length;
    ctx.metrics?.relayPublished('post_sync', mine.length);
    for (const r of mine)
      ctx.logger.debug(
        { runId: r.sync_run_id, outboxId: r.id, kind: r.kind, attempts: r.attempts },
        'outbox row published',
      );
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
  for (const r of rows)
    ctx.logger.warn({ runId: r.sync_run_id, outboxId: r.id, kind: r.kind, err: error }, 'outbox publish failed');
}

function ref(r: OutboxRow): ClaimRef {
  return { id: r.id, claimToken: r.claim_token! };
}
