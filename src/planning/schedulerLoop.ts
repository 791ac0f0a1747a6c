/**
 * The scheduler loop: a tick at start, at the earliest `next_run_at`, when a schedule changes
 * (NOTIFY) and at least every `pollIntervalMs` as the backstop. States: idle → running →
 * draining → stopped. Any number of loops (replicas) may run: each slot still fires once.
 */
import { describeError } from '../errors.js';
import { earliestNextRunAt } from '../store/schedules.js';
import { runSchedulerTick, type SchedulerDeps, type SchedulerTick } from './scheduler.js';

export type SchedulerLoopState = 'idle' | 'running' | 'draining' | 'stopped';

export interface SchedulerLoopOptions {
  /** Longest wait between ticks, in ms (schedules changed while a NOTIFY was lost). @default 30000 */
  pollIntervalMs?: number;
  /** Most due jobs fired per tick; a full tick is followed by another at once. @default 100 */
  batch?: number;
  /** Called after each tick (tests, metrics). */
  onTick?: (tick: SchedulerTick) => void;
}

/** How long to wait before retrying when a job is due but could not be fired. */
const RETRY_DUE_MS = 1000;
/** Timers fire a little after the slot, so the tick's clock reads at or past it. */
const SLOT_MARGIN_MS = 5;

export class SchedulerLoop {
  private state: SchedulerLoopState = 'idle';
  private timer: NodeJS.Timeout | null = null;
  private busy: Promise<void> = Promise.resolve();
  private requested = false;
  private ticking = false;
  private unlisten: (() => Promise<void>) | null = null;
  private readonly pollMs: number;

  constructor(
    private readonly deps: SchedulerDeps,
    private readonly options: SchedulerLoopOptions = {},
  ) {
    this.pollMs = Math.max(10, options.pollIntervalMs ?? 30_000);
  }

  get status(): SchedulerLoopState {
    return this.state;
  }

  /** Subscribes to schedule changes and runs the first tick. */
  async start(): Promise<void> {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.unlisten = await this.deps.db.listen(this.deps.db.schema.schedulesChannel, () => this.wake());
    this.wake();
  }

  /** Runs a tick now (coalesced: at most one runs, one more queued). */
  wake(): void {
    if (this.state !== 'running') return;
    this.requested = true;
    if (!this.ticking) this.drain();
  }

  private drain(): void {
    this.ticking = true;
    const before = this.busy;
    const run = (async () => {
      while (this.state === 'running' && this.requested) {
        this.requested = false;
        if (this.timer) clearTimeout(this.timer);
        this.timer = null;
        await this.tick();
      }
      // No await between the loop's last check and this line: a wake-up cannot slip through.
      this.ticking = false;
      if (this.state === 'running') await this.scheduleNext();
    })();
    // close() waits for this run and for the timer set-up of the one before it.
    this.busy = Promise.all([before, run]).then(() => undefined);
  }

  private async tick(): Promise<void> {
    try {
      const tick = await runSchedulerTick(this.deps, this.deps.clock.now(), { limit: this.options.batch });
      if (tick.more) this.requested = true;
      this.options.onTick?.(tick);
    } catch (err) {
      this.deps.logger.error({ err: describeError(err) }, 'scheduler tick failed');
    }
  }

  /** The next tick at the earliest slot, never later than the poll interval. */
  private async scheduleNext(): Promise<void> {
    let wait = this.pollMs;
    try {
      const due = await earliestNextRunAt(this.deps.db);
      if (due) {
        const ms = due.getTime() - this.deps.clock.now().getTime();
        wait = Math.min(wait, ms <= 0 ? RETRY_DUE_MS : ms + SLOT_MARGIN_MS);
      }
    } catch (err) {
      this.deps.logger.warn({ err: describeError(err) }, 'scheduler could not read the next slot; polling');
    }
    // A wake-up may have started a tick meanwhile; that tick schedules its own timer.
    if (this.state !== 'running' || this.ticking) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), wait);
  }

  /** Stops scheduling and waits for the tick in flight; safe to call twice. */
  async close(): Promise<void> {
    if (this.state === 'idle') {
      this.state = 'stopped';
      return;
    }
    if (this.state === 'stopped' || this.state === 'draining') return this.busy;
    this.state = 'draining';
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.unlisten?.().catch(() => undefined);
    await this.busy;
    this.state = 'stopped';
  }
}
