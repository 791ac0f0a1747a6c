/**
 * One conformance suite for the `Db` interface, run against every adapter (pg.test.ts,
 * pglite.test.ts). Whatever store code relies on must hold in both.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, schemaVersion } from '../../src/db/migrator.js';
import type { Db, Tx } from '../../src/db/types.js';

export interface DbFixture {
  db: Db;
  /** More than one connection: a statement may run beside an open transaction. */
  concurrent: boolean;
  close(): Promise<void>;
}

/** Collects NOTIFY payloads; `next` resolves when a payload arrives (or already has). */
export class Inbox {
  readonly payloads: string[] = [];
  private waiters: Array<{ payload: string; resolve: () => void }> = [];

  readonly push = (payload: string): void => {
    this.payloads.push(payload);
    this.waiters = this.waiters.filter((w) => (w.payload === payload ? (w.resolve(), false) : true));
  };

  /** Waits for `payload`; fails after `ms` so a lost notification is a clear failure, not a hang. */
  next(payload: string, ms = 5_000): Promise<void> {
    if (this.payloads.includes(payload)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no NOTIFY ${JSON.stringify(payload)} within ${ms} ms`)), ms);
      this.waiters.push({
        payload,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

export async function notify(q: Pick<Tx, 'query'>, channel: string, payload: string): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [channel, payload]);
}

class Boom extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function describeDbConformance(adapter: string, open: () => Promise<DbFixture>): void {
  describe(`Db conformance: ${adapter}`, () => {
    let f: DbFixture;
    let db: Db;
    const table = uniqueName('conf_items');

    beforeAll(async () => {
      f = await open();
      db = f.db;
      await db.exec(`CREATE TABLE ${table} (id int4 PRIMARY KEY, label text NOT NULL, at timestamptz)`);
    });
    afterAll(async () => {
      await f?.close();
    });

    async function labels(): Promise<string[]> {
      const { rows } = await db.query<{ label: string }>(`SELECT label FROM ${table} ORDER BY id`);
      return rows.map((r) => r.label);
    }

    async function clear(): Promise<void> {
      await db.query(`DELETE FROM ${table}`);
    }

    it('is migrated to the latest schema version', async () => {
      expect(await schemaVersion(db)).toBe((await loadMigrations()).at(-1)!.version);
    });

    describe('query', () => {
      it('binds parameters, never splicing them into the SQL text', async () => {
        const hostile = "x'); DROP TABLE " + table + '; --';
        const { rows } = await db.query<{ sum: number; t: string; n: string | null; arr: string[] }>(
          'SELECT $1::int4 + $2::int4 AS sum, $3::text AS t, $4::text AS n, $5::text[] AS arr',
          [2, 3, hostile, null, ['a', 'b,c']],
        );
        expect(rows).toEqual([{ sum: 5, t: hostile, n: null, arr: ['a', 'b,c'] }]);
        expect(await labels()).toEqual([]);
      });

      it('reports rowCount for writes', async () => {
        await clear();
        const ins = await db.query(`INSERT INTO ${table} (id, label) VALUES (1, 'a'), (2, 'b'), (3, 'c')`);
        expect(ins.rowCount).toBe(3);
        const upd = await db.query(`UPDATE ${table} SET label = label || '!' WHERE id >= $1`, [2]);
        expect(upd.rowCount).toBe(2);
        const none = await db.query(`UPDATE ${table} SET label = 'z' WHERE id = $1 RETURNING id`, [99]);
        expect(none).toEqual({ rows: [], rowCount: 0 });
        const ret = await db.query<{ id: number }>(`DELETE FROM ${table} WHERE id = $1 RETURNING id`, [1]);
        expect(ret).toEqual({ rows: [{ id: 1 }], rowCount: 1 });
      });

      it('returns int4 as number, timestamptz as Date, boolean and jsonb as values', async () => {
        const at = new Date('2024-05-06T07:08:09.123Z');
        const { rows } = await db.query<Record<string, unknown>>(
          `SELECT 42::int4 AS i, count(*)::int AS c, now() AS ts, $1::timestamptz AS bound,
                  '2024-01-02T03:04:05.678Z'::timestamptz AS lit, true AS b, $2::jsonb AS j`,
          [at, JSON.stringify({ a: 1, nested: { b: [1, 2] } })],
        );
        const r = rows[0]!;
        expect(r.i).toBe(42);
        expect(r.c).toBe(1);
        expect(r.ts).toBeInstanceOf(Date);
        expect(r.bound).toBeInstanceOf(Date);
        expect((r.bound as Date).getTime()).toBe(at.getTime());
        expect((r.lit as Date).toISOString()).toBe('2024-01-02T03:04:05.678Z');
        expect(r.b).toBe(true);
        expect(r.j).toEqual({ a: 1, nested: { b: [1, 2] } });
      });

      it('round-trips int4 and timestamptz columns', async () => {
        await clear();
        const at = new Date('2030-12-31T23:59:59.999Z');
        await db.query(`INSERT INTO ${table} (id, label, at) VALUES ($1, $2, $3)`, [7, 'seven', at]);
        const { rows } = await db.query<{ id: number; at: Date }>(`SELECT id, at FROM ${table}`);
        expect(typeof rows[0]!.id).toBe('number');
        expect(rows[0]!.at).toBeInstanceOf(Date);
        expect(rows[0]!.at.getTime()).toBe(at.getTime());
      });

      it('generates v4 UUIDs with gen_random_uuid()', async () => {
        const { rows } = await db.query<{ a: string; b: string }>(
          'SELECT gen_random_uuid() AS a, gen_random_uuid() AS b',
        );
        expect(rows[0]!.a).toMatch(UUID);
        expect(rows[0]!.b).toMatch(UUID);
        expect(rows[0]!.a).not.toBe(rows[0]!.b);
      });

      it('surfaces SQL errors with their SQLSTATE code', async () => {
        await clear();
        await db.query(`INSERT INTO ${table} (id, label) VALUES (1, 'a')`);
        await expect(db.query(`INSERT INTO ${table} (id, label) VALUES (1, 'dup')`)).rejects.toMatchObject({
          code: '23505',
        });
        expect(await labels()).toEqual(['a']);
      });
    });

    describe('exec', () => {
      it('runs a multi-statement script', async () => {
        const t2 = uniqueName('conf_script');
        await db.exec(`
          CREATE TABLE ${t2} (id int4 PRIMARY KEY, v text);
          INSERT INTO ${t2} VALUES (1, 'one');
          INSERT INTO ${t2} VALUES (2, 'two; not a statement break');
          UPDATE ${t2} SET v = upper(v) WHERE id = 1;
        `);
        const { rows } = await db.query<{ id: number; v: string }>(`SELECT id, v FROM ${t2} ORDER BY id`);
        expect(rows).toEqual([
          { id: 1, v: 'ONE' },
          { id: 2, v: 'two; not a statement break' },
        ]);
      });

      it('runs a script inside a transaction and rolls it back with it', async () => {
        await clear();
        await expect(
          db.transaction(async (tx) => {
            await tx.exec(
              `INSERT INTO ${table} (id, label) VALUES (1, 'a'); INSERT INTO ${table} (id, label) VALUES (2, 'b');`,
            );
            expect((await tx.query(`SELECT count(*)::int AS n FROM ${table}`)).rows).toEqual([{ n: 2 }]);
            throw new Boom();
          }),
        ).rejects.toBeInstanceOf(Boom);
        expect(await labels()).toEqual([]);
      });
    });

    describe('transaction', () => {
      it('commits on return and resolves to the callback result', async () => {
        await clear();
        const out = await db.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${table} (id, label) VALUES ($1, $2)`, [1, 'a']);
          await tx.query(`INSERT INTO ${table} (id, label) VALUES ($1, $2)`, [2, 'b']);
          return (await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
        });
        expect(out).toBe(2);
        expect(await labels()).toEqual(['a', 'b']);
      });

      it('rolls back everything on a thrown error and rethrows that same error', async () => {
        await clear();
        const boom = new Boom('stop');
        const p = db.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${table} (id, label) VALUES (1, 'a')`);
          await tx.query(`UPDATE ${table} SET label = 'changed'`);
          await tx.query(`INSERT INTO ${table} (id, label) VALUES (2, 'b')`);
          throw boom;
        });
        await expect(p).rejects.toBe(boom);
        expect(await labels()).toEqual([]);
      });

      it('rolls back earlier writes when a statement fails mid-transaction', async () => {
        await clear();
        await db.query(`INSERT INTO ${table} (id, label) VALUES (1, 'kept')`);
        await expect(
          db.transaction(async (tx) => {
            await tx.query(`UPDATE ${table} SET label = 'half-written' WHERE id = 1`);
            await tx.query(`INSERT INTO ${table} (id, label) VALUES (2, 'b')`);
            await tx.query(`INSERT INTO ${table} (id, label) VALUES (2, 'duplicate')`);
          }),
        ).rejects.toMatchObject({ code: '23505' });
        expect(await labels()).toEqual(['kept']);
      });

      it('leaves the adapter usable after rollbacks', async () => {
        await clear();
        for (let i = 0; i < 12; i++) {
          await expect(
            db.transaction(async (tx) => {
              await tx.query('SELECT 1/0');
            }),
          ).rejects.toMatchObject({ code: '22012' });
        }
        await db.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${table} (id, label) VALUES (1, 'after')`);
        });
        expect(await labels()).toEqual(['after']);
      });

      it('sees its own uncommitted writes; others do not until commit', async () => {
        await clear();
        await db.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${table} (id, label) VALUES (1, 'mine')`);
          expect((await tx.query(`SELECT label FROM ${table}`)).rows).toEqual([{ label: 'mine' }]);
          if (f.concurrent) expect(await labels()).toEqual([]);
        });
        expect(await labels()).toEqual(['mine']);
      });
    });

    describe('listen / NOTIFY', () => {
      it('delivers a NOTIFY sent inside a transaction only when it commits', async () => {
        const channel = uniqueName('conf_commit');
        const inbox = new Inbox();
        const stop = await db.listen(channel, inbox.push);
        try {
          await db.transaction(async (tx) => {
            await notify(tx, channel, 'in-tx');
            if (f.concurrent) {
              // A notification committed on another connection arrives while ours is still held back.
              await notify(db, channel, 'beside');
              await inbox.next('beside');
            } else {
              await tx.query('SELECT 1');
            }
            expect(inbox.payloads).not.toContain('in-tx');
          });
          await inbox.next('in-tx');
          expect(inbox.payloads.filter((p) => p === 'in-tx')).toHaveLength(1);
        } finally {
          await stop();
        }
      });

      it('never delivers a NOTIFY whose transaction rolled back', async () => {
        const channel = uniqueName('conf_rollback');
        const inbox = new Inbox();
        const stop = await db.listen(channel, inbox.push);
        try {
          await expect(
            db.transaction(async (tx) => {
              await notify(tx, channel, 'rolled-back');
              throw new Boom();
            }),
          ).rejects.toBeInstanceOf(Boom);
          // Notifications arrive in commit order: once a later one is in, the first is never coming.
          await db.transaction(async (tx) => notify(tx, channel, 'marker'));
          await inbox.next('marker');
          expect(inbox.payloads).toEqual(['marker']);
        } finally {
          await stop();
        }
      });

      it('delivers payloads intact, in commit order, to every subscriber until it unsubscribes', async () => {
        const channel = uniqueName('conf_fanout');
        const a = new Inbox();
        const b = new Inbox();
        const stopA = await db.listen(channel, a.push);
        const stopB = await db.listen(channel, b.push);
        try {
          const json = JSON.stringify({ runId: 'r-1', note: 'quote \' and "double" and ü' });
          await notify(db, channel, json);
          await db.transaction(async (tx) => notify(tx, channel, 'second'));
          await Promise.all([a.next('second'), b.next('second')]);
          expect(a.payloads).toEqual([json, 'second']);
          expect(b.payloads).toEqual([json, 'second']);

          await stopA();
          await notify(db, channel, 'only-b');
          await b.next('only-b');
          expect(a.payloads).toEqual([json, 'second']);
        } finally {
          await stopA();
          await stopB();
        }
      });

      it('does not deliver another channel’s notifications', async () => {
        const mine = uniqueName('conf_mine');
        const other = uniqueName('conf_other');
        const inbox = new Inbox();
        const stop = await db.listen(mine, inbox.push);
        try {
          await notify(db, other, 'not-for-me');
          await notify(db, mine, 'for-me');
          await inbox.next('for-me');
          expect(inbox.payloads).toEqual(['for-me']);
        } finally {
          await stop();
        }
      });
    });
  });
}
