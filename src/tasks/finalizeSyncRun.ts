/** finalize_sync_run(run_id) — at-least-once delivery, exactly-once effect. */
import type { Tx } from '../db/types.js';
import { aggregateRun, jobRunStatusFor } from '../domain/aggregate.js';
import { isTerminalRun } from '../domain/statuses.js';
import { runTrace } from '../observability/trace.js';
import { completeJobRun } from '../store/jobRuns.js';
import { insertLedgerRow } from '../store/ledger.js';
import { armOutbox } from '../store/outbox.js';
import { countUnitsByStatus } from '../store/units.js';
import { finishRun, lockRun } from '../store/runs.js';
import type { EngineContext } from '../context.js';

export type FinalizeOutcome = 'missing' | 'already_final' | 'pending' | 'finalized';

/**
 * Finalizes in one transaction; after its commit, a run whose integration has remembered webhook
 * deliveries has them armed now (its end freed a live-run slot), not at the reconciler's next pass.
 */
export async function finalizeSyncRun(ctx: EngineContext, runId: string): Promise<FinalizeOutcome> {
  const ended: EndedRun = { webhookPending: null };
  const outcome = await ctx.db.transaction(async (tx) => {
    ended.webhookPending = null;
    const outcome = await finalizeInTx(ctx, tx, runId, ctx.clock.now(), {}, ended);
    if (outcome === 'finalized') await ctx.faults.hit('finalize.beforeCommit');
    return outcome;
  });
  if (outcome === 'finalized') ctx.unitEnds.freeRemembered([ended.webhookPending]);
  return outcome;
}

/** What finalizeInTx tells its caller of the run it ended. */
export interface EndedRun {
  /** The run's integration, when it has remembered webhook deliveries. */
  webhookPending: string | null;
}

/**
 * In the caller's transaction: if every unit is terminal, CAS the run to its terminal status,
 * mirror it on the JobRun, insert the ledger row and — only if that insert happened — arm post_sync.
 */
export async function finalizeInTx(
  ctx: EngineContext,
  tx: Tx,
  runId: string,
  now: Date,
  extra: Record<string, unknown> = {},
  ended: EndedRun = { webhookPending: null },
): Promise<FinalizeOutcome> {
  const run = await lockRun(tx, runId);
  if (!run) return 'missing';
  if (isTerminalRun(run.status)) return 'already_final';
  const outcome = aggregateRun(await countUnitsByStatus(tx, runId));
  if (!outcome) return 'pending';
  const done = await finishRun(tx, runId, outcome, extra, now);
  if (!done) return 'already_final';
  ended.webhookPending = done.webhook_pending ? done.integration_id : null;
  const counts = {
    run_status: outcome.status,
    total_units: outcome.total,
    completed_units: outcome.completed,
    failed_units: outcome.failed,
    cancelled_units: outcome.cancelled,
  };
  const jobStatus = jobRunStatusFor(outcome.status) as 'success' | 'failed' | 'cancelled';
  await completeJobRun(tx, runId, jobStatus, counts, outcome.error, now);
  if (await insertLedgerRow(tx, run.org_id, runId, 'post_sync', now)) {
    await armOutbox(tx, 'post_sync', [{ orgId: run.org_id, runId }], now, now, runTrace(run));
  }
  ctx.logger.info({ runId, status: outcome.status, ...counts }, 'run finalized');
  return 'finalized';
}
