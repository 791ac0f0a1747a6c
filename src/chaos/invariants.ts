/** The invariants of SPEC §12, each checked from the database: a result per invariant with counter-examples. */
import type { PostSyncDelivery } from '../config.js';
import type { Db } from '../db/types.js';
import { buildLeaseTable, checkNoFencedOutWrites, checkNoOverlappingLeases } from './checkLeases.js';
import { checkCounts, checkPostSync, checkTerminalOnce, checkTerminalWithinBound, checkWatermarks } from './checkRuns.js';

export interface InvariantResult {
  id: string;
  title: string;
  ok: boolean;
  /** What was looked at, for the report. */
  checked: string;
  violations: number;
  /** Up to MAX_EXAMPLES counter-examples, each naming the ids involved. */
  examples: string[];
}

const MAX_EXAMPLES = 20;

export function finding(id: string, title: string, r: { checked: string; examples: string[]; violations?: number }): InvariantResult {
  const violations = r.violations ?? r.examples.length;
  return { id, title, ok: violations === 0, checked: r.checked, violations, examples: r.examples.slice(0, MAX_EXAMPLES) };
}

export interface CheckContext {
  orgId: string;
  /** Every run the trigger committed (id → when it was triggered, ms epoch). */
  runs: Map<string, number>;
  faultsStoppedAt: number;
  boundMs: number;
  postSync: PostSyncDelivery;
}

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
