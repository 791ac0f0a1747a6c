/** A unit's lease while its provider runs: heartbeat, soft timeout, fence, abort. */
import { heartbeatIntervalMs } from '../config.js';
import type { Tx } from '../db/types.js';
import { LeaseLostError, ProviderTimeoutError, describeError } from '../errors.js';
import type { LeaseGuard } from '../sdk/types.js';
import { expireOwnLease, extendLease, lockLeaseIfHeld } from '../store/units.js';
import type { EngineContext } from '../context.js';

export type LeaseEnd = 'held' | 'lost' | 'soft_timeout' | 'shutdown';

/**
 * Holds a claimed unit's lease: heartbeats every max(1, min(60, lease/4)) s through a CAS on the
 * owner token; a failed heartbeat (or a lease that lapsed while the database was unreachable)
 * aborts the provider. The soft timeout and a worker shutdown abort it too.
 */
export class UnitLease implements LeaseGuard {
  readonly controller = new AbortController();
  private state: LeaseEnd = 'held';
  private expiresAt: Date;
  private hbTimer: NodeJS.Timeout | null = null;
  private readonly softTimer: NodeJS.Timeout;
  private readonly onShutdown = () => this.end('shutdown', new LeaseLostError(this.unitId));

  constructor(
    private readonly ctx: EngineContext,
    readonly unitId: string,
    readonly owner: string,
    leaseExpiresAt: Date,
    private readonly shutdown?: AbortSignal,
    /** For log lines. */
    private readonly runId?: string,
  ) {
    this.expiresAt = leaseExpiresAt;
    this.softTimer = setTimeout(
      () => this.end('soft_timeout', new ProviderTimeoutError('soft timeout')),
      ctx.settings.softTimeoutMs,
    );
    this.softTimer.unref();
    this.scheduleHeartbeat();
    if (shutdown?.aborted) this.onShutdown();
    else shutdown?.addEventListener('abort', this.onShutdown, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** How the lease ended, if it did. */
  get outcome(): LeaseEnd {
    return this.state;
  }

  async assertHeld(): Promise<void> {
    if (this.state === 'lost') throw new LeaseLostError(this.unitId);
    if (!(await lockLeaseIfHeld(this.ctx.db, this.unitId, this.owner, this.ctx.clock.now()))) {
      this.end('lost', new LeaseLostError(this.unitId));
      throw new LeaseLostError(this.unitId);
    }
  }

  async assertHeldIn(tx: Tx): Promise<void> {
    if (this.state === 'lost') throw new LeaseLostError(this.unitId);
    if (!(await lockLeaseIfHeld(tx, this.unitId, this.owner, this.ctx.clock.now()))) {
      this.end('lost', new LeaseLostError(this.unitId));
      throw new LeaseLostError(this.unitId);
    }
  }

  /** Stops timers; safe to call twice. */
  stop(): void {
    if (this.hbTimer) clearTimeout(this.hbTimer);
    this.hbTimer = null;
    clearTimeout(this.softTimer);
    this.shutdown?.removeEventListener('abort', this.onShutdown);
  }

  /** Worker shutdown: give the lease up now so the reconciler handles the unit at its next pass. */
  async abandon(): Promise<void> {
    await expireOwnLease(this.ctx.db, this.unitId, this.owner, this.ctx.clock.now()).catch(() => false);
  }

  private end(state: Exclude<LeaseEnd, 'held'>, reason: Error): void {
    if (this.state !== 'held') return;
    this.state = state;
    this.stop();
    this.controller.abort(reason);
  }

  private scheduleHeartbeat(): void {
    const ms = heartbeatIntervalMs(this.ctx.settings.leaseMs);
    this.hbTimer = setTimeout(() => void this.beat(), ms);
    this.hbTimer.unref();
  }

  private async beat(): Promise<void> {
    if (this.state !== 'held') return;
    const { settings, clock } = this.ctx;
    try {
      const next = await extendLease(this.ctx.db, {
        unitId: this.unitId,
        owner: this.owner,
        now: clock.now(),
        leaseMs: settings.leaseMs,
        maxLifetimeMs: settings.maxLifetimeMs,
      });
      if (!next) return this.end('lost', new LeaseLostError(this.unitId));
      this.expiresAt = next;
    } catch (err) {
      this.ctx.logger.warn({ runId: this.runId, unitId: this.unitId, err: describeError(err) }, 'heartbeat failed');
      if (clock.now() >= this.expiresAt) return this.end('lost', new LeaseLostError(this.unitId, { cause: err }));
    }
    if (this.state === 'held') this.scheduleHeartbeat();
  }
}
