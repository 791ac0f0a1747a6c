/**
 * A unit's view of its credential's shared rate-limit budget (rate_budgets).
 *
 * Before each call, `gate()` says whether the unit may call the API: not while the recorded budget
 * is exhausted (remaining ≤ the reserve, reset in the future) or a limit has not lifted — the unit is
 * deferred to the lift time (`RateLimitError`) without calling. After a reset, one unit (holding the
 * probe lease) calls first; the others wait briefly for its response to be recorded.
 * `observe()` takes every response's figures; they are recorded once per batch of responses, and
 * at once when a response shows the budget spent or a limit.
 *
 * Remaining counts are only as good as their reset time: a remaining without one (an endpoint's own
 * count, say) cannot tell when requests are available again, so it neither defers nor sends the
 * units through the probe; only a limit response's lift time does.
 */
import type { Clock } from '../../clock.js';
import type { Tx } from '../../db/types.js';
import { RateLimitError } from '../../errors.js';
import {
  claimRateBudgetProbe,
  readRateBudget,
  recordRateBudget,
  type BudgetKey,
  type BudgetObservation,
} from '../../store/rateBudgets.js';
import { sleep } from './sleep.js';

/** How a provider's budget windows read and start (@default none of it: exact resets, the engine's jitter). */
export interface BudgetWindowRules {
  /**
   * How far apart the resets of one window can read (`resolutionMs` of mergeObservations): a reset
   * given in whole seconds from the answer differs by its rounding and the answer's travel.
   */
  resetResolutionMs?: number;
  /**
   * The most jitter after the reset of a unit this budget defers without calling, when not the
   * engine's (a tenth of the wait, 250 ms to 5 s): short where a window starts with its first
   * request after the last one ended (a late first request makes the window run late); the probe
   * already lets one unit call first and holds the others until its answer is recorded.
   */
  deferralSpreadMs?: number;
}

export interface RateBudgetOptions extends BudgetWindowRules {
  db: Tx;
  key: BudgetKey;
  /** The unit calling (the probe lease's owner). */
  owner: string;
  clock: Clock;
  signal?: AbortSignal;
  /** Who is calling, for messages (never a credential). */
  subject: string;
  /** Share of the budget this integration may use (0 < share ≤ 1). @default 1 */
  share?: number;
  /** Requests kept back whatever the share. @default reserveFor(limit) */
  reserve?: number;
  /** Responses per recorded batch. @default 10 */
  flushEvery?: number;
  /** How long a probe lease lasts. @default 15 s */
  probeLeaseMs?: number;
  /** Waiting for another unit's probe: polls of the row, and the pause between them. @default 8 × 250 ms */
  probePolls?: number;
  probePollMs?: number;
  /** When the probe's response does not come while polling, defer this long. @default 2 s */
  probeDeferMs?: number;
  /**
   * What the units of this process know of the credential together: the latest figures any of them
   * saw and the calls in flight, so concurrent units do not all spend the last requests at once.
   */
  ledger?: BudgetLedger;
}

/** One credential's figures as the units of one process see them together. */
interface SharedBudget {
  latest: BudgetObservation | null;
  inFlight: number;
}

/**
 * The units of one process (one provider instance) share this: a call is let through only while
 * the remaining requests any unit last saw, less the calls in flight, stay above the threshold.
 */
export class BudgetLedger {
  private readonly budgets = new Map<string, SharedBudget>();

  of(key: BudgetKey): SharedBudget {
    const id = `${key.orgId}/${key.provider}/${key.credentialId}`;
    let b = this.budgets.get(id);
    if (!b) {
      b = { latest: null, inFlight: 0 };
      this.budgets.set(id, b);
    }
    return b;
  }
}

/** Requests kept back from a budget of `limit`: 1 % (at least 10), never more than half. */
export function reserveFor(limit: number): number {
  return Math.min(Math.max(10, Math.ceil(limit / 100)), Math.floor(limit / 2));
}

/** Remaining at or below which the budget counts as spent for an integration using `share` of it. */
export function budgetThreshold(limit: number | null, share = 1, reserve?: number): number {
  if (limit === null) return 0;
  return (reserve ?? reserveFor(limit)) + Math.ceil((1 - share) * limit);
}

export type BudgetVerdict = { kind: 'open' } | { kind: 'wait'; until: Date } | { kind: 'probe' };

/** Whether figures show the budget spent: a remaining at or below `threshold` in a window with a known reset. */
export function isSpent(b: Pick<BudgetObservation, 'remaining' | 'resetAt'>, threshold: number): boolean {
  return b.remaining !== null && b.resetAt !== null && b.remaining <= threshold;
}

/** What a recorded (or seen) budget allows now. */
export function assessBudget(b: BudgetObservation | null, now: Date, threshold: number): BudgetVerdict {
  if (!b) return { kind: 'open' };
  const t = now.getTime();
  if (b.limitedUntil && b.limitedUntil.getTime() > t) return { kind: 'wait', until: b.limitedUntil };
  const spent = isSpent(b, threshold);
  if (spent && b.resetAt && b.resetAt.getTime() > t) return { kind: 'wait', until: b.resetAt };
  if (spent || b.limitedUntil) return { kind: 'probe' };
  return { kind: 'open' };
}

/**
 * Two observations of one credential merged: the later window's counts, the lower remaining and the
 * earlier reset within one; counts without a window (no reset on either) are the later observation's.
 * Resets at most `resolutionMs` apart are one window's: a reset read as seconds from the answer is an
 * upper bound of the true one (rounded up, and read a moment after it was sent), so the earliest is
 * the closest, and the lowest remaining the latest.
 */
