import pg from 'pg';
import { forgetIfStalePlan, statementName } from './prepared.js';
import { isRetryableTxError, MAX_TX_ATTEMPTS, retryPauseMs } from './retry.js';
import { defaultSchema, type DbSchema } from './schema.js';
import type { Db, QueryResult, Tx } from './types.js';

// timestamptz and int8 come back as Date / string by default; counts are cast to int in SQL.

export interface PgDbOptions {
  connectionString: string;
  /** Pool size. @default 10 */
  max?: number;
  applicationName?: string;
  /** The schema syncrelay's tables are in. @default syncrelay */
  schema?: DbSchema;
}

/** node-postgres adapter: a Pool for statements and transactions, one dedicated client for LISTEN. */
export class PgDb implements Db {
  readonly kind = 'pg' as const;
  readonly pool: pg.Pool;
  readonly schema: DbSchema;
  private listener: pg.Client | null = null;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private closed = false;

  constructor(private readonly options: PgDbOptions) {
    this.schema = options.schema ?? defaultSchema;
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.max ?? 10,
      application_name: options.applicationName ?? 'syncrelay',
      // Queries issued back to back go out without waiting for each other (BEGIN and the first
      // statement of a transaction share one round trip); a caller still awaits its own result.
      pipeline: true,
    });
    // An idle client that dies (pg_terminate_backend, restart) must not crash the process.
    this.pool.on('error', () => undefined);
  }

  /** One statement in its own transaction; rolled back by a deadlock, it runs again. */
  async query<R>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>> {
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.pool.query(config(text, values));
        return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
      } catch (err) {
        if (forgetIfStalePlan(err, text) && attempt < MAX_TX_ATTEMPTS) continue;
        if (!isRetryableTxError(err) || attempt >= MAX_TX_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, retryPauseMs(attempt)));
      }
    }
  }

  async exec(script: string): Promise<void> {
    await this.pool.query(script);
  }

  /**
   * Runs `fn` in a transaction; a deadlock or serialization failure (PostgreSQL rolled it back)
   * runs it again, up to MAX_TX_ATTEMPTS times — so `fn` must only have database effects.
   */
  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.transactionOnce(fn);
      } catch (err) {
        if ((err as { staleText?: string }).staleText !== undefined && attempt < MAX_TX_ATTEMPTS) continue;
        if (!isRetryableTxError(err) || attempt >= MAX_TX_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, retryPauseMs(attempt)));
      }
    }
  }

  private async transactionOnce<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    // While a client is checked out the pool does not listen for its errors: a connection that
    // dies between two statements (pg_terminate_backend, a reset) would otherwise be an unhandled
    // 'error' event that ends the process. The next statement fails instead; the client is discarded.
    let lost: Error | undefined;
    const onLost = (err: Error) => (lost = err);
    const client = await this.checkOut(onLost);
    const tx: Tx = {
      schema: this.schema,
      query: async <R>(text: string, values?: readonly unknown[]) => {
        try {
          const res = await client.query(config(text, values));
          return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
        } catch (err) {
          // The transaction is aborted either way; marked, it runs again with the text unnamed.
          if (forgetIfStalePlan(err, text) && err instanceof Error) Object.assign(err, { staleText: text });
          throw err;
        }
      },
      exec: async (script: string) => {
        await client.query(script);
      },
    };
    let broken: unknown = undefined;
    try {
      // Pipelined: the transaction's first statement is written right behind BEGIN, in the same
      // write when `fn` sends it before its first await (one syscall, one wake-up of the backend).
      const stream = socketOf(client);
      stream?.cork();
      let begun: Promise<unknown>;
      let pending: Promise<T>;
      try {
        begun = client.query('BEGIN');
        begun.catch(() => undefined);
        pending = fn(tx);
      } finally {
        stream?.uncork();
      }
      const result = await pending;
      await begun;
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackErr) {
        broken = rollbackErr;
      }
      throw err;
    } finally {
      client.off('error', onLost);
      client.release(broken instanceof Error ? broken : lost);
    }
  }

  /**
   * A pooled client with `onError` listening from the moment the pool hands it over: in the
   * callback, not after an await — the message that tells a new connection is ready and one that
   * says it was terminated can arrive in the same read, and the driver emits the second before a
   * promise continuation could listen.
   */
  private checkOut(onError: (err: Error) => void): Promise<pg.PoolClient> {
    return new Promise((resolve, reject) => {
      this.pool.connect((err, client) => {
        if (err || !client) return reject(err ?? new Error('the pool handed over no client'));
        client.on('error', onError);
        resolve(client);
      });
    });
  }

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    const fresh = !set;
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(onNotify);
    const unlisten = async () => {
      set.delete(onNotify);
    };
    let client: pg.Client;
    try {
      client = await this.ensureListener();
    } catch {
      // PostgreSQL is unreachable right now (an outage, a restart): the subscription stands, and the
      // listener's reconnect LISTENs on it once the server is back; polling covers the gap.
      return unlisten;
    }
    if (fresh) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    return unlisten;
  }

  private async ensureListener(): Promise<pg.Client> {
    if (this.listener) return this.listener;
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: `${this.options.applicationName ?? 'syncrelay'}-listen`,
    });
    client.on('notification', (msg) => {
      for (const h of this.handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
    });
    client.on('error', () => this.dropListener(client));
    client.on('end', () => this.dropListener(client));
    this.listener = client;
    try {
      await client.connect();
      // A new connection (first use, or a reconnect) listens on every channel subscribed so far,
      // including any subscribed while the previous connection was down.
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      // Its 'end' drops it and schedules the next attempt.
      void client.end().catch(() => undefined);
      throw err;
    }
    return client;
  }

  /** The listener died: reconnect and re-LISTEN after a short pause (polling covers the gap). */
  private dropListener(client: pg.Client): void {
    if (this.listener !== client) return;
    this.listener = null;
    if (this.closed) return;
    const timer = setTimeout(() => void this.relisten(), 500);
    timer.unref();
  }

  private async relisten(): Promise<void> {
    if (this.closed || this.listener) return;
    try {
      await this.ensureListener();
    } catch {
      const dead = this.listener;
      if (dead) this.dropListener(dead);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const l = this.listener;
    this.listener = null;
    await Promise.allSettled([l?.end(), this.pool.end()]);
  }
}

/** The client's socket, to batch several messages into one write (node-postgres keeps it on `connection.stream`). */
function socketOf(client: pg.PoolClient): { cork(): void; uncork(): void } | undefined {
  const stream = (client as unknown as { connection?: { stream?: { cork?: unknown; uncork?: unknown } } }).connection
    ?.stream;
  return stream && typeof stream.cork === 'function' && typeof stream.uncork === 'function'
    ? (stream as { cork(): void; uncork(): void })
    : undefined;
}

/** A named (prepared) statement where the text allows it; see ./prepared.ts. */
function config(text: string, values: readonly unknown[] | undefined): pg.QueryConfig {
  const name = statementName(text);
  return name
    ? { name, text, values: values as unknown[] | undefined }
    : { text, values: values as unknown[] | undefined };
}
