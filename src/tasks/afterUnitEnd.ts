/** What every unit end (terminal, deferred, expired) arms in the same transaction. */
import type { Tx } from '../db/types.js';
import { armOutboxRows, type Wake } from '../store/outbox.js';
import { hasOtherOpenUnit, runsWaitingForCapacity, type EndedUnit } from '../store/units.js';

/**
 * Runs woken per freed slot: the run of the oldest planned unit in the bucket (its dispatch
 * claims up to the free capacity from its own units). More would only queue dispatch tasks on the
 * bucket's lock to find the slot taken; slots still free after that are the materializer's.
 */
export const MAX_RUNS_WOKEN = 1;

/**
 * What a unit's end wakes: finalize when this unit was the run's last open one, and the dispatch
 * rows of runs whose planned units wait for the capacity it freed (the oldest in its bucket, and
 * its own run — work items wait for the reference tier). `othersOpen`: other open units were seen (the caller
 * then re-checks after commit: of two "last" units racing, the later one arms finalize). A
 * terminal end does all of this in its CAS statement (finishUnits); this is the other ends'.
 */
export async function wakesAfterUnitEnd(
  tx: Tx,
  unit: EndedUnit,
  now: Date,
  trace?: Record<string, string> | null,
): Promise<{ wakes: Wake[]; othersOpen: boolean }> {
  const selfOpen = unit.status === 'retrying';
  const othersOpen = selfOpen || (await hasOtherOpenUnit(tx, unit.sync_run_id, unit.id));
  const wakes: Wake[] = [];
  if (!othersOpen) wakes.push({ kind: 'finalize_sync_run', orgId: unit.org_id, runId: unit.sync_run_id, availableAt: now, trace });
  const waiting = await runsWaitingForCapacity(tx, unit, unit.sync_run_id, MAX_RUNS_WOKEN);
  for (const w of waiting) wakes.push({ kind: 'dispatch_sync_run', orgId: w.org_id, runId: w.sync_run_id, availableAt: now });
  return { wakes, othersOpen };
}

/**
 * Arms what the unit's end wakes (see wakesAfterUnitEnd), plus the caller's own `extra` wake-ups,
 * in one statement (one lock order). Returns whether other open units were seen.
 */
export async function armAfterUnitEnd(
  tx: Tx,
  unit: EndedUnit,
  now: Date,
  trace?: Record<string, string> | null,
  extra: readonly Wake[] = [],
): Promise<boolean> {
  const { wakes, othersOpen } = await wakesAfterUnitEnd(tx, unit, now, trace);
  await armOutboxRows(tx, [...extra, ...wakes], now);
  return othersOpen;
}
