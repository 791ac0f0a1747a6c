import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { loadSettings } from '../../src/config.js';
import { openDb } from '../../src/db/open.js';
import { PgDb } from '../../src/db/pg.js';

/** The server every test talks to; override with SYNCRELAY_TEST_PG (a URL without a database). */
export const PG_BASE = process.env.SYNCRELAY_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432';
export const REDIS_URL = process.env.SYNCRELAY_TEST_REDIS ?? 'redis://127.0.0.1:6379';
/**
 * A transaction-pooling PgBouncer in front of PG_BASE (SYNCRELAY_TEST_PG_POOLED, a URL without a
 * database; the `pooler` project sets it): when set, each test database's engine connections go
 * through it (SYNCRELAY_DB_POOLER=transaction) and LISTEN goes to PG_BASE (DATABASE_DIRECT_URL).
 * Creating, cloning and dropping databases always talks to PG_BASE.
 */
export const PG_POOLED = process.env.SYNCRELAY_TEST_PG_POOLED || undefined;

export function pgUrl(database: string): string {
  return `${PG_BASE}/${database}`;
}

export async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl('postgres') });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  name: string;
  /** The database on PG_BASE itself (the direct URL). */
  url: string;
  /** The engine's connections: through PG_POOLED when set (see there). */
  db: PgDb;
  drop(): Promise<void>;
}

/** A fresh database cloned from the migrated template; `drop()` removes it. */
export async function createTestDatabase(opts: { poolSize?: number } = {}): Promise<TestDatabase> {
  const name = `syncrelay_t_${Date.now()}_${randomBytes(4).toString('hex')}`;
  await withRetry(() => adminQuery(`CREATE DATABASE ${name} TEMPLATE ${inject('templateDb')}`));
  const url = pgUrl(name);
  const db = await openTestDb(name, opts.poolSize ?? 10);
  return {
    name,
    url,
    db,
    async drop() {
      await db.close();
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** The test database's engine connections, opened from settings as a DATABASE_URL would be. */
async function openTestDb(name: string, poolSize: number): Promise<PgDb> {
  const direct = pgUrl(name);
  const settings = PG_POOLED
    ? loadSettings({
        DATABASE_URL: `${PG_POOLED}/${name}`,
        DATABASE_DIRECT_URL: direct,
        SYNCRELAY_DB_POOLER: 'transaction',
      })
    : loadSettings({ DATABASE_URL: direct });
  const db = await openDb(settings, { poolSize, applicationName: 'syncrelay-test' });
  if (!(db instanceof PgDb)) throw new Error('a test database opens as PostgreSQL');
  return db;
}

/** A queue prefix no other test file shares. */
export function uniquePrefix(tag = 't'): string {
  return `srt-${tag}-${randomBytes(4).toString('hex')}`;
}

/** CREATE DATABASE … TEMPLATE fails with 55006 while another clone is being made: try again. */
async function withRetry(fn: () => Promise<void>): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if ((err as { code?: string }).code !== '55006' || i >= 20) throw err;
      await new Promise((r) => setTimeout(r, 100 + i * 50));
    }
  }
}
