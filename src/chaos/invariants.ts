/** The invariants of SPEC §12, each checked from the database: a result per invariant with counter-examples. */
import type { Db } from '../db/types.js';
import { buildLeaseTable, checkNoFencedOutWrites, checkNoOverlappingLeases } from './checkLeases.js';
import { checkLedger, checkPostSyncOutbox } from './checkPostSync.js';
import type { CheckContext, InvariantResult } from './findings.js';
import {
  checkCounts,
  checkPostSync,
  checkTerminalOnce,
  checkTerminalWithinBound,
  checkWatermarks,
} from './checkRuns.js';

export type { CheckContext, InvariantResult } from './findings.js';

/** Runs every check: those of SPEC §12 in its order, then the outbox's and the ledger's post_sync history. */
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
    await checkPostSyncOutbox(db, ctx),
    await checkLedger(db, ctx),
  ];
}
