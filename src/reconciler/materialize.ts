/** Phase 3: arm outbox rows that should exist but don't. */
import type { OutboxKind } from '../domain/statuses.js';
import { armOutboxRows } from '../store/outbox.js';
import {
  ledgerRowsWithoutPostSync,
  runsNeedingDispatch,
  runsNeedingFinalize,
  type LedgerCursor,
} from '../store/reconcile.js';
import type { EngineContext } from '../context.js';
import { after } from '../clock.js';

export interface MaterializeCounters {
  materialized_dispatch: number;
  materialized_finalize: number;
  materialized_post_sync: number;
}

const DAY_MS = 86_400_000;
/** Ledger rows each pass examines, in SYNC_RECONCILE_BATCH: the scan moves on from pass to pass. */
export const LEDGER_SLICE_BATCHES = 1;

/** Where each engine's ledger repair scan goes on from (per engine, never shared). */
const ledgerCursors = new WeakMap<EngineContext, LedgerCursor | null>();

export async function materialize(ctx: EngineContext): Promise<MaterializeCounters> {
  const { reconcileBatch: batch, dispatchStaleMs, outboxRetentionDays, concurrencyPerBucket } = ctx.settings;
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now();
    const finalize = await runsNeedingFinalize(tx, batch);
    const finalizable = new Set(finalize.map((r) => r.sync_run_id));
    const dispatch = (
      await runsNeedingDispatch(tx, now, after(now, -dispatchStaleMs), batch, concurrencyPerBucket)
    ).filter((r) => !finalizable.has(r.sync_run_id));
    const ledgerSince = after(now, -Math.min(outboxRetentionDays * DAY_MS, DAY_MS));
    const slice = await ledgerRowsWithoutPostSync(
      tx,
      ledgerSince,
      ledgerCursors.get(ctx) ?? null,
      batch * LEDGER_SLICE_BATCHES,
    );
    ledgerCursors.set(ctx, slice.next);
    const postSync = slice.missing.slice(0, batch);
    const wakes = (kind: OutboxKind, rows: { org_id: string; sync_run_id: string }[]) =>
      rows.map((r) => ({ kind, orgId: r.org_id, runId: r.sync_run_id, availableAt: now }));
    // One statement for all three kinds: rows are locked in the one (run, kind) order.
    await armOutboxRows(
      tx,
      [
        ...wakes('finalize_sync_run', finalize),
        ...wakes('dispatch_sync_run', dispatch),
        ...wakes('post_sync', postSync),
      ],
      now,
    );
    return {
      materialized_dispatch: dispatch.length,
      materialized_finalize: finalize.length,
      materialized_post_sync: postSync.length,
    };
  });
}
