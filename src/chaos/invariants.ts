/** The invariants of SPEC §12, each checked from the database: a result per invariant with counter-examples. */
import type { Db } from '../db/types.js';
import { buildLeaseTable, checkNoFencedOutWrites, checkNoOverlappingLeases } from './checkLeases.js';
import type { CheckContext, InvariantResult } from './findings.js';
import {
  checkCounts,
  checkPostSync,
  checkTerminalOnce,
  checkTerminalWithinBound,
  checkWatermarks,
} from './checkRuns.js';

export type { CheckContext, InvariantResult } from './findings.js';

/** Runs every check; the order is the order of SPEC §12. */
export async function checkInvariants(db: Db, ctx: CheckContext): Promise<InvariantResult[]> {
  const leases = await buildLeaseTable(db);
  return [
    await checkTerminalWithinBound(db, ctx),
    await checkNoOverlappingLeases(db, leases),
    await checkNoFencedOutWrites(db),
    await checkTerminalOnce(db, ctx),
    await checkPostSync(db, ctx),
    await checkCounts(db, ctx),
    await checkWatermarks(db),
  ];
}
