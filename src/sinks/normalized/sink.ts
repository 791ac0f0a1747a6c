/**
 * The normalized sink: a PostgresSink over the normalized surfaces (every one a retry-safe upsert
 * on (org_id, integration_id, provider, external_id)), each row checked first (`prepareRow`).
 */
import { ValidationError } from '../../errors.js';
import type { Db } from '../../db/types.js';
import type { LeaseGuard, Sink } from '../../sdk/types.js';
import { PostgresSink } from '../postgres.js';
import { prepareRow } from './rows.js';
import { NORMALIZED_SURFACES, normalizedSurfaceSpecs, type NormalizedSurface } from './surfaces.js';

export class NormalizedSink implements Sink {
  readonly surfaces: readonly string[] = NORMALIZED_SURFACES;
  readonly retrySafeSurfaces: readonly string[] = NORMALIZED_SURFACES;
  private readonly inner: PostgresSink;

  constructor(
    db: Db,
    readonly name = 'normalized',
  ) {
    this.inner = new PostgresSink(db, normalizedSurfaceSpecs(), name);
  }

  /**
   * Upserts `rows` into `surface` in one transaction fenced by `guard` (see PostgresSink.write):
   * a row's columns replace the stored ones, `first_seen_at` stays. Throws `ValidationError`
   * (nothing written) for an unknown surface or a bad value. Returns rows written.
   */
  async write(guard: LeaseGuard, surface: string, rows: readonly Record<string, unknown>[]): Promise<number> {
    if (!isSurface(surface)) throw new ValidationError('surface', `unknown surface "${surface}"`);
    if (!Array.isArray(rows)) throw new ValidationError(surface, 'rows must be an array');
    const prepared = rows.map((row: Readonly<Record<string, unknown>>) => prepareRow(surface, row));
    return this.inner.write(guard, surface, prepared);
  }
}

/** The sink over the normalized tables of `db`'s schema. */
export function normalizedSink(db: Db): NormalizedSink {
  return new NormalizedSink(db);
}

function isSurface(surface: string): surface is NormalizedSurface {
  return (NORMALIZED_SURFACES as readonly string[]).includes(surface);
}
