/**
 * The `work-item-metrics` post_sync handler: after a run, one new generation of daily figures
 * per UTC day of the run's covered window, computed in SQL over the normalized tables inside the
 * handler's transaction (docs/normalized-store.md lists each figure).
 */
import { MAX_METRICS_DAYS, metricsDays } from '../../domain/metricsDays.js';
import type { IntegrationInfo, PostSyncHandler, PostSyncPayload, PostSyncContext } from '../../sdk/types.js';
import { firstItemAt, holdIntegration, insertMetricsGeneration } from '../../store/normalizedMetrics.js';

export const WORK_ITEM_METRICS = 'work-item-metrics';

/** The providers whose integrations write work items and pull requests to the normalized tables. */
export const WORK_ITEM_PROVIDERS: readonly string[] = ['github', 'linear', 'jira'];

/**
 * Computes one generation (`computed_at` = the handler's clock time) for the payload's window: a
 * null `from` starts at the integration's first item, a null `to` ends now. Deleted work items and
 * pull requests (`deleted_at` set) are not counted. At most
 * `MAX_METRICS_DAYS` (400) days per run, the most recent: older days of a longer window are not
 * recomputed (a warning names how many); their earlier generations stay. Nothing is written for
 * an integration deleted meanwhile. Providers list it in their `postSyncHandlers`.
 */
export const workItemMetricsHandler: PostSyncHandler = {
  name: WORK_ITEM_METRICS,
  appliesTo: (integration: IntegrationInfo) => WORK_ITEM_PROVIDERS.includes(integration.provider),
  async run(payload, ctx) {
    await computeWorkItemMetrics(payload, ctx);
  },
};

/** The handler's body; returns the rows inserted. */
export async function computeWorkItemMetrics(payload: PostSyncPayload, ctx: PostSyncContext): Promise<number> {
  // A deleted integration gets no metrics; one being deleted (and purged) waits for these.
  if (!(await holdIntegration(ctx.tx, payload.orgId, payload.integrationId))) return 0;
  const now = ctx.clock.now();
  const window = { from: toDate(payload.window.from), to: toDate(payload.window.to) };
  const first = window.from === null ? await firstItemAt(ctx.tx, payload.orgId, payload.integrationId) : null;
  const days = metricsDays(window, now, first, MAX_METRICS_DAYS);
  if (days === null) return 0;
  if (days.skippedDays > 0) {
    ctx.logger.warn(
      { skippedDays: days.skippedDays, firstDay: days.firstDay, maxDays: MAX_METRICS_DAYS },
      'work-item metrics: window longer than the per-run cap; older days not recomputed',
    );
  }
  return insertMetricsGeneration(ctx.tx, {
    orgId: payload.orgId,
    integrationId: payload.integrationId,
    firstDay: days.firstDay,
    lastDay: days.lastDay,
    computedAt: now,
  });
}

function toDate(iso: string | null): Date | null {
  return iso === null ? null : new Date(iso);
}
