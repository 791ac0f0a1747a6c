import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { SchemaError } from '../errors.js';
import type { Db, Tx } from './types.js';

/** migrations/ sits two levels above this file both in src/db and in dist/db. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => ({
      version: Number(file.slice(0, 4)),
      name: file.replace(/\.sql$/, ''),
      sql: await readFile(new URL(file, `file://${dir.endsWith('/') ? dir : `${dir}/`}`), 'utf8'),
    })),
  );
}

const LOCK_KEY = 'syncrelay.migrate';

/**
 * Applies pending migrations in one transaction under an advisory lock, so concurrent starters
 * wait for each other. Refuses a database migrated by a newer version. Returns what it applied.
 */
export async function migrate(db: Db, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  const latest = all.at(-1)?.version ?? 0;
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [LOCK_KEY]);
    await tx.query(`CREATE TABLE IF NOT EXISTS syncrelay_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const current = await currentVersion(tx);
    if (current > latest) {
      throw new SchemaError(
        `database schema is at version ${current}, newer than this syncrelay (${latest}); upgrade syncrelay`,
      );
    }
    const applied: string[] = [];
    for (const m of all.filter((m) => m.version > current)) {
      await applyOne(tx, m);
      applied.push(m.name);
    }
    return applied;
  });
}

async function currentVersion(tx: Tx): Promise<number> {
  const { rows } = await tx.query<{ v: number | null }>('SELECT max(version)::int AS v FROM syncrelay_migrations');
  return rows[0]?.v ?? 0;
}

async function applyOne(tx: Tx, m: Migration): Promise<void> {
  try {
    await tx.exec(m.sql);
  } catch (cause) {
    throw new SchemaError(`migration ${m.name} failed`, { cause });
  }
  await tx.query('INSERT INTO syncrelay_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
}

/** The schema version a database is at (0 if never migrated). */
export async function schemaVersion(db: Db): Promise<number> {
  const { rows } = await db.query<{ exists: boolean }>(
    "SELECT to_regclass('syncrelay_migrations') IS NOT NULL AS exists",
  );
  if (!rows[0]?.exists) return 0;
  return currentVersion(db);
}
