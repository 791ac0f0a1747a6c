/**
 * The normalized sink: a PostgresSink over the normalized surfaces (every one a retry-safe upsert
 * on (org_id, integration_id, provider, external_id)), each row checked first (`prepareRow`), with
 * the providers' hooks (hooks.ts) around the writes of the surfaces they name.
 */
import { ValidationError } from '../../errors.js';
import type { Db, Tx } from '../../db/types.js';
import type { SurfaceHookMap, VerifyScope } from '../../sdk/normalized.js';
import type { LeaseGuard, Sink, SinkTombstones } from '../../sdk/types.js';
import { PostgresSink } from '../postgres.js';
import { combineSurfaceHooks } from './hooks.js';
import { DEFAULT_STORED_LIMITS, type StoredLimits } from './limits.js';
import { prepareRow } from './rows.js';
import { listUnseenPage, markDeleted, markVerified, storedByIds, type TombstoneScope } from './tombstones.js';
import {
  DELETED_AT,
  isNormalizedSurface,
  isTombstoneSurface,
  NORMALIZED_SURFACES,
  normalizedSurfaceSpecs,
} from './surfaces.js';

export interface NormalizedSinkOptions {
  /**
   * The providers' hooks (`Provider.surfaceHooks`, e.g. GitHub's `started_at` rule), run around
   * the writes of the surfaces they name; several on one surface run in this order. Without a
   * provider's hooks, what they derive is left unset. @default none
   */
  hooks?: readonly SurfaceHookMap[];
  /** What a row may store (SYNC_STORED_TEXT_MAX_CHARS, SYNC_STORED_RAW_MAX_BYTES). @default DEFAULT_STORED_LIMITS */
  limits?: Partial<StoredLimits>;
}

export class NormalizedSink implements Sink {
  readonly surfaces: readonly string[] = NORMALIZED_SURFACES;
  readonly retrySafeSurfaces: readonly string[] = NORMALIZED_SURFACES;
  private inner: PostgresSink;
  private readonly hooks: SurfaceHookMap[];
  private readonly limits: StoredLimits;

  /** Throws `ValidationError` when a hook names a surface that is not a normalized one. */
  constructor(
    private readonly db: Db,
    readonly name = 'normalized',
    hooks: readonly SurfaceHookMap[] = [],
    limits: Partial<StoredLimits> = {},
  ) {
    this.hooks = [...new Set(hooks)];
    this.limits = {
      textMaxChars: limits.textMaxChars ?? DEFAULT_STORED_LIMITS.textMaxChars,
      rawMaxBytes: limits.rawMaxBytes ?? DEFAULT_STORED_LIMITS.rawMaxBytes,
    };
    this.inner = this.build();
  }

  /** Runs `hooks` too from now on (after those given before; a map given again is run once). */
  useSurfaceHooks(hooks: SurfaceHookMap): void {
    if (this.hooks.includes(hooks)) return;
    combineSurfaceHooks([hooks]); // refuses a map naming an unknown surface before anything changes
    this.hooks.push(hooks);
    this.inner = this.build();
  }

  private build(): PostgresSink {
    return new PostgresSink(this.db, normalizedSurfaceSpecs(combineSurfaceHooks(this.hooks)), this.name);
  }

  /** A verify's side of the store (tombstones.ts), each change in one transaction fenced by the guard. */
  readonly tombstones: SinkTombstones = {
    compare: (guard, scope, ids, at) =>
      this.fenced(guard, async (tx) => {
        const stored = await storedByIds(tx, tombstoneScope(scope), ids);
        await markVerified(tx, tombstoneScope(scope), ids, at);
        return stored;
      }),
    unseen: (scope, since, after, limit) => listUnseenPage(this.db, tombstoneScope(scope), since, after, limit),
    markDeleted: (guard, scope, ids, at, unseenSince) =>
      this.fenced(guard, (tx) => markDeleted(tx, tombstoneScope(scope), ids, at, unseenSince)),
  };

  private fenced<T>(guard: LeaseGuard, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) => {
      await guard.assertHeldIn(tx);
      return fn(tx);
    });
  }

  /**
   * Upserts `rows` into `surface` in one transaction fenced by `guard` (see PostgresSink.write):
   * a row's columns replace the stored ones, `first_seen_at` stays, and `deleted_at` is cleared (an
   * object written again exists: a deleted one is restored). Throws `ValidationError`
   * (nothing written) for an unknown surface or a bad value. Returns rows written.
   */
  async write(guard: LeaseGuard, surface: string, rows: readonly Record<string, unknown>[]): Promise<number> {
    if (!isNormalizedSurface(surface)) throw new ValidationError('surface', `unknown surface "${surface}"`);
    if (!Array.isArray(rows)) throw new ValidationError(surface, 'rows must be an array');
    const prepared = rows.map((row: Readonly<Record<string, unknown>>) => prepareRow(surface, row, this.limits));
    if (isTombstoneSurface(surface)) for (const row of prepared) row[DELETED_AT] = null;
    return this.inner.write(guard, surface, prepared);
  }
}

/** `scope` as the tombstone store takes it (each of its functions refuses a surface without tombstones). */
function tombstoneScope(scope: VerifyScope): TombstoneScope {
  return scope as TombstoneScope;
}

/** The sink over the normalized tables of `db`'s schema, running `options.hooks` around its writes. */
export function normalizedSink(db: Db, options: NormalizedSinkOptions = {}): NormalizedSink {
  return new NormalizedSink(db, 'normalized', options.hooks, options.limits);
}
