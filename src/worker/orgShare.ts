/**
 * Fair share of one worker's slots between orgs (SYNC_WORKER_ORG_SHARE).
 *
 * A slot is one run_sync_unit message being handled (its units run side by side in it). An org may
 * hold at most `cap = max(1, floor(share × concurrency))` slots while another org's work waits; an
 * org alone may use every slot (work-conserving). Short tasks (dispatch, finalize, post_sync) are
 * not counted.
 *
 * How the worker learns that another org's work waits: one PostgreSQL statement
 * (`orgsWithWaitingWork`, src/store/fairShare.ts) names up to two orgs with work that has waited
 * for a worker at least one watch interval — a unit published and unclaimed, a due retrying unit,
 * or a planned run whose dispatch message was handed to the broker. PostgreSQL, not the broker:
 * while one org's hung units fill every slot the worker takes nothing more from the broker and
 * cannot see what is queued there, and the database is the truth across workers and both brokers.
 * The statement runs only while some org is at or over its cap (an admission past the cap, or the
 * watch's check of orgs over it), at most once per watch interval (its answer is kept that long),
 * so a worker with fair load never pays for it. Waiting for one interval keeps a message that
 * another worker with free slots is about to take from counting.
 *
 * What happens to work over the share while another org waits, by the engine's existing rules
 * (src/tasks/unitYield.ts):
 * - a message that would take the org past its cap is not claimed: its units are marked
 *   unpublished and the run's dispatch row armed a little later (as after a failed publish), so
 *   nothing is lost or stranded; the stale-dispatch rule and the materializer stay the backstop.
 * - an org already past its cap (it took the slots while alone) gives back its newest slots: their
 *   units stop (abort signal) and go `retrying` as a deferral does, due a little later. Only units
 *   that are safe to run again are stopped — every surface they may write is retry-safe, the rule
 *   lease expiry uses; a slot with any other unit keeps running.
 * Claims, leases, fencing and finalization are untouched: a put-back unit is claimed by the CAS
 * later, a yielded one ends its attempt under its own live lease.
 */
import type { EngineContext } from '../context.js';
import { after } from '../clock.js';
import { orgsWithWaitingWork } from '../store/fairShare.js';
import type { UnitLease } from '../tasks/lease.js';

/** One run_sync_unit message being handled: its org and the leases of the units it claimed. */
export interface UnitSlot {
  readonly orgId: string;
  /** Order of entry: the newest slots yield first. */
  readonly seq: number;
  readonly leases: UnitLease[];
  /** Its units were told to yield: it no longer counts against the org. */
  yielding: boolean;
}

/** An org over its cap is asked about at most this many other orgs: two answer "someone else?". */
const WAITING_ORGS_ASKED = 2;

export class OrgShare {
  /** Slots one org may hold while another org's work waits. */
  readonly cap: number;
  private readonly slots = new Set<UnitSlot>();
  private seq = 0;
  private waiting: { at: number; orgs: Promise<string[]> } | null = null;

  constructor(
    private readonly ctx: EngineContext,
    concurrency: number,
    /** How long work must have waited to count, and how long an answer is kept. */
    private readonly intervalMs: number,
  ) {
    this.cap = Math.max(1, Math.floor(ctx.settings.workerOrgShare * concurrency));
  }

  /**
   * Takes a slot for a message of `orgId`; null when that would take the org past its cap while
   * another org's work waits (the caller puts the message back).
   */
  async enter(orgId: string): Promise<UnitSlot | null> {
    const slot: UnitSlot = { orgId, seq: ++this.seq, leases: [], yielding: false };
    this.slots.add(slot);
    if (this.held(orgId) <= this.cap) return slot;
    try {
      if (!(await this.othersWait(orgId))) return slot;
    } catch (err) {
      this.slots.delete(slot);
      throw err;
    }
    this.slots.delete(slot);
    return null;
  }

  leave(slot: UnitSlot): void {
    this.slots.delete(slot);
  }

  /** Slots the org holds (those yielding excepted). */
  held(orgId: string): number {
    let n = 0;
    for (const s of this.slots) if (s.orgId === orgId && !s.yielding) n++;
    return n;
  }

  /** Every lease whose provider call is still running. */
  runningLeases(): UnitLease[] {
    return [...this.slots].flatMap((s) => s.leases.filter((l) => l.running));
  }

  /**
   * For each org over its cap while another org's work waits: its newest slots whose units may be
   * stopped yield, down to the cap. Returns the number of slots told to yield.
   */
  async enforce(): Promise<number> {
    const over = [...new Set([...this.slots].map((s) => s.orgId))].filter((org) => this.held(org) > this.cap);
    let yielded = 0;
    for (const org of over) {
      if (!(await this.othersWait(org))) continue;
      const excess = this.held(org) - this.cap;
      for (const slot of this.newestPreemptible(org).slice(0, excess)) {
        slot.yielding = true;
        for (const lease of slot.leases) lease.yieldSlot();
        yielded++;
      }
    }
    return yielded;
  }

  private newestPreemptible(orgId: string): UnitSlot[] {
    return [...this.slots]
      .filter((s) => s.orgId === orgId && !s.yielding && preemptible(s))
      .sort((a, b) => b.seq - a.seq);
  }

  /** Whether an org other than `orgId` has work waiting for a worker (an answer at most one interval old). */
  private async othersWait(orgId: string): Promise<boolean> {
    const orgs = await this.waitingOrgs();
    return orgs.some((o) => o !== orgId);
  }

  private waitingOrgs(): Promise<string[]> {
    const now = this.ctx.clock.now();
    if (this.waiting && now.getTime() - this.waiting.at < this.intervalMs) return this.waiting.orgs;
    const orgs = orgsWithWaitingWork(this.ctx.db, after(now, -this.intervalMs), WAITING_ORGS_ASKED);
    const entry = { at: now.getTime(), orgs };
    this.waiting = entry;
    // A failed lookup is not kept: the next caller asks again.
    orgs.catch(() => {
      if (this.waiting === entry) this.waiting = null;
    });
    return orgs;
  }
}

/** A slot may yield when it has running units and every one of them may be stopped and run again. */
function preemptible(slot: UnitSlot): boolean {
  const running = slot.leases.filter((l) => l.running);
  return running.length > 0 && running.every((l) => l.preemptible);
}
