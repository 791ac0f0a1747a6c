/** What the Linear verify tests share: the family backfilled, and a verify unit of it. */
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import { runLinearUnit, type LinearProviderOptions } from '../../../src/providers/linear/index.js';
import { DAY, T0 } from '../../helpers/emulatorSuite.js';
import type { useLinearSuite } from './support.js';

export const FAST: LinearProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: { probePollMs: 20 } };
export const FAMILY = ['work-items', 'work-item-comments', 'work-item-history'];

type Suite = ReturnType<typeof useLinearSuite>;

/** Backfills the team's whole history with its family, so the store holds every issue and comment. */
export async function backfill(fx: Suite): Promise<void> {
  await runLinearUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY, since: new Date(T0 - 400 * DAY) }), FAST);
}

/** A verify unit of the family planned at `before` (the run's planning time; a resumed attempt keeps it). */
export function verify(fx: Suite, checkpoint: UnitCheckpoint | null = null, before = fx.clock.now()) {
  const unit = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'verify', since: null, before, checkpoint });
  return runLinearUnit(unit, FAST);
}
