import pg from 'pg';
import { forgetIfStalePlan, queryConfig } from './prepared.js';
import { isDatabaseUnavailable, isRetryableTxError, MAX_TX_ATTEMPTS, retryPauseMs } from './retry.js';
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
  /**
   * Named (prepared) statements on the pool's connections; off, every statement goes unnamed (a
   * transaction pooler hands each transaction a different server connection). @default true
   */
  preparedStatements?: boolean;
  /**
   * Where the LISTEN connection goes (it must be a session of its own: the server, or a session
   * pooler); null for no LISTEN at all, the loops then wake by polling. @default connectionString
   */
  listenConnectionString?: string | null;
  /** Called once, at the first subscription, when there is no LISTEN connection (null above). */
  onNoListen?: () => void;
  /** TLS of the pool's connections (src/db/tls.ts resolves it). @default node-postgres's reading of the URL */
  ssl?: pg.ClientConfig['ssl'];
  /** TLS of the LISTEN connection. @default `ssl` */
  listenSsl?: pg.ClientConfig['ssl'];
}

/** The dedicated LISTEN client, the channels it LISTENs on, and the end of its queue of LISTENs. */
interface ListenConnection {
  client: pg.Client;
  listened: Set<string>;
  tail: Promise<void>;
}

/**
 * node-postgres adapter: a Pool for statements and transactions, one dedicated client for LISTEN
 * (on its own URL when the pool's is a transaction pooler, or none at all; see PgDbOptions).
 */
export class PgDb implements Db {
  readonly kind = 'pg' as const;
  readonly pool: pg.Pool;
  readonly schema: DbSchema;
  private listener: { client: pg.Client; ready: Promise<ListenConnection> } | null = null;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private closed = false;
  private readonly prepared: boolean;
  private warnedNoListen = false;

  constructor(private readonly options: PgDbOptions) {
    this.schema = options.schema ?? defaultSchema;
    this.prepared = options.preparedStatements ?? true;
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.max ?? 10,
      application_name: options.applicationName ?? 'syncrelay',
      ssl: options.ssl,
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
        const res = await this.pool.query(queryConfig(text, values, this.prepared));
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
          const res = await client.query(queryConfig(text, values, this.prepared));
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

  /**
   * Subscribes `onNotify` to `channel`. While PostgreSQL is unreachable the subscription still
   * stands: the LISTEN connection's next open LISTENs on every channel subscribed so far, and
   * polling covers the gap. Calls made while that connection is being opened share it.
   */
  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(onNotify);
    const unlisten = async () => {
      set.delete(onNotify);
    };
    if (this.listenUrl === null) {
      this.noListen();
      return unlisten; // nothing arrives: the caller's polling is all there is
    }
    let conn: ListenConnection;
    try {
      conn = await this.ensureListener();
    } catch {
      return unlisten; // not open now: its reopening LISTENs on this channel too
    }
    try {
      await this.listenOn(conn, channel);
    } catch (err) {
      // The connection died under the LISTEN: its reopening LISTENs on this channel too.
      if (!isDatabaseUnavailable(err)) throw err;
    }
    return unlisten;
  }

  /** The LISTEN connection's URL, or null when there is none (see PgDbOptions). */
  private get listenUrl(): string | null {
    const url = this.options.listenConnectionString;
    return url === undefined ? this.options.connectionString : url;
  }

  private noListen(): void {
    if (this.warnedNoListen) return;
    this.warnedNoListen = true;
    this.options.onNoListen?.();
  }

  /** The LISTEN connection: the one open or being opened, or a new one. */
  private ensureListener(): Promise<ListenConnection> {
    if (this.listener) return this.listener.ready;
    const client = new pg.Client({
      connectionString: this.listenUrl ?? this.options.connectionString,
      application_name: `${this.options.applicationName ?? 'syncrelay'}-listen`,
      ssl: this.options.listenSsl ?? this.options.ssl,
    });
    client.on('notification', (msg) => {
      for (const h of this.handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
    });
    client.on('error', () => this.dropListener(client));
    client.on('end', () => this.dropListener(client));
    const conn: ListenConnection = { client, listened: new Set(), tail: Promise.resolve() };
    // It opens once recorded, so a failure always finds it there to drop.
    const ready = Promise.resolve().then(() => this.openListener(conn));
    ready.catch(() => undefined); // every caller handles a failure; this marks it handled when none waits
    this.listener = { client, ready };
    return ready;
  }

  /** Connects and LISTENs on every channel subscribed so far; a failure drops the connection at once. */
  private async openListener(conn: ListenConnection): Promise<ListenConnection> {
    try {
      await conn.client.connect();
      for (const channel of this.handlers.keys()) await this.listenOn(conn, channel);
      return conn;
    } catch (err) {
      // Dropped before anyone else is handed it: the next subscription or the reconnect opens another.
      this.dropListener(conn.client);
      void conn.client.end().catch(() => undefined);
      throw err;
    }
  }

  /** LISTENs on `channel` unless the connection already does; one LISTEN at a time on it. */
  private listenOn(conn: ListenConnection, channel: string): Promise<void> {
    const done = conn.tail.then(async () => {
      if (conn.listened.has(channel)) return;
      await conn.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      conn.listened.add(channel);
    });
    conn.tail = done.catch(() => undefined);
    return done;
  }

  /** The LISTEN connection died or could not open: reopen after a short pause (polling covers the gap). */
  private dropListener(client: pg.Client): void {
    if (this.listener?.client !== client) return;
    this.listener = null;
    if (this.closed) return;
    const timer = setTimeout(() => void this.relisten(), 500);
    timer.unref();
  }

  private async relisten(): Promise<void> {
    if (this.closed || this.listener) return;
    // A failure drops the connection, which schedules the next attempt.
    await this.ensureListener().catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const l = this.listener;
    this.listener = null;
    await Promise.allSettled([l?.client.end(), this.pool.end()]);
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
