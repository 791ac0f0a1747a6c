/**
 * Giving a worker slot back to another org's waiting work (src/worker/orgShare.ts), by the
 * engine's existing rules only:
 * - a run_sync_unit message not yet claimed is put back as a failed publish is: its units marked
 *   unpublished and the run's dispatch row armed `delayMs` from now (earliest wins), so the relay
 *   and dispatch publish them again; the dispatch-stale rule and the materializer stay the backstop.
 * - a running unit yields as a deferral does: running → retrying under its own live lease, due in
 *   `delayMs`, with the dispatch row and the end wake-ups armed in the same transaction.
 */
import { after } from '../clock.js';
import type { EngineContext } from '../context.js';
import type { TraceCarrier } from '../observability/trace.js';
import { armEndWakes } from '../store/endWakes.js';
import { unpublishUnits, yieldOwnUnit } from '../store/fairShare.js';
import { armOutbox } from '../store/outbox.js';
import type { UnitRow } from '../store/rows.js';

/** The message's units, unclaimed, go back to their run's dispatch. Returns how many were put back. */
export async function putBackUnits(
  ctx: EngineContext,
  target: { orgId: string; runId: string; unitIds: readonly string[] },
  delayMs: number,
  trace?: TraceCarrier | null,
): Promise<number> {
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now();
    const n = await unpublishUnits(tx, target.unitIds);
    if (n > 0) {
      const runs = [{ orgId: target.orgId, runId: target.runId }];
      await armOutbox(tx, 'dispatch_sync_run', runs, after(now, delayMs), now, trace);
    }
    return n;
  });
}

/** A running unit gives its slot up: `retrying`, due in `delayMs`; 'lease_lost' if it was no longer ours. */
export async function yieldUnit(
  ctx: EngineContext,
  unit: UnitRow,
  owner: string,
  delayMs: number,
  trace?: TraceCarrier | null,
): Promise<'yielded' | 'lease_lost'> {
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now();
    const availableAt = after(now, delayMs);
    const row = await yieldOwnUnit(tx, { unitId: unit.id, owner, now, availableAt });
    if (!row) return 'lease_lost' as const;
    const own = { kind: 'dispatch_sync_run' as const, orgId: unit.org_id, runId: unit.sync_run_id, availableAt, trace };
    await armEndWakes(tx, [{ unitId: row.id, trace }], [own], now);
    return 'yielded' as const;
  });
}
