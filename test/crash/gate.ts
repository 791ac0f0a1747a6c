/**
 * A Db that lets a crash test interleave two transactions statement by statement: it can park a
 * transaction right before or right after its first statement matching a pattern (the transaction
 * keeps its locks while parked), and it records every deadlock error (40P01) a statement raised —
 * the pg adapter retries a deadlocked transaction, so without this a deadlock only shows as a
 * one-second stall.
 */
import pg from 'pg';
import type { Db, Tx } from '../../src/db/types.js';
import { Hold } from './harness.js';

export class GatedDb implements Db {
  readonly kind: Db['kind'];
  readonly schema: Db['schema'];
  /** Deadlock errors raised by this Db's statements (before the adapter retried them). */
  deadlocks = 0;
  private gate: { pattern: RegExp; when: 'before' | 'after'; hold: Hold } | null = null;

  constructor(private readonly inner: Db) {
    this.kind = inner.kind;
    this.schema = inner.schema;
  }

  /** Parks the next transaction statement matching `pattern` (before or after it runs) until released. */
  park(pattern: RegExp, when: 'before' | 'after'): Hold {
    const hold = new Hold();
    this.gate = { pattern, when, hold };
    return hold;
  }

  async query<R>(text: string, values?: readonly unknown[]) {
    try {
      return await this.inner.query<R>(text, values);
    } catch (err) {
      if ((err as { code?: string }).code === '40P01') this.deadlocks += 1;
      throw err;
    }
  }

  exec(script: string) {
    return this.inner.exec(script);
  }

  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.inner.transaction((tx) => fn(this.wrap(tx)));
  }

  listen(channel: string, onNotify: (payload: string) => void) {
    return this.inner.listen(channel, onNotify);
  }

  close() {
    return Promise.resolve();
  }

  private wrap(tx: Tx): Tx {
    return {
      schema: tx.schema,
      exec: (script) => tx.exec(script),
      query: async <R>(text: string, values?: readonly unknown[]) => {
        const gate = this.gate?.pattern.test(text) ? this.gate : null;
        if (gate) this.gate = null;
        if (gate?.when === 'before') await gate.hold.wait('gate', new AbortController().signal, false);
        try {
          const res = await tx.query<R>(text, values);
          if (gate?.when === 'after') await gate.hold.wait('gate', new AbortController().signal, false);
          return res;
        } catch (err) {
          if ((err as { code?: string }).code === '40P01') this.deadlocks += 1;
          throw err;
        }
      },
    };
  }
}

/**
 * A table as a statement names it, for a `park` pattern (regex source): `sync_runs`,
 * `syncrelay.sync_runs` or `"syncrelay"."sync_runs"` (statements name their tables schema-qualified).
 */
export function sqlTable(table: string): string {
  return `(?:(?:"\\w+"|\\w+)\\.)?"?${table}"?`;
}

/** Resolves once a backend of the test database waits for a lock, or `settled` has settled (bounded). */
export async function untilBlockedOrDone(db: Db, settled: Promise<unknown>, ms = 5000): Promise<'blocked' | 'done'> {
  let done = false;
  void settled.then(
    () => (done = true),
    () => (done = true),
  );
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (done) return 'done';
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (rows[0]!.n > 0) return 'blocked';
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`nothing blocked and nothing finished within ${ms} ms`);
}

/**
 * Row locks held from a transaction of the test's own (SELECT … FOR UPDATE), so statements that
 * need those rows wait for them — with the snapshots they took when they started. Releasing them
 * lets the waiting statements go on at once, none seeing what another committed meanwhile.
 */
export class RowLocks {
  private constructor(private readonly client: pg.Client) {}

  /** Locks the rows of `table` (a qualified name) with these ids. */
  static async take(url: string, table: string, ids: readonly string[]): Promise<RowLocks> {
    const client = new pg.Client({ connectionString: url, application_name: 'syncrelay-test-rowlocks' });
    await client.connect();
    await client.query('BEGIN');
    const { rowCount } = await client.query(`SELECT 1 FROM ${table} WHERE id = ANY ($1::uuid[]) FOR UPDATE`, [ids]);
    if (rowCount !== ids.length) throw new Error(`locked ${String(rowCount)} of ${ids.length} rows`);
    return new RowLocks(client);
  }

  /** Resolves once `n` backends of the database wait for a lock (bounded). */
  async untilWaiting(n: number, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      const { rows } = await this.client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (rows[0]!.n >= n) return;
      if (Date.now() > deadline) throw new Error(`${rows[0]!.n} of ${n} statements waited for the held rows`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async release(): Promise<void> {
    try {
      await this.client.query('COMMIT');
    } finally {
      await this.client.end();
    }
  }
}
