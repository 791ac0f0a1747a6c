/** Creating integrations: validated against the provider before anything is written. */
import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import { ValidationError } from '../errors.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { insertDatasets, insertIntegration, insertSources, type IntegrationRow } from '../store/integrations.js';

export interface NewIntegration {
  orgId: string;
  provider: string;
  name: string;
  sources: readonly string[];
  datasets: readonly string[];
  config?: Record<string, unknown>;
}

export interface CreatedIntegration extends IntegrationRow {
  sources: string[];
  datasets: string[];
}

export function validateIntegration(registry: ProviderRegistry, i: NewIntegration): void {
  if (!i.orgId.trim()) throw new ValidationError('org', 'must not be empty');
  if (!i.name.trim()) throw new ValidationError('name', 'must not be empty');
  if (!registry.has(i.provider)) {
    throw new ValidationError(
      'provider',
      `unknown provider "${i.provider}" (known: ${registry
        .list()
        .map((p) => p.name)
        .join(', ')})`,
    );
  }
  const provider = registry.get(i.provider);
  const config = i.config ?? {};
  provider.validateConfig?.(config);
  const info = { id: '', orgId: i.orgId, provider: i.provider, name: i.name, config };
  const known = new Set((provider.datasetsFor?.(info) ?? provider.datasets).map((d) => d.key));
  if (i.datasets.length === 0) throw new ValidationError('datasets', 'at least one dataset is required');
  for (const d of i.datasets)
    if (!known.has(d)) throw new ValidationError('datasets', `unknown dataset "${d}" for ${i.provider}`);
  if (new Set(i.datasets).size !== i.datasets.length) throw new ValidationError('datasets', 'contains duplicates');
  if (new Set(i.sources).size !== i.sources.length) throw new ValidationError('sources', 'contains duplicates');
  for (const s of i.sources) if (!s.trim()) throw new ValidationError('sources', 'must not contain empty keys');
}

/** Creates the integration with its sources and datasets in one transaction. */
export async function createIntegration(
  db: Db,
  deps: { registry: ProviderRegistry; clock: Clock },
  i: NewIntegration,
): Promise<CreatedIntegration> {
  validateIntegration(deps.registry, i);
  return db.transaction(async (tx) => {
    const row = await insertIntegration(
      tx,
      { orgId: i.orgId, provider: i.provider, name: i.name, config: i.config ?? {} },
      deps.clock.now(),
    );
    await insertSources(tx, i.orgId, row.id, i.sources);
    await insertDatasets(tx, i.orgId, row.id, i.datasets);
    return { ...row, sources: [...i.sources], datasets: [...i.datasets] };
  });
}
