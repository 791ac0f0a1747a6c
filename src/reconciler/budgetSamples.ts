/** Retention of the rate-limit budget samples (rate_budget_samples): seven days, pruned by each pass. */
import { after } from '../clock.js';
import type { EngineContext } from '../context.js';
import { pruneRateBudgetSamples } from '../store/rateBudgetReport.js';

/** How long samples are kept: the longest history the budgets' API answers (168 hours). */
export const BUDGET_SAMPLE_RETENTION_MS = 7 * 86_400_000;

export interface BudgetSampleCounters {
  /** Rate-limit budget samples older than seven days, deleted by this pass. */
  pruned_rate_budget_samples: number;
}

/** Deletes samples past the retention in batches of ten scan batches, at most ten per pass. */
export async function pruneBudgetSamples(ctx: EngineContext): Promise<BudgetSampleCounters> {
  const cutoff = after(ctx.clock.now(), -BUDGET_SAMPLE_RETENTION_MS);
  const batch = ctx.settings.reconcileBatch * 10;
  let total = 0;
  for (let i = 0; i < 10; i++) {
    const n = await pruneRateBudgetSamples(ctx.db, cutoff, batch);
    total += n;
    if (n < batch) break;
  }
  return { pruned_rate_budget_samples: total };
}
