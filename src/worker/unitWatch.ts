/**
 * A worker's watch over the units it holds, every `intervalMs` while it holds any:
 * - cancellation: one primary-key statement asks which held units were cancelled (the unit or its
 *   run); their leases abort the provider at once with a cancel reason (UnitStoppedError), instead
 *   of at the next heartbeat (up to a minute later). The cancel already ended them `cancelled`.
 * - fair share: orgs over their share while another org's work waits give slots back (./orgShare.ts).
 * Lease loss still aborts through the heartbeat, as before. States: idle → running → stopped.
 */
import type { EngineContext } from '../context.js';
import { describeError } from '../errors.js';
import { cancelledUnits } from '../store/fairShare.js';
import type { OrgShare } from './orgShare.js';

export type WatchState = 'idle' | 'running' | 'stopped';

export class UnitWatch {
  private state: WatchState = 'idle';
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;

  constructor(
    private readonly ctx: EngineContext,
    private readonly share: OrgShare,
    private readonly intervalMs: number,
  ) {}

  get status(): WatchState {
    return this.state;
  }

  start(): void {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.schedule();
  }

  /** Stops the timer and waits for a tick in flight; safe to call twice. */
  async close(): Promise<void> {
    this.state = 'stopped';
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
  }

  /** One look: stop cancelled units, then enforce the share. Never throws (logged; the next tick tries again). */
  async tick(): Promise<void> {
    try {
      await this.stopCancelled();
      const yielded = await this.share.enforce();
      if (yielded > 0) this.ctx.logger.info({ slots: yielded }, 'org over its share while others wait: slots yielded');
    } catch (err) {
      this.ctx.logger.warn({ err: describeError(err) }, 'unit watch failed');
    }
  }

  private async stopCancelled(): Promise<void> {
    const leases = this.share.runningLeases();
    if (leases.length === 0) return;
    const cancelled = new Set(await cancelledUnits(this.ctx.db, [...new Set(leases.map((l) => l.unitId))]));
    for (const lease of leases) {
      if (!cancelled.has(lease.unitId)) continue;
      this.ctx.logger.info({ unitId: lease.unitId }, 'run cancelled: unit stopped');
      lease.cancel();
    }
  }

  private schedule(): void {
    if (this.state !== 'running') return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = null;
        this.schedule();
      });
    }, this.intervalMs);
    this.timer.unref();
  }
}
