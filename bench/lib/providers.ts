/**
 * The benchmarks' plug-ins: a no-op provider (a unit does nothing and succeeds), a hanging
 * provider (a unit waits until its lease is lost, for the recovery scenario) and a sink that
 * writes nothing. Registered through the ordinary registry API, like any user's provider.
 */
import type { Db } from '../../src/db/types.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { DatasetSpec, PostSyncHandler, Provider, Sink } from '../../src/sdk/types.js';

export const NOOP_PROVIDER = 'bench-noop';
export const HANG_PROVIDER = 'bench-hang';
export const NOOP_DATASET = 'noop-items';
export const BENCH_ORG = 'org-bench';

/** One work-item dataset in one-day windows, writing no surface. */
const DATASETS: readonly DatasetSpec[] = [
  { key: NOOP_DATASET, tier: 'work_item', costClass: 'noop', windowDays: 1, keepsWatermark: false, surfaces: [] },
];

export const noopSink: Sink = {
  name: 'bench-noop',
  surfaces: [],
  retrySafeSurfaces: [],
  async write() {
    return 0;
  },
};

export function noopProvider(): Provider {
  return { name: NOOP_PROVIDER, datasets: DATASETS, windowDays: 1, runUnit: async () => ({ items: 0 }) };
}

/** Announces each unit it starts (with its lease owner), then waits until its signal aborts. */
export function hangProvider(announce: (unitId: string, owner: string) => void): Provider {
  return {
    name: HANG_PROVIDER,
    datasets: DATASETS,
    windowDays: 1,
    runUnit: (ctx) => {
      announce(ctx.unit.id, ctx.lease.owner);
      return new Promise((_, reject) => {
        const abort = () => reject(new Error('aborted', { cause: ctx.signal.reason }));
        if (ctx.signal.aborted) abort();
        ctx.signal.addEventListener('abort', abort, { once: true });
      });
    },
  };
}

/** A registry with both bench providers (each with the no-op sink) and optional handlers. */
export function benchRegistry(
  opts: { onUnitStart?: (unitId: string, owner: string) => void; handlers?: PostSyncHandler[] } = {},
): ProviderRegistry {
  const registry = new ProviderRegistry()
    .register(noopProvider(), noopSink)
    .register(hangProvider(opts.onUnitStart ?? (() => undefined)), noopSink);
  for (const h of opts.handlers ?? []) registry.registerPostSyncHandler(h);
  return registry;
}

/** Inserts an integration of `provider` with one source and the no-op dataset. Returns its id. */
export async function createBenchIntegration(db: Db, provider: string, name = provider): Promise<string> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO syncrelay.integrations (org_id, provider, name, config)
       VALUES ($1, $2, $3, '{}'::jsonb) RETURNING id`,
      [BENCH_ORG, provider, name],
    );
    const id = rows[0]!.id;
    await tx.query(
      `INSERT INTO syncrelay.integration_sources (org_id, integration_id, external_key, name)
       VALUES ($1, $2, 'src-1', 'src-1')`,
      [BENCH_ORG, id],
    );
    await tx.query(
      `INSERT INTO syncrelay.integration_datasets (org_id, integration_id, dataset_key) VALUES ($1, $2, $3)`,
      [BENCH_ORG, id, NOOP_DATASET],
    );
    return id;
  });
}
