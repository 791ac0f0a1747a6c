/**
 * The reconciler loop: a full pass every SYNC_RECONCILE_INTERVAL_SECONDS, and the relay phase at
 * once whenever an outbox NOTIFY arrives or a pending row comes due. States:
 * idle → running → draining → stopped. Several loops (processes or replicas) may run at once.
 */
import { describeError } from '../errors.js';
import { nextDueAt } from '../store/outbox.js';
import type { EngineContext } from '../context.js';
import { reconcilePass, type PassCounters } from './pass.js';
import { relayDue } from './relay.js';

export type LoopState = 'idle' | 'running' | 'draining' | 'stopped';

export interface ReconcilerLoopOptions {
  id?: string;
  onPass?: (counters: PassCounters) => void;
}

export class ReconcilerLoop {
  private state: LoopState = 'idle';
  private passTimer: NodeJS.Timeout | null = null;
  private relayTimer: NodeJS.Timeout | null = null;
  private busy: Promise<void> = Promise.resolve();
  private relayRequested = false;
  private relayRunning = false;
  private passDue = false;
  private unlisten: (() => Promise<void>) | null = null;

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: ReconcilerLoopOptions = {},
  ) {}

  get status(): LoopState {
    return this.state;
  }

  /** Subscribes to NOTIFY, runs a first pass, and schedules the rest. */
  async start(): Promise<void> {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.unlisten = await this.ctx.db.listen(this.ctx.db.schema.channel, () => this.requestRelay());
    this.requestPass();
  }

  /** Runs the relay now (coalesced: at most one runs, one more queued). */
  requestRelay(): void {
    if (this.state !== 'running') return;
    this.relayRequested = true;
    if (!this.relayRunning) this.drainRelay();
  }

  private requestPass(): void {
    this.passDue = true;
    if (!this.relayRunning) this.drainRelay();
  }

  private drainRelay(): void {
    this.relayRunning = true;
    this.busy = (async () => {
      while (this.state === 'running' && (this.relayRequested || this.passDue)) {
        const full = this.passDue;
        this.passDue = false;
        this.relayRequested = false;
        await (full ? this.runPass() : this.runRelay());
      }
      // No await between the loop's last check and this line: a request cannot slip through.
      this.relayRunning = false;
      if (this.state === 'running') await this.scheduleNext(false);
    })();
  }

  private async runPass(): Promise<void> {
    try {
      const counters = await reconcilePass(this.ctx, this.options.id);
      this.options.onPass?.(counters);
    } catch (err) {
      this.ctx.logger.error({ err: describeError(err) }, 'reconciler pass failed');
    }
    await this.scheduleNext(true);
  }

  private async runRelay(): Promise<void> {
    try {
      await relayDue(this.ctx);
    } catch (err) {
      this.ctx.logger.error({ err: describeError(err) }, 'relay failed');
    }
  }

  /** The next full pass after the interval; the relay at the next due row (never later than a pass). */
  private async scheduleNext(passJustRan: boolean): Promise<void> {
    if (this.state !== 'running') return;
    if (passJustRan || !this.passTimer) {
      if (this.passTimer) clearTimeout(this.passTimer);
      this.passTimer = setTimeout(() => this.requestPass(), this.ctx.settings.reconcileIntervalMs);
    }
    let due: Date | null = null;
    try {
      due = await nextDueAt(this.ctx.db);
    } catch {
      return;
    }
    if (this.relayTimer) clearTimeout(this.relayTimer);
    this.relayTimer = null;
    if (!due || this.state !== 'running') return;
    const wait = Math.max(0, due.getTime() - this.ctx.clock.now().getTime());
    if (wait < this.ctx.settings.reconcileIntervalMs) {
      this.relayTimer = setTimeout(() => this.requestRelay(), wait + 5);
    }
  }

  /** Stops scheduling, waits for the pass or relay in flight; safe to call twice. */
  async close(): Promise<void> {
    if (this.state === 'stopped' || this.state === 'draining') return this.busy;
    this.state = 'draining';
    if (this.passTimer) clearTimeout(this.passTimer);
    if (this.relayTimer) clearTimeout(this.relayTimer);
    await this.unlisten?.().catch(() => undefined);
    await this.busy;
    this.state = 'stopped';
  }
}
