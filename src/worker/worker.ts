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
import { runUnitMessage } from '../tasks/runSyncUnit.js';

export interface WorkerOptions {
  /** Messages handled at once. @default 4 */
  concurrency?: number;
  /** How long close() lets in-flight units finish before abandoning them. @default 10 s */
  graceMs?: number;
  /** How long a task waits out PostgreSQL being unreachable before it is given up. @default 60 s */
  databaseWaitMs?: number;
  /** First pause before handling such a task again; it doubles up to 5 s. @default 250 ms */
  databaseRetryPauseMs?: number;
}

const MAX_DATABASE_PAUSE_MS = 5000;

export type WorkerState = 'idle' | 'running' | 'draining' | 'stopped';

export class Worker {
  private state: WorkerState = 'idle';
  private consumer: Consumer | null = null;
  private readonly shutdown = new AbortController();
  /** Aborted when draining starts: a task waiting out an outage stops waiting. */
  private readonly draining = new AbortController();
  private closing: Promise<void> | null = null;

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: WorkerOptions = {},
  ) {}

  get status(): WorkerState {
    return this.state;
  }

  start(): void {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.consumer = this.ctx.broker.consume((msg) => this.handle(msg), { concurrency: this.options.concurrency ?? 4 });
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
        return runUnitMessage(this.ctx, msg.payload, {
          shutdown: this.shutdown.signal,
          trace: traceCarrier(msg.payload.trace),
        });
      case 'finalize_sync_run':
        return finalizeSyncRun(this.ctx, runId);
      case 'post_sync':
        return postSync(this.ctx, runId);
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
