/**
 * A `Tx` over a connection of the caller's own — a node-postgres client inside the caller's
 * `BEGIN … COMMIT` — so syncrelay's statements (planning a run, arming an outbox row) join that
 * transaction and commit or roll back with the caller's own change. The connection needs no
 * search_path: every statement names the schema.
 */
import { defaultSchema, type DbSchema } from './schema.js';
import type { QueryResult, Tx } from './types.js';

/** What syncrelay needs of the caller's connection (a `pg` Client or PoolClient has it). */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

export function callerTx(client: Queryable, schema: DbSchema = defaultSchema): Tx {
  return {
    schema,
    async query<R>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>> {
      const res = await client.query(text, values ? [...values] : undefined);
      return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
    },
    async exec(script: string): Promise<void> {
      await client.query(script);
    },
  };
}
