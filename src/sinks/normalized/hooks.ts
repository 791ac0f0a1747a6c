/**
 * The hooks the normalized sink runs around its writes: each provider's own (`Provider.surfaceHooks`,
 * e.g. GitHub's `started_at` rule), combined per surface in the order the providers are given.
 */
import { ValidationError } from '../../errors.js';
import type { SurfaceHookMap, SurfaceHooks } from '../../sdk/normalized.js';
import { isNormalizedSurface, NORMALIZED_SURFACES, type NormalizedSurface } from './surfaces.js';

/**
 * One `SurfaceHooks` per surface that any of `maps` names: every map's `before` in order, then after
 * the upserts every map's `after` in order. Throws `ValidationError` (`hooks.<surface>`) for a name
 * that is not a normalized surface.
 */
export function combineSurfaceHooks(maps: readonly SurfaceHookMap[]): Partial<Record<NormalizedSurface, SurfaceHooks>> {
  for (const surface of maps.flatMap((m) => Object.keys(m))) {
    if (!isNormalizedSurface(surface)) throw new ValidationError(`hooks.${surface}`, 'not a normalized surface');
  }
  const combined: Partial<Record<NormalizedSurface, SurfaceHooks>> = {};
  for (const surface of NORMALIZED_SURFACES) {
    const hooks = maps.flatMap((m) => (Object.hasOwn(m, surface) ? [m[surface]!] : []));
    if (hooks.length > 0) combined[surface] = inOrder(hooks);
  }
  return combined;
}

function inOrder(hooks: readonly SurfaceHooks[]): SurfaceHooks {
  if (hooks.length === 1) return hooks[0]!;
  return {
    async before(tx, rows) {
      for (const h of hooks) await h.before?.(tx, rows);
    },
    async after(tx, rows) {
      for (const h of hooks) await h.after?.(tx, rows);
    },
  };
}
