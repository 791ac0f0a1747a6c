/**
 * The pass's outbox-depth step: one sample a minute at most (a pass in a minute already sampled, by
 * this reconciler or another, writes nothing), and samples older than the retention pruned in
 * bounded batches. The activity charts read them (src/store/outboxSamples.ts).
 */
import { after } from '../clock.js';
import type { EngineContext } from '../context.js';
import { pruneOutboxSamples, sampleOutboxDepth } from '../store/outboxSamples.js';

/** How long samples are kept: seven days, the longest window the charts show with depth. */
export const OUTBOX_SAMPLE_RETENTION_MS = 7 * 86_400_000;

export interface OutboxSampleCounters {
  /** Sample rows written this pass (0 when the minute was sampled already). */
  outbox_samples: number;
  pruned_outbox_samples: number;
}

/** Samples the outbox's depth (at most once a minute) and prunes old samples. */
export async function sampleOutbox(ctx: EngineContext): Promise<OutboxSampleCounters> {
  const now = ctx.clock.now();
  const outbox_samples = await sampleOutboxDepth(ctx.db, now);
  const cutoff = after(now, -OUTBOX_SAMPLE_RETENTION_MS);
  const batch = ctx.settings.reconcileBatch * 10;
  let pruned_outbox_samples = 0;
  for (let i = 0; i < 10; i++) {
    const n = await pruneOutboxSamples(ctx.db, cutoff, batch);
    pruned_outbox_samples += n;
    if (n < batch) break;
  }
  return { outbox_samples, pruned_outbox_samples };
}
