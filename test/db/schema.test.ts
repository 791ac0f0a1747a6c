import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config.js';
import { loadMigrations, migrate, type Migration } from '../../src/db/migrator.js';
import { PgDb } from '../../src/db/pg.js';
import { DbSchema } from '../../src/db/schema.js';
import { createSyntheticProvider } from '../../src/providers/synthetic.js';
import { adminQuery, pgUrl } from '../helpers/pg.js';

const synthetic = createSyntheticProvider();

/** An empty database (not the migrated template); dropped after the test. */
const made: { name: string; dbs: PgDb[] }[] = [];
async function emptyDatabase(): Promise<{ url: string; open(schema?: string): PgDb }> {
  const name = `syncrelay_t_${Date.now()}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const entry = { name, dbs: [] as PgDb[] };
  made.push(entry);
  const url = pgUrl(name);
  return {
    url,
    open(schema?: string) {
      const db = new PgDb({ connectionString: url, max: 2, schema: schema ? new DbSchema(schema) : undefined });
      entry.dbs.push(db);
      return db;
    },
  };
}

afterEach(async () => {
  for (const { name, dbs } of made.splice(0)) {
    await Promise.all(dbs.map((d) => d.close()));
    await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
});

/** Relations (tables, indexes, sequences, views) and functions by schema, user schemas only. */
async function objectsBySchema(db: PgDb): Promise<Record<string, string[]>> {
  const { rows } = await db.query<{ nspname: string; name: string }>(
    `SELECT n.nspname, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
     UNION ALL
     SELECT n.nspname, p.proname || '()' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
     ORDER BY 1, 2`,
  );
  const out: Record<string, string[]> = {};
  for (const r of rows) (out[r.nspname] ??= []).push(r.name);
  return out;
}

/**
 * Applies the earlier layout as its migrator did: versions 1–6 unqualified on a connection whose
 * search_path is public, its ledger in public. Version 1 of that layout also created the synthetic
 * provider's tables, which are that provider's own migration now.
 */
async function migrateLegacyLayout(db: PgDb): Promise<void> {
  const legacy = (await loadMigrations()).filter((m) => m.version <= 6);
  const [syntheticTables] = (await synthetic.migrations!()) as Migration[];
  await db.exec(`CREATE TABLE syncrelay_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  for (const m of legacy) {
    await db.exec(m.version === 1 ? `${m.sql}\n${syntheticTables!.sql}` : m.sql);
    await db.query('INSERT INTO public.syncrelay_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
  }
}

/** Rows of the earlier layout, written the way that layout's code wrote them (unqualified, into public). */
async function fillLegacyLayout(db: PgDb): Promise<{ integrationId: string; runId: string }> {
  const { rows: i } = await db.query<{ id: string }>(
    `INSERT INTO public.integrations (org_id, provider, name, config)
     VALUES ('org-old', 'synthetic', 'old', '{}') RETURNING id`,
  );
  const integrationId = i[0]!.id;
  const { rows: r } = await db.query<{ id: string }>(
    `INSERT INTO public.sync_runs (org_id, integration_id, triggered_by, mode, status, total_units)
     VALUES ('org-old', $1, 'manual', 'backfill', 'dispatching', 2) RETURNING id`,
    [integrationId],
  );
  const runId = r[0]!.id;
  await db.query(
    `INSERT INTO public.sync_run_units (org_id, sync_run_id, integration_id, provider, dataset_key, tier,
                                       cost_class, mode, status)
     SELECT 'org-old', $1, $2, 'synthetic', 'teams', 'reference', 'default', 'backfill', s
       FROM unnest(ARRAY['success', 'planned']) AS s`,
    [runId, integrationId],
  );
  await db.query(
    `INSERT INTO public.sync_dispatch_outbox (org_id, sync_run_id, kind, available_at)
     VALUES ('org-old', $1, 'dispatch_sync_run', now())`,
    [runId],
  );
  await db.query(
    `INSERT INTO public.api_tokens (org_id, name, token_hash, scopes)
     VALUES ('org-old', 'ci', repeat('a', 64), ARRAY['read'])`,
  );
  await db.query(
    `INSERT INTO public.scheduled_jobs (org_id, integration_id, cron, mode)
     VALUES ('org-old', $1, '0 * * * *', 'incremental')`,
    [integrationId],
  );
  await db.query(
    `INSERT INTO public.job_runs (org_id, integration_id, triggered_by, status, result)
     VALUES ('org-old', $1, 'manual', 'running', jsonb_build_object('sync_run_id', $2::text))`,
    [integrationId, runId],
  );
  await db.query(
    `INSERT INTO public.synthetic_items (org_id, integration_id, source_key, dataset_key, item_key, item_day, payload,
                                        unit_id, lease_owner, written_at)
     VALUES ('org-old', $1, 's1', 'teams', 'k1', '2026-01-01', '{}', gen_random_uuid(), 'w', now())`,
    [integrationId],
  );
  await db.query(
    `INSERT INTO public.reconciler_passes (reconciler, started_at, finished_at, duration_ms, counters)
     VALUES ('r', now(), now(), 1, '{}')`,
  );
  return { integrationId, runId };
}

const CORE_TABLES = [
  'api_tokens',
  'idempotency_keys',
  'integration_datasets',
  'integration_sources',
  'integrations',
  'job_runs',
  'post_sync_receipts',
  'provider_migrations',
  'reconciler_passes',
  'scheduled_jobs',
  'sync_dispatch_outbox',
  'sync_run_post_dispatches',
  'sync_run_units',
  'sync_runs',
  'sync_watermarks',
  'syncrelay_migrations',
];
const SYNTHETIC_TABLES = ['synthetic_executions', 'synthetic_items', 'synthetic_metrics_daily'];

describe('syncrelay in a schema of its own', () => {
  it('migrate on an empty database creates nothing in public, everything in syncrelay', async () => {
    const e = await emptyDatabase();
    const db = e.open();
    const applied = await migrate(db, { providers: [synthetic] });
    expect(applied).toContain('0007_own_schema');
    expect(applied).toContain('synthetic/0001_tables');
    const objects = await objectsBySchema(db);
    expect(objects.public ?? []).toEqual([]);
    expect(Object.keys(objects)).toEqual(['syncrelay']);
    for (const t of [...CORE_TABLES, ...SYNTHETIC_TABLES]) expect(objects.syncrelay).toContain(t);
    expect(objects.syncrelay).toContain('syncrelay_uuid7()');
    expect(await migrate(db, { providers: [synthetic] })).toEqual([]);
  });

  it('SYNCRELAY_SCHEMA=other puts everything in other; the core alone creates no provider table', async () => {
    const settings = loadSettings({ SYNCRELAY_SCHEMA: 'other' });
    expect(settings.schema).toBe('other');
    expect(settings.queuePrefix).toBe('other');
    const e = await emptyDatabase();
    const db = e.open(settings.schema);
    await migrate(db);
    const objects = await objectsBySchema(db);
    expect(Object.keys(objects)).toEqual(['other']);
    for (const t of CORE_TABLES) expect(objects.other).toContain(t);
    for (const t of SYNTHETIC_TABLES) expect(objects.other).not.toContain(t);
    // The provider's track comes with the provider, later, into the same schema.
    expect(await migrate(db, { providers: [synthetic] })).toEqual(['synthetic/0001_tables']);
    expect(Object.keys(await objectsBySchema(db))).toEqual(['other']);
  });

  it('refuses a bad SYNCRELAY_SCHEMA, naming the setting', () => {
    for (const bad of ['Upper', 'has-dash', '1digit', 'pg_mine', 'information_schema', 'x'.repeat(49), 'a"b']) {
      expect(() => loadSettings({ SYNCRELAY_SCHEMA: bad })).toThrow(/SYNCRELAY_SCHEMA/);
    }
  });

  it("leaves an application's own public tables of the same names alone", async () => {
    const e = await emptyDatabase();
    const db = e.open();
    await db.exec(`CREATE TABLE public.integrations (id int PRIMARY KEY, app_data text);
                   INSERT INTO public.integrations VALUES (1, 'mine');`);
    await migrate(db, { providers: [synthetic] });
    const { rows } = await db.query<{ app_data: string }>('SELECT app_data FROM public.integrations');
    expect(rows).toEqual([{ app_data: 'mine' }]);
    expect((await objectsBySchema(db)).syncrelay).toContain('integrations');
  });

  it('moves an install of the earlier layout into the schema in place: runs, tokens, schedules all there', async () => {
    const e = await emptyDatabase();
    const db = e.open();
    await migrateLegacyLayout(db);
    const { integrationId, runId } = await fillLegacyLayout(db);
    const before = await objectsBySchema(db);
    expect(before.public).toContain('sync_runs');

    const applied = await migrate(db, { providers: [synthetic] });
    expect(applied).toEqual(['0007_own_schema', '0008_credentials', 'synthetic/0001_tables']);

    const after = await objectsBySchema(db);
    expect(after.public ?? []).toEqual([]);
    // The same objects, moved (indexes and owned sequences with their tables), plus the provider ledger
    // and what later versions add (integration_credentials, version 8).
    const added = (n: string) => n.startsWith('provider_migrations') || n.startsWith('integration_credentials');
    expect(after.syncrelay!.filter((n) => !added(n))).toEqual(before.public);
    const count = async (table: string) =>
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM syncrelay.${table}`)).rows[0]!.n;
    expect(await count('integrations')).toBe(1);
    expect(await count('sync_runs')).toBe(1);
    expect(await count('sync_run_units')).toBe(2);
    expect(await count('sync_dispatch_outbox')).toBe(1);
    expect(await count('api_tokens')).toBe(1);
    expect(await count('scheduled_jobs')).toBe(1);
    expect(await count('job_runs')).toBe(1);
    expect(await count('synthetic_items')).toBe(1);
    expect(await count('reconciler_passes')).toBe(1);
    const { rows: ledger } = await db.query<{ version: number }>(
      'SELECT version FROM syncrelay.syncrelay_migrations ORDER BY version',
    );
    expect(ledger.map((l) => l.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Defaults still work where they point at the moved id function and sequences.
    const { rows: run } = await db.query<{ id: string }>(
      `INSERT INTO syncrelay.sync_runs (org_id, integration_id, triggered_by, mode)
       VALUES ('org-old', $1, 'manual', 'incremental') RETURNING id`,
      [integrationId],
    );
    expect(run[0]!.id.charAt(14)).toBe('7');
    await db.query(
      `INSERT INTO syncrelay.reconciler_passes (reconciler, started_at, finished_at, duration_ms, counters)
       VALUES ('r', now(), now(), 1, '{}')`,
    );
    const { rows: jr } = await db.query<{ status: string }>(
      "SELECT status FROM syncrelay.job_runs WHERE result ->> 'sync_run_id' = $1",
      [runId],
    );
    expect(jr).toEqual([{ status: 'running' }]);
    expect(await migrate(db, { providers: [synthetic] })).toEqual([]);
  });

  it("applies a provider's own migrations into the schema under the same lock, and refuses a newer track", async () => {
    const e = await emptyDatabase();
    const db = e.open('mine');
    const own: Migration[] = [
      { version: 1, name: '0001_widgets', sql: 'CREATE TABLE widgets (id int PRIMARY KEY);' },
      { version: 2, name: '0002_widget_name', sql: 'ALTER TABLE widgets ADD COLUMN name text;' },
    ];
    const provider = { name: 'widgets', migrations: async () => own };
    const [a, b] = await Promise.all([migrate(db, { providers: [provider] }), migrate(db, { providers: [provider] })]);
    expect([...a, ...b].filter((n) => n.startsWith('widgets/'))).toEqual([
      'widgets/0001_widgets',
      'widgets/0002_widget_name',
    ]);
    expect((await objectsBySchema(db)).mine).toContain('widgets');
    await db.query(
      "INSERT INTO mine.provider_migrations (provider, version, name) VALUES ('widgets', 9, '0009_future')",
    );
    await expect(migrate(db, { providers: [provider] })).rejects.toThrow(
      /provider "widgets".*newer than this syncrelay/,
    );
    // Another provider's track is its own business.
    expect(await migrate(db, { providers: [synthetic] })).toEqual(['synthetic/0001_tables']);
  });

  it('a connection with no search_path at all runs the engine statements (they name the schema)', async () => {
    const e = await emptyDatabase();
    const db = e.open();
    await migrate(db, { providers: [synthetic] });
    const { rows } = await db.query<{ search_path: string }>('SHOW search_path');
    expect(rows[0]!.search_path).not.toContain('syncrelay');
    const s = db.schema;
    expect(s.sync_runs).toBe('"syncrelay"."sync_runs"');
    expect(s.channel).toBe('syncrelay_outbox');
    expect(new DbSchema('other').channel).toBe('other_outbox');
  });
});
