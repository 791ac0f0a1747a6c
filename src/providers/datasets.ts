/** The dataset specs a unit runs under: its own dataset and those it carries (a family read together). */
import type { DatasetSpec, IntegrationInfo, Provider } from '../sdk/types.js';

/** Each of `keys`' specs, in order; undefined when the provider declares one of them not. */
export function specsOf(
  provider: Provider,
  integration: IntegrationInfo,
  keys: readonly string[],
): DatasetSpec[] | undefined {
  const all = provider.datasetsFor?.(integration) ?? provider.datasets;
  const specs: DatasetSpec[] = [];
  for (const key of keys) {
    const spec = all.find((d) => d.key === key);
    if (!spec) return undefined;
    specs.push(spec);
  }
  return specs;
}

/** Every surface a unit of these datasets may write: the union of what each declares. */
export function declaredSurfaces(specs: readonly DatasetSpec[]): string[] {
  return [...new Set(specs.flatMap((s) => s.surfaces))];
}
