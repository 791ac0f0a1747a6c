/**
 * A worker: consumes the broker with a configurable concurrency and runs the four tasks.
 * close(): stop taking work, let in-flight units finish for `graceMs`, then abandon the rest
 * (their leases end at once so the reconciler takes them), and close. States:
 * idle → running → draining → stopped.
 *
 * A task that fails because PostgreSQL is unreachable (an outage, a restart) is handled again once
 * it answers — for up to `databaseWaitMs` — instead of being dropped: the broker never redelivers,
 * so a dropped run_sync_unit would wait for the dispatch-stale repair. Handling a task again is a
 * duplicate delivery, which every task tolerates (a unit already claimed is not dispatchable).
 *
 * run_sync_unit messages share the slots fairly between orgs (./orgShare.ts), and a watch stops the
 * units of a cancelled run within `watchIntervalMs` (./unitWatch.ts).
 */
import type { Consumer, TaskMessage } from '../broker/types.js';
import { isDatabaseUnavailable } from '../db/retry.js';
import { describeError } from '../errors.js';
import { outboxBackoffMs } from '../domain/backoff.js';
import { ATTR, inTaskSpan, outcomeName } from '../observability/spans.js';
import { failSpan, traceCarrier, traceIds, tracerOf } from '../observability/trace.js';
import { armOutbox } from '../store/outbox.js';
import type { EngineContext } from '../context.js';
import { after } from '../clock.js';
import { dispatchSyncRun } from '../tasks/dispatchSyncRun.js';
import { finalizeSyncRun } from '../tasks/finalizeSyncRun.js';
import { outboxIdOf } from '../broker/messages.js';
import { postSync } from '../tasks/postSync.js';
import { DEFAULT_YIELD_DELAY_MS, runUnitMessage } from '../tasks/runSyncUnit.js';
import { putBackUnits } from '../tasks/unitYield.js';
import { OrgShare } from './orgShare.js';
import { UnitWatch } from './unitWatch.js';

export interface WorkerOptions {
  /** Messages handled at once. @default 4 */
  concurrency?: number;
  /** How long close() lets in-flight units finish before abandoning them. @default 10 s */
  graceMs?: number;
  /** How long a task waits out PostgreSQL being unreachable before it is given up. @default 60 s */
  databaseWaitMs?: number;
  /** First pause before handling such a task again; it doubles up to 5 s. @default 250 ms */
  databaseRetryPauseMs?: number;
  /**
   * How often the worker looks whether a unit it holds was cancelled (then stops it) and whether an
   * org over its share must give slots back; also how long other work must have waited to count.
   * @default 1 s
   */
  watchIntervalMs?: number;
  /** A unit message put back, or a unit that yielded its slot, is dispatched again this much later. @default 5 s */
  yieldDelayMs?: number;
}

const MAX_DATABASE_PAUSE_MS = 5000;
const DEFAULT_WATCH_INTERVAL_MS = 1000;

export type WorkerState = 'idle' | 'running' | 'draining' | 'stopped';

