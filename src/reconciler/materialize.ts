/** Phase 3: arm outbox rows that should exist but don't. */
import { armOutbox } from '../store/outbox.js';
import { ledgerRowsWithoutPostSync, runsNeedingDispatch, runsNeedingFinalize } from '../store/reconcile.js';
import { after, type EngineContext } from '../tasks/context.js';

export interface MaterializeCounters {
  materialized_dispatch: number;
  materialized_finalize: number;
  materialized_post_sync: number;
}

const DAY_MS = 86_400_000;

export async function materialize(ctx: EngineContext): Promise<MaterializeCounters> {
  const { reconcileBatch: batch, dispatchStaleMs, outboxRetentionDays } = ctx.settings;
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now();
    const finalize = await runsNeedingFinalize(tx, batch);
    const finalizable = new Set(finalize.map((r) => r.sync_run_id));
    const dispatch = (await runsNeedingDispatch(tx, now, after(now, -dispatchStaleMs), batch)).filter(
      (r) => !finalizable.has(r.sync_run_id),
    );
    const ledgerSince = after(now, -Math.min(outboxRetentionDays * DAY_MS, DAY_MS));
    const postSync = await ledgerRowsWithoutPostSync(tx, ledgerSince, batch);
    const targets = (rows: { org_id: string; sync_run_id: string }[]) => rows.map((r) => ({ orgId: r.org_id, runId: r.sync_run_id }));
    await armOutbox(tx, 'finalize_sync_run', targets(finalize), now, now);
    await armOutbox(tx, 'dispatch_sync_run', targets(dispatch), now, now);
    await armOutbox(tx, 'post_sync', targets(postSync), now, now);
    return {
      materialized_dispatch: dispatch.length,
      materialized_finalize: finalize.length,
      materialized_post_sync: postSync.length,
    };
  });
}
