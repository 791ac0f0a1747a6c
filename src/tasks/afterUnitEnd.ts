/** What every unit end (terminal, deferred, expired) arms in the same transaction. */
import type { Tx } from '../db/types.js';
import { armOutbox } from '../store/outbox.js';
import type { UnitRow } from '../store/rows.js';
import { hasOtherOpenUnit, runsWaitingForCapacity, type EndFacts } from '../store/units.js';

export const MAX_RUNS_WOKEN = 16;

/**
 * Arms finalize when this unit was the run's last open one, and wakes the dispatch rows of runs
 * whose planned units wait for the capacity this unit freed (its bucket, or its own run — work
 * items wait for the reference tier). Returns whether other open units were seen (the caller then
 * re-checks after commit: of two "last" units racing, the later one arms finalize). `facts`, when
 * the caller's terminal CAS already read them (finishUnit), spare the two reads.
 */
export async function armAfterUnitEnd(
  tx: Tx,
  unit: UnitRow,
  now: Date,
  trace?: Record<string, string> | null,
  facts?: EndFacts,
): Promise<boolean> {
  const selfOpen = unit.status === 'retrying';
  const othersOpen = selfOpen || (facts ? facts.others_open : await hasOtherOpenUnit(tx, unit.sync_run_id, unit.id));
  if (!othersOpen) {
    await armOutbox(tx, 'finalize_sync_run', [{ orgId: unit.org_id, runId: unit.sync_run_id }], now, now, trace);
  }
  const waiting = facts ? facts.waiting_runs : await runsWaitingForCapacity(tx, unit, unit.sync_run_id, MAX_RUNS_WOKEN);
  if (waiting.length > 0) {
    await armOutbox(
      tx,
      'dispatch_sync_run',
      waiting.map((w) => ({ orgId: w.org_id, runId: w.sync_run_id })),
      now,
      now,
    );
  }
  return othersOpen;
}
