/**
 * Benchmark databases: each scenario creates its own database on the server, migrates it, and
 * drops it afterwards. Names start with `syncrelay_bench_<ms>_` so a crashed run's leftovers can
 * be recognised and dropped by the next run.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../../src/db/migrator.js';
import { PgDb } from '../../src/db/pg.js';
import { createSyntheticProvider } from '../../src/providers/synthetic.js';
import { benchRegistry } from './providers.js';

/** The server (a URL without a database); override with SYNCRELAY_BENCH_PG. */
export const PG_BASE = process.env.SYNCRELAY_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
/** The Redis server; override with SYNCRELAY_BENCH_REDIS. */
export const REDIS_URL = process.env.SYNCRELAY_BENCH_REDIS ?? 'redis://127.0.0.1:6379';

const STALE_MS = 3 * 3600_000;

export function pgUrl(database: string): string {
  return `${PG_BASE}/${database}`;
}

/** Runs statements on the server's maintenance database. */
export async function adminQuery(...statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl('postgres') });
  await client.connect();
  try {
    for (const sql of statements) await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface BenchDatabase {
  name: string;
  url: string;
  /** A pool on the database (the bench process's own). */
  db: PgDb;
  drop(): Promise<void>;
}

/**
 * CREATE DATABASE + migrate() with the built-in synthetic provider's tables (what a default install
 * has) and the bench providers' own; `drop()` closes the pool and removes the database.
 */
export async function createBenchDatabase(tag: string, poolSize = 16): Promise<BenchDatabase> {
  const name = `syncrelay_bench_${Date.now()}_${tag}_${randomBytes(3).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = pgUrl(name);
  const db = new PgDb({ connectionString: url, max: poolSize, applicationName: 'syncrelay-bench' });
  try {
    await migrate(db, { providers: [createSyntheticProvider(), ...benchRegistry().list()] });
  } catch (err) {
    await db.close();
    await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    throw err;
  }
  let dropped = false;
  return {
    name,
    url,
    db,
    async drop() {
      if (dropped) return;
      dropped = true;
      await db.close();
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** Drops bench databases that runs older than three hours left behind. */
export async function dropStaleBenchDatabases(): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl('postgres') });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname ~ '^syncrelay_bench_[0-9]+_'",
    );
    for (const { datname } of rows) {
      const ts = Number(datname.split('_')[2]);
      if (Date.now() - ts > STALE_MS) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}

/** A queue prefix of its own for one measurement. */
export function benchPrefix(tag: string): string {
  return `srb-${tag}-${randomBytes(4).toString('hex')}`;
}
