/** The one small database interface both adapters implement. */
import type { DbSchema } from './schema.js';

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** Anything that runs one statement: a pool, a connection, or an open transaction. */
export interface Tx {
  /** The schema this install's statements name their tables in (see ./schema.ts). */
  readonly schema: DbSchema;
  query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Runs a multi-statement script with no parameters (migrations only). */
  exec(script: string): Promise<void>;
}

export type Notification = { channel: string; payload: string };

export interface Db extends Tx {
  readonly kind: 'pg' | 'pglite';
  /** Runs `fn` in one transaction (READ COMMITTED); commits on return, rolls back on throw. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY on `channel`; resolves once listening. Returns an unsubscribe. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export { quoteIdent } from './schema.js';
