/** Cancellation: a non-terminal run and all its non-terminal units → cancelled, once. */
import type { Db, Tx } from '../db/types.js';
import { isTerminalRun } from '../domain/statuses.js';
import { NotFoundError } from '../errors.js';
import { completeJobRun } from '../store/jobRuns.js';
import { insertLedgerRow } from '../store/ledger.js';
import { armEndWakes } from '../store/endWakes.js';
import { cancelOpenUnits, finishRun, lockRun } from '../store/runs.js';
import { countUnitsByStatus } from '../store/units.js';
import type { Clock } from '../clock.js';

export type CancelOutcome = 'cancelled' | 'already_terminal';

/**
 * Cancels the run (of `orgId`, when given). Workers holding leases are fenced out by the run
 * check in every unit CAS. Successful units still reach post_sync through the ledger.
 */
export async function cancelRun(db: Db, clock: Clock, runId: string, orgId?: string): Promise<CancelOutcome> {
  return db.transaction((tx) => cancelRunInTx(tx, clock, runId, orgId));
}

/** The same inside the caller's transaction. */
export async function cancelRunInTx(tx: Tx, clock: Clock, runId: string, orgId?: string): Promise<CancelOutcome> {
  const run = await lockRun(tx, runId);
  if (!run || (orgId !== undefined && run.org_id !== orgId)) throw new NotFoundError('sync run', runId);
  if (isTerminalRun(run.status)) return 'already_terminal';
  const now = clock.now();
  const freed = await cancelOpenUnits(tx, runId, now);
  const counts = await countUnitsByStatus(tx, runId);
  const completed = counts.success ?? 0;
  const failed = counts.failed ?? 0;
  const cancelled = counts.cancelled ?? 0;
  const outcome = {
    status: 'cancelled' as const,
    total: completed + failed + cancelled,
    completed,
    failed,
    cancelled,
    error: 'cancelled',
  };
  await finishRun(tx, runId, outcome, {}, now);
  await completeJobRun(
    tx,
    runId,
    'cancelled',
    { run_status: 'cancelled', completed_units: completed, failed_units: failed, cancelled_units: cancelled },
    'cancelled',
    now,
  );
  // post_sync once (the ledger), and the slots its units held to the runs waiting longest in their
  // buckets, in one statement (one lock order); the run is terminal now, so nothing finalizes it again.
  const postSync = completed > 0 && (await insertLedgerRow(tx, run.org_id, runId, 'post_sync', now));
  const own = postSync ? [{ kind: 'post_sync' as const, orgId: run.org_id, runId, availableAt: now }] : [];
  await armEndWakes(
    tx,
    freed.map((unitId) => ({ unitId })),
    own,
    now,
  );
  return 'cancelled';
}
