import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { PgDb } from '../../src/db/pg.js';

/** The server every test talks to; override with SYNCRELAY_TEST_PG (a URL without a database). */
export const PG_BASE = process.env.SYNCRELAY_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432';
export const REDIS_URL = process.env.SYNCRELAY_TEST_REDIS ?? 'redis://127.0.0.1:6379';

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
  url: string;
  db: PgDb;
  drop(): Promise<void>;
}

/** A fresh database cloned from the migrated template; `drop()` removes it. */
export async function createTestDatabase(opts: { poolSize?: number } = {}): Promise<TestDatabase> {
  const name = `syncrelay_t_${Date.now()}_${randomBytes(4).toString('hex')}`;
  await withRetry(() => adminQuery(`CREATE DATABASE ${name} TEMPLATE ${inject('templateDb')}`));
  const url = pgUrl(name);
  const db = new PgDb({ connectionString: url, max: opts.poolSize ?? 10, applicationName: 'syncrelay-test' });
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
