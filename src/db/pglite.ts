import { PGlite } from '@electric-sql/pglite';
import { defaultSchema, type DbSchema } from './schema.js';
import type { Db, QueryResult, Tx } from './types.js';

/**
 * Embedded adapter: PGlite (PostgreSQL in WebAssembly) in one process. It has one connection,
 * so transactions run one at a time; never call `db.query` from inside `db.transaction` — use
 * the `tx` it gives you.
 */
export class PgliteDb implements Db {
  readonly kind = 'pglite' as const;
  private closed = false;

  private constructor(
    readonly pglite: PGlite,
    readonly schema: DbSchema,
  ) {}

  /** Opens (creating if needed) the database in `dataDir`; `undefined` keeps it in memory. */
  static async open(dataDir?: string, schema: DbSchema = defaultSchema): Promise<PgliteDb> {
    const pglite = await PGlite.create(dataDir);
    return new PgliteDb(pglite, schema);
  }

  async query<R>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>> {
    const res = await this.pglite.query<R>(text, values as unknown[] | undefined);
    return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
  }

  async exec(script: string): Promise<void> {
    await this.pglite.exec(script);
  }

  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.pglite.transaction(async (t) =>
      fn({
        schema: this.schema,
        query: async <R>(text: string, values?: readonly unknown[]) => {
          const res = await t.query<R>(text, values as unknown[] | undefined);
          return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
        },
        exec: async (script: string) => {
          await t.exec(script);
        },
      }),
    );
  }

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    const unsub = await this.pglite.listen(channel, onNotify);
    return async () => {
      if (!this.closed) await unsub();
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pglite.close();
  }
}
