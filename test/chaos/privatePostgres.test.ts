/**
 * The private PostgreSQL of `syncrelay chaos --pg-bin`: initdb and start on a free port (as the
 * postgres system user when root), an immediate-mode crash that the next start replays from the WAL
 * with every commit kept, a clean stop, and nothing left behind. The engine's PgDb lives through
 * both: its pool answers again and its LISTEN connection comes back by itself.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrivatePostgres, checkPgBin } from '../../src/chaos/postgres.js';
import { PgDb } from '../../src/db/pg.js';
import { ValidationError } from '../../src/errors.js';

const PG_BIN = process.env.SYNCRELAY_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const haveBinaries = existsSync(`${PG_BIN}/initdb`);

async function until(what: string, ok: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('checkPgBin', () => {
  it('names --pg-bin and what is missing', async () => {
    const err = await checkPgBin('/nonexistent/bin').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/--pg-bin.*\/nonexistent\/bin has no executable initdb, postgres, pg_ctl/);
  });
});

describe.skipIf(!haveBinaries)(`a private PostgreSQL from ${PG_BIN}`, () => {
  let server: PrivatePostgres;
  let db: PgDb;
  const heard: string[] = [];

  beforeAll(async () => {
    server = await PrivatePostgres.start(PG_BIN);
    db = new PgDb({ connectionString: server.url, max: 3, applicationName: 'syncrelay-test' });
    await db.exec('CREATE TABLE committed (n int PRIMARY KEY)');
    await db.listen('chaos_test', (p) => heard.push(p));
  }, 120_000);

  afterAll(async () => {
    await db?.close();
    await server?.stop();
  });

  /** NOTIFY until the listener hears `payload` (its connection may still be coming back). */
  const heardAgain = (payload: string) =>
    until(`NOTIFY ${payload} heard`, async () => {
      await db.query('SELECT pg_notify($1, $2)', ['chaos_test', payload]).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 50));
      return heard.includes(payload);
    });

  it('runs on 127.0.0.1 owned by the postgres user when root, and LISTEN works', async () => {
    expect(server.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    const { rows } = await db.query<{ user: string }>('SELECT current_user AS user');
    expect(rows[0]!.user).toBe('postgres');
    if (process.getuid?.() === 0) {
      const { rows: dir } = await db.query<{ d: string }>('SELECT current_setting($1) AS d', ['data_directory']);
      expect((await stat(dir[0]!.d)).uid).not.toBe(0);
    }
    await heardAgain('before');
  });

  it('a crash (immediate mode) is replayed from the WAL on start: every commit is kept', async () => {
    await db.query('INSERT INTO committed SELECT generate_series(1, 500)');
    const info = await server.crash(200);
    expect(info.recovered).toBe(true);
    expect(info.redo).toMatch(/^redo (done at|is not required)/);
    await until('the pool answers again', () =>
      db.query('SELECT 1').then(
        () => true,
        () => false,
      ),
    );
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM committed');
    expect(rows[0]!.n).toBe(500);
    await heardAgain('after-crash');
  });

  it('a clean stop needs no recovery; the pool and LISTEN come back after it', async () => {
    await db.query('INSERT INTO committed VALUES (501)');
    const info = await server.stopFor(300);
    expect(info).toEqual({ recovered: false });
    await until('the pool answers again', () =>
      db.query('SELECT 1').then(
        () => true,
        () => false,
      ),
    );
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM committed');
    expect(rows[0]!.n).toBe(501);
    await heardAgain('after-stop');
  });

  it('a subscription made while PostgreSQL is down stands, and is heard once it is back', async () => {
    const late = new PgDb({ connectionString: server.url, max: 1, applicationName: 'syncrelay-test-late' });
    const lateHeard: string[] = [];
    try {
      const outage = server.stopFor(1500);
      await until('the server refuses', () =>
        late.query('SELECT 1').then(
          () => false,
          () => true,
        ),
      );
      // A reconciler or scheduler starting now subscribes now: that must not fail its start.
      await late.listen('chaos_late', (p) => lateHeard.push(p));
      await outage;
      await until('the late subscription hears', async () => {
        await late.query('SELECT pg_notify($1, $2)', ['chaos_late', 'back']).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 50));
        return lateHeard.includes('back');
      });
    } finally {
      await late.close();
    }
  });

  it('stop() ends the server and removes its directory', async () => {
    const { rows } = await db.query<{ d: string }>('SELECT current_setting($1) AS d', ['data_directory']);
    await db.close();
    await server.stop();
    expect(existsSync(rows[0]!.d)).toBe(false);
    expect(server.pid).toBeUndefined();
  });
});
