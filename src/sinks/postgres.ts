/**
 * The Postgres sink (SPEC §5 "Fencing", §9): idempotent upserts into its own tables, each write
 * in one transaction that first proves the unit's lease (row locked FOR SHARE), so a fenced-out
 * worker writes nothing.
 */
import { ValidationError } from '../errors.js';
import type { DbSchema } from '../db/schema.js';
import { quoteIdent, type Db, type Tx } from '../db/types.js';
import type { LeaseGuard, Sink } from '../sdk/types.js';
import type { SurfaceHooks } from '../sdk/normalized.js';
import { cleanJson, wellFormed } from './text.js';

/** One surface: a table written with `INSERT … ON CONFLICT (conflictColumns) DO UPDATE`. */
export interface SurfaceSpec {
  /**
   * The table: a plain name (`synthetic_items`) is in the install's schema (`db.schema`); a
   * qualified one (`analytics.items`) names its own schema. Each part is quoted as given.
   */
  table: string;
  /** The columns of a unique index; a row must carry every one of them. */
  conflictColumns: string[];
  /** Every column a row may carry (conflict columns included). */
  columns: string[];
  /** Writing the same rows again leaves the same state (true for upserts keyed on stable ids). */
  retrySafe: boolean;
  /** jsonb columns: non-string values are sent as JSON text (arrays would otherwise bind as SQL arrays). */
  jsonColumns?: string[];
  /** Statements that run with the batch in the write's own transaction (see SurfaceHooks). */
  hooks?: SurfaceHooks;
}

/** PostgreSQL's limit on bound parameters per statement. */
const MAX_PARAMS = 65_535;

export class PostgresSink implements Sink {
  readonly surfaces: readonly string[];
  readonly retrySafeSurfaces: readonly string[];

  constructor(
    private readonly db: Db,
    private readonly specs: Record<string, SurfaceSpec>,
    readonly name = 'postgres',
  ) {
    for (const [surface, spec] of Object.entries(specs)) checkSpec(surface, spec);
    this.surfaces = Object.keys(specs);
    this.retrySafeSurfaces = this.surfaces.filter((s) => specs[s]!.retrySafe);
  }

  /**
   * Upserts `rows` into `surface` in ONE transaction that first asserts the lease (locking the
   * unit row FOR SHARE until commit), with the surface's hooks around the upserts. Throws
   * `LeaseLostError` (nothing written) when fenced out, `ValidationError` (nothing written) for an
   * unknown surface or column. Returns rows written.
   */
  async write(guard: LeaseGuard, surface: string, rows: readonly Record<string, unknown>[]): Promise<number> {
    const spec = Object.hasOwn(this.specs, surface) ? this.specs[surface] : undefined;
    if (!spec) throw new ValidationError('surface', `unknown surface "${surface}"`);
    const batch = dedupe(
      spec,
      rows.map((row) => checkRow(surface, spec, row)),
    );
    if (batch.length === 0) return 0;
    const columns = spec.columns.filter((c) => batch.some((row) => Object.hasOwn(row, c)));
    const perStatement = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
    return this.db.transaction(async (tx) => {
      await guard.assertHeldIn(tx);
      await spec.hooks?.before?.(tx, batch);
      let written = 0;
      for (let i = 0; i < batch.length; i += perStatement) {
        written += await upsert(tx, spec, columns, batch.slice(i, i + perStatement));
      }
      await spec.hooks?.after?.(tx, batch);
      return written;
    });
  }
}

/**
 * One multi-row `INSERT … ON CONFLICT DO UPDATE`: every value bound, identifiers quoted; a column
 * a row leaves out takes its DEFAULT. Locks the conflicting rows; returns how many were written.
 */
async function upsert(tx: Tx, spec: SurfaceSpec, columns: string[], rows: Record<string, unknown>[]): Promise<number> {
  const values: unknown[] = [];
  const tuples = rows.map((row) => {
    const cells = columns.map((c) => {
      if (!Object.hasOwn(row, c)) return 'DEFAULT';
      values.push(bindable(spec, c, row[c]));
      return `$${values.length}`;
    });
    return `(${cells.join(', ')})`;
  });
  const updates = columns
    .filter((c) => !spec.conflictColumns.includes(c))
    .map((c) => `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`);
  const onConflict = `ON CONFLICT (${spec.conflictColumns.map(quoteIdent).join(', ')}) ${
    updates.length > 0 ? `DO UPDATE SET ${updates.join(', ')}` : 'DO NOTHING'
  }`;
  const sql = `INSERT INTO ${quoteTable(tx.schema, spec.table)} (${columns.map(quoteIdent).join(', ')})
    VALUES ${tuples.join(', ')} ${onConflict}`;
  const res = await tx.query(sql, values);
  return res.rowCount;
}

/**
 * The value as bound: strings (alone or in an array) with unpaired surrogates replaced by U+FFFD,
 * a jsonb column's non-string value as JSON text cleaned the same way (keys included).
 */
function bindable(spec: SurfaceSpec, column: string, value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === 'string') return wellFormed(value);
  if (spec.jsonColumns?.includes(column) && value !== null) return cleanJson(value, wellFormed);
  if (Array.isArray(value)) return value.map((v: unknown) => (typeof v === 'string' ? wellFormed(v) : v));
  return value;
}

/** `schema.table` quotes each part; a plain name is quoted whole, in the install's schema. */
function quoteTable(schema: DbSchema, table: string): string {
  return table.includes('.') ? table.split('.').map(quoteIdent).join('.') : schema.table(table);
}

function checkSpec(surface: string, spec: SurfaceSpec): void {
  if (spec.columns.length === 0) throw new ValidationError(`surfaces.${surface}.columns`, 'must not be empty');
  if (spec.conflictColumns.length === 0) {
    throw new ValidationError(`surfaces.${surface}.conflictColumns`, 'must not be empty');
  }
  for (const c of spec.conflictColumns) {
    if (!spec.columns.includes(c)) {
      throw new ValidationError(`surfaces.${surface}.conflictColumns`, `"${c}" is not one of the columns`);
    }
  }
}

function checkRow(surface: string, spec: SurfaceSpec, row: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(row)) {
    if (!spec.columns.includes(key)) throw new ValidationError(`${surface}.${key}`, 'unknown column');
  }
  for (const c of spec.conflictColumns) {
    if (row[c] === undefined || row[c] === null)
      throw new ValidationError(`${surface}.${c}`, 'conflict column is required');
  }
  return row;
}

/**
 * Two rows with one conflict key in one statement is an error in PostgreSQL ("cannot affect row a
 * second time"); the last one wins, as it would across two writes.
 */
function dedupe(spec: SurfaceSpec, rows: Record<string, unknown>[]): Record<string, unknown>[] {
  const byKey = new Map<string, Record<string, unknown>>();
  for (const row of rows) {
    const key = JSON.stringify(spec.conflictColumns.map((c) => keyPart(row[c])));
    byKey.delete(key);
    byKey.set(key, row);
  }
  return [...byKey.values()];
}

/** A conflict column's value as it will be stored (see `bindable`). */
function keyPart(value: unknown): unknown {
  if (typeof value === 'string') return wellFormed(value);
  return value instanceof Date ? value.toISOString() : value;
}
