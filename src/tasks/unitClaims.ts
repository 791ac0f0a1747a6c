/** run_sync_unit claims of one engine, group-committed (see ./coalesce.ts). */
import { claimUnits, type ClaimedUnit } from '../store/units.js';
import { Coalescer } from './coalesce.js';
import type { EngineContext } from '../context.js';

export interface Claim {
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
 * The claim CAS for each unit under its own owner; the units of one call go out in one statement,
 * with whatever other claims of this engine are waiting. Resolves with each claimed unit, or null
 * for one that was not dispatchable.
 */
export function claimForRun(ctx: EngineContext, claims: readonly Claim[]): Promise<(ClaimedUnit | null)[]> {
  return claimerOf(ctx).submitMany(claims);
}

function claimerOf(ctx: EngineContext): Coalescer<Claim, ClaimedUnit | null> {
  let claimer = claimers.get(ctx);
  if (!claimer) {
    claimer = new Coalescer(async (batch: Claim[]) => {
      const { settings, clock } = ctx;
      const rows = await claimUnits(ctx.db, batch, {
        now: clock.now(),
        leaseMs: settings.leaseMs,
        maxLifetimeMs: settings.maxLifetimeMs,
      });
      const won = new Map(rows.map((r) => [`${r.id}/${r.lease_owner ?? ''}`, r]));
      return batch.map((c) => won.get(`${c.unitId}/${c.owner}`) ?? null);
    }, CLAIMS_IN_FLIGHT);
    claimers.set(ctx, claimer);
  }
  return claimer;
}
