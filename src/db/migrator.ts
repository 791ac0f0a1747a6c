/**
 * Numbered, append-only SQL migrations: the core schema's (migrations/) and each registered
 * provider's own, applied in one transaction under an advisory lock into the install's schema.
 *
 * Migration files name no schema: the migrator runs them with `SET LOCAL search_path` pinned to the
 * install's schema, in its own transaction (statements at run time always qualify their tables).
 */
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { SchemaError } from '../errors.js';
import type { DbSchema } from './schema.js';
import type { Db, Tx } from './types.js';

/** migrations/ sits two levels above this file both in src/db and in dist/db. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** A provider's own migration track: its tables, versioned apart from the core schema's. */
export interface MigrationTrack {
  /** The provider's name: its track in the ledger. */
  readonly name: string;
  /** Its numbered migrations, oldest first. */
  migrations?: () => Promise<readonly Migration[]>;
}

export interface MigrateOptions {
  /** The core migrations. @default the files in migrations/ */
  core?: readonly Migration[];
  /** Providers whose own migrations are applied after the core's (in name order). @default none */
  providers?: readonly MigrationTrack[];
}

/** Reads `NNNN_name.sql` files of `dir`, ordered by number. */
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

/** One lock for every schema's migrations: adopting the earlier layout moves tables out of `public`. */
const LOCK_KEY = 'syncrelay.migrate';

/**
 * Creates the schema and applies pending migrations, core first, then each provider's, in one
 * transaction under an advisory lock (concurrent starters wait for each other). A track migrated by
 * a newer version is refused. An install of the earlier layout (tables in `public`) is adopted: its
 * ledger moves into the schema and core migration 0007 moves the rest. Returns what it applied.
 */
export async function migrate(db: Db, opts: MigrateOptions = {}): Promise<string[]> {
  const core = opts.core ?? (await loadMigrations());
  const tracks = await loadTracks(opts.providers ?? []);
  // Up to date: nothing to take a lock or create for — a role that may only read the ledgers (the
  // services' role, docs/operations.md) starts without CREATE on the database.
  if (await upToDate(db, [[CORE, core], ...tracks])) return [];
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [LOCK_KEY]);
    await prepareSchema(tx);
    const applied = await applyTrack(tx, CORE, core);
    for (const [name, list] of tracks) applied.push(...(await applyTrack(tx, name, list)));
    return applied;
  });
}

/** The core track's name in messages (its ledger is `syncrelay_migrations`). */
const CORE = 'core';

/** Whether both ledgers exist and every track is at its latest migration. Reads only; locks nothing. */
async function upToDate(db: Db, tracks: readonly [string, readonly Migration[]][]): Promise<boolean> {
  const s = db.schema;
  const { rows } = await db.query<{ ledgers: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS ledgers',
    [s.syncrelay_migrations, s.provider_migrations],
  );
  if (!rows[0]?.ledgers) return false;
  const { rows: at } = await db.query<{ track: string; v: number }>(
    `SELECT $1::text AS track, coalesce(max(version), 0)::int AS v FROM ${s.syncrelay_migrations}
     UNION ALL
     SELECT provider, max(version)::int FROM ${s.provider_migrations} GROUP BY provider`,
    [CORE],
  );
  const version = new Map(at.map((r) => [r.track, r.v]));
  return tracks.every(([name, list]) => (version.get(name) ?? 0) === (list.at(-1)?.version ?? 0));
}

async function loadTracks(providers: readonly MigrationTrack[]): Promise<[string, readonly Migration[]][]> {
  const sorted = [...providers].sort((a, b) => a.name.localeCompare(b.name));
  const out: [string, readonly Migration[]][] = [];
  for (const p of sorted) if (p.migrations) out.push([p.name, await p.migrations()]);
  return out;
}

/** The schema, its two ledgers, and `search_path` pinned to it for this transaction's scripts. */
async function prepareSchema(tx: Tx): Promise<void> {
  const s = tx.schema;
  await tx.query(`CREATE SCHEMA IF NOT EXISTS ${s.quoted}`);
  await tx.query(`SET LOCAL search_path TO ${s.quoted}`);
  await adoptPublicLedger(tx, s);
  await tx.query(`CREATE TABLE IF NOT EXISTS ${s.syncrelay_migrations} (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  await tx.query(`CREATE TABLE IF NOT EXISTS ${s.provider_migrations} (
      provider text NOT NULL, version integer NOT NULL, name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (provider, version))`);
}

/**
 * The earlier layout kept every table, the ledger included, in `public`. When the schema has no
 * ledger and `public` has syncrelay's, the ledger moves (nothing copied); the core migration that
 * follows (0007) moves every other table the schema does not have yet.
 */
async function adoptPublicLedger(tx: Tx, s: DbSchema): Promise<void> {
  if (s.name === 'public') return;
  const { rows } = await tx.query<{ ours: boolean; legacy: boolean }>(
    `SELECT to_regclass($1) IS NOT NULL AS ours, to_regclass('public.syncrelay_migrations') IS NOT NULL AS legacy`,
    [s.syncrelay_migrations],
  );
  if (rows[0]?.ours || !rows[0]?.legacy) return;
  await tx.query(`ALTER TABLE public.syncrelay_migrations SET SCHEMA ${s.quoted}`);
}

async function applyTrack(tx: Tx, track: string, all: readonly Migration[]): Promise<string[]> {
  const latest = all.at(-1)?.version ?? 0;
  const current = await trackVersion(tx, track);
  if (current > latest) {
    const what = track === CORE ? 'database schema' : `provider "${track}"'s tables`;
    throw new SchemaError(`${what} is at version ${current}, newer than this syncrelay (${latest}); upgrade syncrelay`);
  }
  const applied: string[] = [];
  for (const m of all.filter((m) => m.version > current)) {
    await applyOne(tx, track, m);
    applied.push(track === CORE ? m.name : `${track}/${m.name}`);
  }
  return applied;
}

async function trackVersion(tx: Tx, track: string): Promise<number> {
  const s = tx.schema;
  const { rows } =
    track === CORE
      ? await tx.query<{ v: number | null }>(`SELECT max(version)::int AS v FROM ${s.syncrelay_migrations}`)
      : await tx.query<{ v: number | null }>(
          `SELECT max(version)::int AS v FROM ${s.provider_migrations} WHERE provider = $1`,
          [track],
        );
  return rows[0]?.v ?? 0;
}

async function applyOne(tx: Tx, track: string, m: Migration): Promise<void> {
  try {
    await tx.exec(m.sql);
  } catch (cause) {
    throw new SchemaError(`migration ${track === CORE ? '' : `${track}/`}${m.name} failed`, { cause });
  }
  const s = tx.schema;
  if (track === CORE) {
    await tx.query(`INSERT INTO ${s.syncrelay_migrations} (version, name) VALUES ($1, $2)`, [m.version, m.name]);
  } else {
    await tx.query(`INSERT INTO ${s.provider_migrations} (provider, version, name) VALUES ($1, $2, $3)`, [
      track,
      m.version,
      m.name,
    ]);
  }
}

/** The core schema version a database is at (0 if never migrated). */
export async function schemaVersion(db: Db): Promise<number> {
  const s = db.schema;
  const { rows } = await db.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [
    s.syncrelay_migrations,
  ]);
  if (!rows[0]?.exists) return 0;
  const { rows: v } = await db.query<{ v: number | null }>(
    `SELECT max(version)::int AS v FROM ${s.syncrelay_migrations}`,
  );
  return v[0]?.v ?? 0;
}
