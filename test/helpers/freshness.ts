/**
 * An integration whose sources reach the freshness states through real runs of the synthetic
 * provider (worker and reconciler of `engine`): one synced (fresh), one whose run failed, one whose
 * unit a rate limit defers for an hour, one never synced. The fault knobs are changed between runs
 * in the integration's config, as an operator would.
 */
import type { Db } from '../../src/db/types.js';
import type { Engine } from '../../src/engine.js';
import { runTerminal, waitFor } from './engine.js';

export const FRESHNESS_SOURCES = ['s-fresh', 's-failing', 's-deferred', 's-never'] as const;
export type FreshnessSource = (typeof FRESHNESS_SOURCES)[number];

export interface FreshnessSeed {
  integrationId: string;
  /** Source ids by external key. */
  sources: Record<FreshnessSource, string>;
  /** The run of each synced source. */
  runs: { fresh: string; failing: string; deferred: string };
}

/** Merges `patch` into the integration's config. */
async function patchConfig(db: Db, id: string, patch: Record<string, unknown>): Promise<void> {
  await db.query(`UPDATE ${db.schema.integrations} SET config = config || $2::jsonb WHERE id = $1`, [
    id,
    JSON.stringify(patch),
  ]);
}

/**
 * Triggers an incremental run of one source and returns its id; `workItemsOnly`: without the
 * reference dataset, whose units the work items' wait for.
 */
async function syncSource(
  engine: Engine,
  orgId: string,
  integrationId: string,
  sourceId: string,
  workItemsOnly = false,
): Promise<string> {
  const accepted = await engine.trigger({
    orgId,
    integrationId,
    mode: 'incremental',
    triggeredBy: 'api',
    sourceIds: [sourceId],
    ...(workItemsOnly ? { datasets: ['work-items'] } : {}),
  });
  return accepted.syncRunId;
}

/** Seeds the four sources' states (the engine needs a running worker and reconciler). */
export async function seedFreshnessStates(
  engine: Engine,
  orgId: string,
  name = 'Acme synthetic',
): Promise<FreshnessSeed> {
  const db = engine.db;
  const integration = await engine.createIntegration({
    orgId,
    provider: 'synthetic',
    name,
    sources: [...FRESHNESS_SOURCES],
    datasets: ['teams', 'work-items'],
    config: { itemsPerDay: 1, latencyMs: 0 },
  });
  const { rows } = await db.query<{ id: string; external_key: FreshnessSource }>(
    `SELECT id, external_key FROM ${db.schema.integration_sources} WHERE integration_id = $1`,
    [integration.id],
  );
  const sources = Object.fromEntries(rows.map((r) => [r.external_key, r.id])) as Record<FreshnessSource, string>;

  const fresh = await syncSource(engine, orgId, integration.id, sources['s-fresh']);
  await runTerminal(db, fresh);
  await patchConfig(db, integration.id, { failRate: 1 });
  const failing = await syncSource(engine, orgId, integration.id, sources['s-failing']);
  await runTerminal(db, failing);
  await patchConfig(db, integration.id, { failRate: 0, rateLimitRate: 1, rateLimitRetryAfterMs: 3_600_000 });
  const deferred = await syncSource(engine, orgId, integration.id, sources['s-deferred'], true);
  await waitFor(async () => {
    const { rows: units } = await db.query(
      `SELECT 1 FROM ${db.schema.sync_run_units}
        WHERE sync_run_id = $1 AND source_id = $2 AND rate_limit_deferrals > 0 AND available_at IS NOT NULL`,
      [deferred, sources['s-deferred']],
    );
    return units.length > 0;
  });
  return { integrationId: integration.id, sources, runs: { fresh, failing, deferred } };
}