export class Worker {
  private state: WorkerState = 'idle';
  private consumer: Consumer | null = null;
  private readonly shutdown = new AbortController();
  /** Aborted when draining starts: a task waiting out an outage stops waiting. */
  private readonly draining = new AbortController();
  private closing: Promise<void> | null = null;
  private readonly share: OrgShare;
  private readonly watch: UnitWatch;

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: WorkerOptions = {},
  ) {
    const watchMs = options.watchIntervalMs ?? DEFAULT_WATCH_INTERVAL_MS;
    this.share = new OrgShare(ctx, this.concurrency, watchMs);
    this.watch = new UnitWatch(ctx, this.share, watchMs);
  }

  private get concurrency(): number {
    return this.options.concurrency ?? 4;
  }

  get status(): WorkerState {
    return this.state;
  }

  start(): void {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.consumer = this.ctx.broker.consume((msg) => this.handle(msg), { concurrency: this.concurrency });
    this.watch.start();
  }

  /**
   * Handles one message in a span joined to the run's trace; never throws (errors are logged; the
   * outbox and reconciler recover).
   */
  async handle(msg: TaskMessage): Promise<void> {
    const { runId, unitId, unitIds } = msg.payload;
    const outboxId = outboxIdOf(msg);
    const ids = {
      task: msg.name,
      runId,
      ...(unitId ? { unitId } : {}),
      ...(unitIds ? { unitIds } : {}),
      ...(outboxId ? { outboxId } : {}),
    };
    await inTaskSpan(tracerOf(this.ctx), msg, outboxId, async (span) => {
      const logger = this.ctx.logger.child({ ...ids, ...traceIds(span) });
      try {
        const outcome = await this.runThroughOutage(msg, logger);
        const name = outcomeName(outcome);
        if (name) span.setAttribute(ATTR.outcome, name);
        logger.debug({ outcome }, 'task done');
      } catch (err) {
        failSpan(span, err);
        logger.error({ err: describeError(err) }, 'task failed');
        if (msg.name === 'post_sync') await this.rearmPostSync(msg).catch(() => undefined);
      }
    });
  }

  /** `run`, again after a growing pause while it fails on an unreachable PostgreSQL (bounded; not while draining). */
  private async runThroughOutage(msg: TaskMessage, logger: EngineContext['logger']): Promise<unknown> {
    const started = performance.now();
    const budget = this.options.databaseWaitMs ?? 60_000;
    let pause = this.options.databaseRetryPauseMs ?? 250;
    for (;;) {
      try {
        return await this.run(msg);
      } catch (err) {
        const waited = performance.now() - started;
        if (!isDatabaseUnavailable(err) || waited + pause > budget || this.draining.signal.aborted) throw err;
        logger.warn({ err: describeError(err), retryInMs: pause }, 'database unavailable; handling the task again');
        await sleep(pause, this.draining.signal);
        pause = Math.min(pause * 2, MAX_DATABASE_PAUSE_MS);
      }
    }
  }

  private run(msg: TaskMessage): Promise<unknown> {
    const { runId } = msg.payload;
    switch (msg.name) {
      case 'dispatch_sync_run':
        return dispatchSyncRun(this.ctx, runId);
      case 'run_sync_unit':
        return this.runUnits(msg);
      case 'finalize_sync_run':
        return finalizeSyncRun(this.ctx, runId);
      case 'post_sync':
        return postSync(this.ctx, runId);
    }
  }

  /**
   * A run_sync_unit message in a slot of its org; put back unclaimed when its org is at its share
   * while another org's work waits (./orgShare.ts).
   */
  private async runUnits(msg: TaskMessage): Promise<unknown> {
    const { orgId, runId, unitId, unitIds } = msg.payload;
    const trace = traceCarrier(msg.payload.trace);
    const yieldDelayMs = this.options.yieldDelayMs ?? DEFAULT_YIELD_DELAY_MS;
    const slot = await this.share.enter(orgId);
    if (!slot) {
      const ids = unitIds ?? (unitId ? [unitId] : []);
      return {
        kind: 'put_back',
        units: await putBackUnits(this.ctx, { orgId, runId, unitIds: ids }, yieldDelayMs, trace),
      };
    }
    try {
      const onLease = (lease: (typeof slot.leases)[number]) => slot.leases.push(lease);
      return await runUnitMessage(this.ctx, msg.payload, {
        shutdown: this.shutdown.signal,
        trace,
        onLease,
        yieldDelayMs,
      });
    } finally {
      this.share.leave(slot);
    }
  }

  /** exactly-once post_sync whose handler failed: due again after a backoff (receipts stop doubles). */
  private async rearmPostSync(msg: TaskMessage): Promise<void> {
    if (this.ctx.settings.postSyncDelivery !== 'exactly-once') return;
    const now = this.ctx.clock.now();
    const target = [{ orgId: msg.payload.orgId, runId: msg.payload.runId }];
    const trace = traceCarrier(msg.payload.trace);
    await this.ctx.db.transaction((tx) =>
      armOutbox(tx, 'post_sync', target, after(now, outboxBackoffMs(1)), now, trace),
    );
  }

  /** Graceful stop; a second call returns the same promise. */
  close(): Promise<void> {
    this.closing ??= this.drain();
    return this.closing;
  }

  /** Abandon in-flight units at once (a second signal). */
  abort(): void {
    this.shutdown.abort();
  }

  private async drain(): Promise<void> {
    this.state = 'draining';
    this.draining.abort();
    const consumer = this.consumer;
    if (consumer) {
      const grace = setTimeout(() => this.shutdown.abort(), this.options.graceMs ?? 10_000);
      grace.unref();
      await consumer.close();
      clearTimeout(grace);
      await this.ctx.unitEnds.settle();
    }
    await this.watch.close();
    this.state = 'stopped';
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