export function mergeObservations(
  a: BudgetObservation | null,
  b: BudgetObservation,
  resolutionMs = 0,
): BudgetObservation {
  if (!a) return b;
  const ar = a.resetAt?.getTime() ?? -1;
  const br = b.resetAt?.getTime() ?? -1;
  let counts: Pick<BudgetObservation, 'remaining' | 'limit' | 'resetAt'> = a;
  if (a.resetAt && b.resetAt && Math.abs(br - ar) <= resolutionMs) counts = sameWindow(a, b);
  else if (br > ar || (br === -1 && ar === -1 && b.observedAt >= a.observedAt)) counts = b;
  const later = a.observedAt > b.observedAt ? a.observedAt : b.observedAt;
  return { ...pick(counts), limitedUntil: mergeLimit(a, b), observedAt: later };
}

/** One window's counts from two observations of it (see mergeObservations). */
function sameWindow(
  a: BudgetObservation,
  b: BudgetObservation,
): Pick<BudgetObservation, 'remaining' | 'limit' | 'resetAt'> {
  return {
    remaining: minOf(a.remaining, b.remaining),
    limit: b.limit ?? a.limit,
    resetAt: a.resetAt! <= b.resetAt! ? a.resetAt : b.resetAt,
  };
}

function mergeLimit(a: BudgetObservation, b: BudgetObservation): Date | null {
  if (b.limitedUntil) return !a.limitedUntil || b.limitedUntil > a.limitedUntil ? b.limitedUntil : a.limitedUntil;
  return a.limitedUntil && b.observedAt < a.limitedUntil ? a.limitedUntil : null;
}

function pick(c: Pick<BudgetObservation, 'remaining' | 'limit' | 'resetAt'>) {
  return { remaining: c.remaining, limit: c.limit, resetAt: c.resetAt };
}

function minOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

export class RateBudget {
  private latest: BudgetObservation | null = null;
  private unrecorded = 0;
  private probing = false;
  private checkedShared = false;

  constructor(private readonly o: RateBudgetOptions) {}

  /** Throws `RateLimitError` (deferring the unit) when the unit must not call the API now. */
  async gate(): Promise<void> {
    if (!this.checkedShared) {
      await this.gateShared();
      this.checkedShared = true;
      if (!this.probing) this.gateInProcess();
      else this.countInFlight();
      return;
    }
    const v = assessBudget(this.latest, this.o.clock.now(), this.threshold(this.latest));
    if (v.kind === 'wait') {
      await this.flush();
      throw this.deferral(v.until, 'budget spent');
    }
    this.gateInProcess();
  }

  private countInFlight(): void {
    const shared = this.o.ledger?.of(this.o.key);
    if (shared) shared.inFlight++;
  }

  /** A call that `gate()` let through has ended (answered or not). */
  done(): void {
    const shared = this.o.ledger?.of(this.o.key);
    if (shared && shared.inFlight > 0) shared.inFlight--;
  }

  /** Counts the call in flight, or defers the unit when this process's calls would spend the reserve. */
  private gateInProcess(): void {
    const shared = this.o.ledger?.of(this.o.key);
    if (!shared) return;
    const b = shared.latest;
    const now = this.o.clock.now();
    if (b && b.remaining !== null && b.resetAt && b.resetAt > now) {
      if (b.remaining - shared.inFlight <= this.threshold(b)) throw this.deferral(b.resetAt, 'budget spent in flight');
    }
    shared.inFlight++;
  }

  /** Takes one response's figures (`limitedUntil` set: it was a limit response). */
  async observe(o: BudgetObservation): Promise<void> {
    const resolution = this.o.resetResolutionMs ?? 0;
    this.latest = mergeObservations(this.latest, o, resolution);
    const shared = this.o.ledger?.of(this.o.key);
    if (shared) shared.latest = mergeObservations(shared.latest, o, resolution);
    this.unrecorded++;
    const spent = isSpent(o, this.threshold(o));
    if (o.limitedUntil || spent || this.probing || this.unrecorded >= (this.o.flushEvery ?? 10)) await this.flush();
  }

  /** Records what was observed and not yet recorded. */
  async flush(): Promise<void> {
    if (this.unrecorded === 0 || !this.latest) return;
    await recordRateBudget(this.o.db, this.o.key, this.latest, this.o.owner, this.o.resetResolutionMs ?? 0);
    this.unrecorded = 0;
    this.probing = false;
  }

  private threshold(b: BudgetObservation | null): number {
    return budgetThreshold(b?.limit ?? null, this.o.share ?? 1, this.o.reserve);
  }

  /** The unit's first call: the recorded budget decides (probe after a reset). */
  private async gateShared(): Promise<void> {
    const polls = this.o.probePolls ?? 8;
    for (let i = 0; ; i++) {
      const now = this.o.clock.now();
      const row = await readRateBudget(this.o.db, this.o.key);
      const v = assessBudget(row, now, this.threshold(row));
      if (v.kind === 'open') return;
      if (v.kind === 'wait') throw this.deferral(v.until, 'budget spent');
      const until = new Date(now.getTime() + (this.o.probeLeaseMs ?? 15_000));
      if (await claimRateBudgetProbe(this.o.db, this.o.key, this.o.owner, now, until)) {
        this.probing = true;
        return;
      }
      if (i >= polls) {
        throw this.deferral(new Date(now.getTime() + (this.o.probeDeferMs ?? 2000)), 'waiting for the probe call');
      }
      await sleep(this.o.probePollMs ?? 250, this.o.signal);
    }
  }

  private deferral(until: Date, why: string): RateLimitError {
    const waitMs = Math.max(0, until.getTime() - this.o.clock.now().getTime());
    const msg = `${this.o.subject}: rate-limit ${why} until ${until.toISOString()} (not called)`;
    return new RateLimitError(waitMs, msg, { liftsAt: until, spreadMs: this.o.deferralSpreadMs ?? null });
  }
}
