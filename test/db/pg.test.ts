import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDb } from '../../src/db/pg.js';
import type { Tx } from '../../src/db/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { describeDbConformance, Inbox, notify, uniqueName } from './db.suite.js';

describeDbConformance('PgDb (PostgreSQL)', async () => {
  const t = await createTestDatabase();
  return { db: t.db, concurrent: true, close: () => t.drop() };
});

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves once all `n` parties have arrived. */
function barrier(n: number): () => Promise<void> {
  let arrived = 0;
  const all = deferred();
  return async () => {
    if (++arrived === n) all.resolve();
    await all.promise;
  };
}

/** Re-checks a database condition until it holds; fails after `ms` instead of hanging. */
async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * After a reconnect the LISTEN is re-issued asynchronously: keep sending probes until one gets
 * through (bounded), so the test proves delivery instead of guessing a delay.
 */
async function untilDelivered(db: PgDb, channel: string, inbox: Inbox, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  const tag = uniqueName('probe');
  for (let i = 0; ; i++) {
    await notify(db, channel, `${tag}-${i}`);
    try {
      await inbox.next(`${tag}-${i}`, 200);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`listener on ${channel} never came back`, { cause: err });
    }
  }
}

describe('PgDb: PostgreSQL-only behaviour', () => {
  let t: TestDatabase;
  let db: PgDb;

  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 12 });
    db = t.db;
  });
  afterAll(async () => {
    await t.drop();
  });

  async function listenerPids(appName = 'syncrelay-test-listen'): Promise<number[]> {
    const { rows } = await db.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [appName],
    );
    return rows.map((r) => r.pid);
  }

  describe('FOR UPDATE SKIP LOCKED', () => {
    const claimed = new Set<number>();
    let table: string;

    beforeAll(async () => {
      table = uniqueName('skip_jobs');
      await db.exec(`CREATE TABLE ${table} (id int4 PRIMARY KEY, claimed_by text);
        INSERT INTO ${table} (id) SELECT g FROM generate_series(1, 20) g;`);
    });

    /** Claims up to `n` unclaimed rows, holding their locks until every claimer has claimed. */
    async function claim(tx: Tx, who: string, n: number, arrive: () => Promise<void>): Promise<number[]> {
      await tx.query("SET LOCAL lock_timeout = '5s'");
      const { rows } = await tx.query<{ id: number }>(
        `SELECT id FROM ${table} WHERE claimed_by IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [n],
      );
      const ids = rows.map((r) => r.id);
      await tx.query(`UPDATE ${table} SET claimed_by = $1 WHERE id = ANY($2::int4[])`, [who, ids]);
      await arrive();
      return ids;
    }

    it('concurrent claimers holding their locks never claim the same row', async () => {
      const claimers = 4;
      const arrive = barrier(claimers);
      const results = await Promise.all(
        Array.from({ length: claimers }, (_, i) => db.transaction((tx) => claim(tx, `c${i}`, 3, arrive))),
      );
      const all = results.flat();
      expect(all).toHaveLength(12);
      expect(new Set(all).size).toBe(12);
      for (const id of all) claimed.add(id);

      const { rows } = await db.query<{ claimed_by: string; n: number }>(
        `SELECT claimed_by, count(*)::int AS n FROM ${table} WHERE claimed_by IS NOT NULL GROUP BY 1 ORDER BY 1`,
      );
      expect(rows).toEqual(Array.from({ length: claimers }, (_, i) => ({ claimed_by: `c${i}`, n: 3 })));
    });

    it('more claimers than rows: each remaining row is claimed once, the rest get nothing', async () => {
      const claimers = 10;
      const arrive = barrier(claimers);
      const results = await Promise.all(
        Array.from({ length: claimers }, (_, i) => db.transaction((tx) => claim(tx, `d${i}`, 1, arrive))),
      );
      const all = results.flat();
      expect(all).toHaveLength(8);
      expect(new Set([...all, ...claimed]).size).toBe(20);
      expect(results.filter((r) => r.length === 0)).toHaveLength(2);
    });
  });

  describe('pg_advisory_xact_lock', () => {
    it('makes a second holder wait until the first transaction ends', async () => {
      const key = Math.floor(Math.random() * 2 ** 31);
      const log: string[] = [];
      const aLocked = deferred();
      const aRelease = deferred();
      const a = db.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [key]);
        log.push('a locked');
        aLocked.resolve();
        await aRelease.promise;
        log.push('a commits');
      });
      await aLocked.promise;
      const b = db.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [key]);
        log.push('b locked');
      });
      await until('b to wait on the advisory lock', async () => {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND objid = $1::bigint::oid AND classid = 0
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          [key],
        );
        return rows[0]!.n === 1;
      });
      const probe = await db.query<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS got', [key]);
      expect(probe.rows[0]!.got).toBe(false);
      expect(log).toEqual(['a locked']);

      aRelease.resolve();
      await Promise.all([a, b]);
      expect(log).toEqual(['a locked', 'a commits', 'b locked']);
      const after = await db.query<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS got', [key]);
      expect(after.rows[0]!.got).toBe(true);
    });

    it('serialises read-modify-write: no update is lost', async () => {
      const table = uniqueName('adv_counter');
      await db.exec(
        `CREATE TABLE ${table} (id int4 PRIMARY KEY, n int4 NOT NULL); INSERT INTO ${table} VALUES (1, 0);`,
      );
      const key = Math.floor(Math.random() * 2 ** 31);
      const writers = 10;
      const arrive = barrier(writers);
      await Promise.all(
        Array.from({ length: writers }, () =>
          db.transaction(async (tx) => {
            await arrive(); // all start together
            await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [key]);
            const { rows } = await tx.query<{ n: number }>(`SELECT n FROM ${table} WHERE id = 1`);
            await tx.query('SELECT pg_sleep(0)');
            await tx.query(`UPDATE ${table} SET n = $1 WHERE id = 1`, [rows[0]!.n + 1]);
          }),
        ),
      );
      const { rows } = await db.query<{ n: number }>(`SELECT n FROM ${table} WHERE id = 1`);
      expect(rows[0]!.n).toBe(writers);
    });
  });

  describe('listener', () => {
    it('reconnects after its backend is terminated and receives later NOTIFYs', async () => {
      const channel = uniqueName('relisten');
      const inbox = new Inbox();
      const stop = await db.listen(channel, inbox.push);
      try {
        await notify(db, channel, 'before');
        await inbox.next('before');
        const [old, ...more] = await listenerPids();
        expect(old).toBeTypeOf('number');
        expect(more).toEqual([]);

        const killed = await db.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [old]);
        expect(killed.rows[0]!.ok).toBe(true);
        await until('a new listener backend', async () => {
          const pids = await listenerPids();
          return pids.length === 1 && pids[0] !== old;
        });
        await untilDelivered(db, channel, inbox);

        await db.transaction(async (tx) => notify(tx, channel, 'after'));
        await inbox.next('after');
        expect(await listenerPids()).toHaveLength(1);
      } finally {
        await stop();
      }
    });

    it('keeps every channel when a new one is subscribed while the listener is reconnecting', async () => {
      const first = uniqueName('gap_a');
      const second = uniqueName('gap_b');
      const a = new Inbox();
      const b = new Inbox();
      const stopA = await db.listen(first, a.push);
      try {
        await untilDelivered(db, first, a);
        const [old] = await listenerPids();
        await db.query('SELECT pg_terminate_backend($1)', [old]);
        // White-box: subscribe while the adapter has dropped the dead connection and not yet reconnected.
        const adapter = db as unknown as { listener: unknown };
        await until('the adapter to drop its dead listener', async () => adapter.listener === null);

        const stopB = await db.listen(second, b.push);
        try {
          await untilDelivered(db, second, b);
          await untilDelivered(db, first, a);
        } finally {
          await stopB();
        }
      } finally {
        await stopA();
      }
    });
  });

  describe('close', () => {
    it('is safe to call twice (and concurrently) and leaves no connection behind', async () => {
      const appName = uniqueName('closer');
      const own = new PgDb({ connectionString: t.url, max: 2, applicationName: appName });
      const inbox = new Inbox();
      await own.listen('close_chan', inbox.push);
      await own.query('SELECT 1');
      await notify(db, 'close_chan', 'hello');
      await inbox.next('hello');
      expect((await listenerPids(`${appName}-listen`)).length).toBe(1);

      await own.close();
      await expect(own.close()).resolves.toBeUndefined();
      await expect(Promise.all([own.close(), own.close()])).resolves.toEqual([undefined, undefined]);
      await expect(own.query('SELECT 1')).rejects.toThrow();

      await until('every connection of the closed Db to go away', async () => {
        const { rows } = await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name IN ($1, $1 || '-listen')",
          [appName],
        );
        return rows[0]!.n === 0;
      });
    });
  });
});
