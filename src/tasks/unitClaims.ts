/** run_sync_unit claims of one engine, group-committed (see ./coalesce.ts). */
import { claimUnits, type ClaimedUnit } from '../store/units.js';
import { Coalescer } from './coalesce.js';
import type { EngineContext } from '../context.js';

interface Claim {
  unitId: string;
  owner: string;
}

/**
 * One claim statement at a time: a claim is a single autocommit statement, so while one is in
 * flight the next batch fills up (an idle worker's claim still goes out at once).
 */
const CLAIMS_IN_FLIGHT = 1;

/** One coalescer per engine context (never shared between engines). */
const claimers = new WeakMap<EngineContext, Coalescer<Claim, ClaimedUnit | null>>();

/**
 * The claim CAS for one unit under a fresh owner; concurrent claims of this engine share one
 * statement. Resolves with the claimed unit, or null when it was not dispatchable.
 */
export function claimForRun(ctx: EngineContext, unitId: string, owner: string): Promise<ClaimedUnit | null> {
  let claimer = claimers.get(ctx);
  if (!claimer) {
    claimer = new Coalescer(async (batch: Claim[]) => {
      const { settings, clock } = ctx;
      const rows = await claimUnits(ctx.db, batch, {
        now: clock.now(),
        leaseMs: settings.leaseMs,
        maxLifetimeMs: settings.maxLifetimeMs,
      });
      return batch.map((c) => rows.find((r) => r.id === c.unitId && r.lease_owner === c.owner) ?? null);
    }, CLAIMS_IN_FLIGHT);
    claimers.set(ctx, claimer);
  }
  return claimer.submit({ unitId, owner });
}
