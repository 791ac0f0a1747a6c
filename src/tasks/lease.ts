/** A unit's lease while its provider runs: heartbeat, soft timeout, fence, abort. */
import { heartbeatIntervalMs } from '../config.js';
import type { Tx } from '../db/types.js';
import { LeaseLostError, ProviderTimeoutError, SyncRelayError, describeError } from '../errors.js';
import type { LeaseGuard } from '../sdk/types.js';
import { expireOwnLease, extendLease, lockLeaseIfHeld } from '../store/units.js';
import type { EngineContext } from '../context.js';
import { onShutdown } from './shutdownFanout.js';

export type LeaseEnd = 'held' | 'lost' | 'soft_timeout' | 'shutdown' | 'cancelled' | 'yielded';

/**
 * The reason a worker stopped a unit it still holds: its run was cancelled (`unit_cancelled`), or
 * it gave its slot to another org's waiting work (`unit_yielded`, see src/worker/orgShare.ts).
 */
export class UnitStoppedError extends SyncRelayError {
  constructor(
    readonly unitId: string,
    readonly why: 'cancelled' | 'yielded',
  ) {
    super(`unit_${why}`, why === 'cancelled' ? `unit ${unitId}: its run was cancelled` : `unit ${unitId}: yielded`);
  }
}

/**
 * Holds a claimed unit's lease: heartbeats every max(1, min(60, lease/4)) s through a CAS on the
 * owner token; a failed heartbeat (or a lease that lapsed while the database was unreachable)
 * aborts the provider. The soft timeout and a worker shutdown abort it too, and so does the worker
 * when it sees the unit's run cancelled (`cancel()`, within its watch interval, not at the next
 * heartbeat) or gives the unit's slot to another org (`yieldSlot()`).
 */
export class UnitLease implements LeaseGuard {
  readonly controller = new AbortController();
  /**
   * Whether the worker may stop this unit to give its slot to another org: everything the unit may
   * write is retry-safe (the rule that lets an interrupted unit run again). Set before it runs.
   */
  preemptible = false;
  private state: LeaseEnd = 'held';
  /** The provider call is over (stop() was called): nothing is left to abort. */
  private stopped = false;
  private expiresAt: Date;
  private hbTimer: NodeJS.Timeout | null = null;
  private readonly softTimer: NodeJS.Timeout;
  /** Leaves the worker's shutdown fan-out (one listener on its signal for all leases: ./shutdownFanout.ts). */
  private unsubscribe: () => void = () => undefined;

  constructor(
    private readonly ctx: EngineContext,
    readonly unitId: string,
    readonly owner: string,
    leaseExpiresAt: Date,
    shutdown?: AbortSignal,
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
    const ended = () => this.end('shutdown', new LeaseLostError(this.unitId));
    this.unsubscribe = shutdown ? onShutdown(shutdown, ended) : () => undefined;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** How the lease ended, if it did. */
  get outcome(): LeaseEnd {
    return this.state;
  }

  /** Held, and its provider call not over yet. */
  get running(): boolean {
    return this.state === 'held' && !this.stopped;
  }

  /** The unit's run was cancelled: abort the provider now; the attempt ends without a write. */
  cancel(): void {
    if (!this.stopped) this.end('cancelled', new UnitStoppedError(this.unitId, 'cancelled'));
  }

  /** Give the worker slot to another org: abort the provider now; the attempt puts the unit back. */
  yieldSlot(): void {
    if (!this.stopped) this.end('yielded', new UnitStoppedError(this.unitId, 'yielded'));
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
    this.stopped = true;
    if (this.hbTimer) clearTimeout(this.hbTimer);
    this.hbTimer = null;
    clearTimeout(this.softTimer);
    this.unsubscribe();
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
