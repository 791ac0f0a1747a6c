/**
 * Production roles (src/db/grants.ts, docs/operations.md "Roles and grants"): the superuser only
 * makes a database and two roles with the documented SQL; a non-superuser owner migrates with
 * `syncrelay migrate --grant-to`; the app role runs the engine (a synthetic run) and the API, and
 * can change no table's shape. Role names carry a random suffix; both are dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { systemClock } from '../../src/clock.js';
import { appGrantsSql, createRolesSql, grantAppRole } from '../../src/db/grants.js';
import { migrate } from '../../src/db/migrator.js';
import { PgDb } from '../../src/db/pg.js';
import { DbSchema } from '../../src/db/schema.js';
import { Engine } from '../../src/engine.js';
import { ValidationError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { runCli } from '../cli/helpers.js';
import { runTerminal, testSettings } from '../helpers/engine.js';
import { adminQuery, PG_BASE, pgUrl } from '../helpers/pg.js';

const suffix = randomBytes(4).toString('hex');
const names = {
  database: `syncrelay_t_${Date.now()}_${suffix}`,
  owner: `syncrelay_owner_${suffix}`,
  app: `syncrelay_app_${suffix}`,
};
const schema = new DbSchema('syncrelay');

/** The database's URL as `role` (the shared server trusts 127.0.0.1; production sets a password). */
function urlAs(role: string): string {
  const base = new URL(pgUrl(names.database));
  base.username = role;
  return base.toString();
}

/** Runs `sql` as `role` on the test database; resolves to the error's SQLSTATE, or null when it succeeded. */
async function sqlStateAs(role: string, sql: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: urlAs(role) });
  await client.connect();
  try {
    await client.query(sql);
    return null;
  } catch (err) {
    return (err as { code?: string }).code ?? 'unknown';
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  expect(PG_BASE).toMatch(/@127\.0\.0\.1[:/]/);
  await adminQuery(`CREATE DATABASE ${names.database}`);
  // The documented administrator's SQL, in the new database (its REVOKE is per database).
  const admin = new pg.Client({ connectionString: pgUrl(names.database) });
  await admin.connect();
  try {
    for (const statement of createRolesSql(names)) await admin.query(statement);
  } finally {
    await admin.end();
  }
}, 60_000);

afterAll(async () => {
  await adminQuery(`DROP DATABASE IF EXISTS ${names.database} WITH (FORCE)`);
  await adminQuery(`DROP ROLE IF EXISTS ${names.app}, ${names.owner}`);
});

describe('a non-superuser owner and an app role', () => {
  it('neither role is a superuser; the owner migrates with --grant-to and owns the schema', async () => {
    const roles = await sqlRows<{ rolname: string; rolsuper: boolean; rolcreaterole: boolean }>(
      'SELECT rolname, rolsuper, rolcreaterole FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname',
      [[names.owner, names.app]],
    );
    expect(roles.map((r) => [r.rolsuper, r.rolcreaterole])).toEqual([
      [false, false],
      [false, false],
    ]);
    const r = await runCli(['migrate', '--grant-to', names.app, '--json'], {
      env: { DATABASE_URL: urlAs(names.owner) },
      timeoutMs: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { applied: string[]; grantedTo: string };
    expect(out.applied).toContain('synthetic/0001_tables');
    expect(out.grantedTo).toBe(names.app);
    const [owner] = await sqlRows<{ owner: string }>(
      'SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = $1',
      [schema.name],
    );
    expect(owner!.owner).toBe(names.owner);
  });

  it('docs/operations.md shows the SQL this test runs (for the default names)', async () => {
    const doc = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const section = doc.split('### Roles and grants')[1]!.split('\n### ')[0]!;
    const blocks = [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
    const sql = (statements: string[]) => statements.map((st) => `${st};`).join('\n');
    const defaults = { database: 'syncrelay', owner: 'syncrelay_owner', app: 'syncrelay_app' };
    expect(blocks).toEqual([
      sql(createRolesSql(defaults)),
      sql(appGrantsSql(new DbSchema('syncrelay'), defaults.owner, defaults.app)),
    ]);
  });

  it('the app role opens the engine as services do (nothing to migrate), runs a run, the API reads it', async () => {
    const db = new PgDb({ connectionString: urlAs(names.app), max: 4, applicationName: 'syncrelay-test-app' });
    const engine = await Engine.open({
      settings: testSettings(),
      db,
      broker: new InProcessBroker(),
      logger: silentLogger(),
      // Opened as the services open it, migrating: up to date, the migrator only reads the ledgers.
    });
    const server = await startApiServer({ engine, host: '127.0.0.1', port: 0, rateLimit: false });
    try {
      const { rows } = await db.query<{ user: string }>('SELECT current_user AS user');
      expect(rows[0]!.user).toBe(names.app);
      const integration = await engine.createIntegration({
        orgId: 'org-roles',
        provider: 'synthetic',
        name: 'roles',
        sources: ['s1'],
        datasets: ['work-items'],
        config: { itemsPerDay: 2 },
      });
      engine.startWorker({ concurrency: 2 });
      await engine.startReconciler();
      const run = await engine.trigger({
        orgId: 'org-roles',
        integrationId: integration.id,
        mode: 'incremental',
        triggeredBy: 'manual',
      });
      expect(await runTerminal(db, run.syncRunId, 30_000)).toBe('success');

      const { token } = await createApiToken(db, systemClock, { orgId: 'org-roles', scopes: ['read'], name: 'r' });
      const res = await fetch(`${server.url}/api/v1/sync-runs/${run.syncRunId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { run: { status: string } }).run.status).toBe('success');
    } finally {
      await server.close();
      await engine.close();
      await db.close();
    }
  });

  it('the app role cannot drop, alter or create a table, nor write the migration ledger', async () => {
    const app = names.app;
    expect(await sqlStateAs(app, `DROP TABLE ${schema.sync_runs}`)).toBe('42501');
    expect(await sqlStateAs(app, `ALTER TABLE ${schema.sync_runs} ADD COLUMN x int`)).toBe('42501');
    expect(await sqlStateAs(app, `TRUNCATE ${schema.sync_runs}`)).toBe('42501');
    expect(await sqlStateAs(app, `CREATE TABLE ${schema.quoted}.x (a int)`)).toBe('42501');
    expect(await sqlStateAs(app, 'CREATE TABLE public.x (a int)')).toBe('42501');
    expect(await sqlStateAs(app, `CREATE SCHEMA x_${suffix}`)).toBe('42501');
    expect(await sqlStateAs(app, `DELETE FROM ${schema.syncrelay_migrations}`)).toBe('42501');
    expect(await sqlStateAs(app, `SELECT count(*) FROM ${schema.syncrelay_migrations}`)).toBeNull();
  });

  it("a later migration's table and sequence reach the app role through default privileges", async () => {
    const owner = new PgDb({ connectionString: urlAs(names.owner), max: 1, schema });
    try {
      const later = [
        { version: 1, name: '0001_items', sql: 'CREATE TABLE later_items (id bigserial PRIMARY KEY, v text)' },
      ];
      expect(await migrate(owner, { providers: [{ name: 'later', migrations: async () => later }] })).toEqual([
        'later/0001_items',
      ]);
    } finally {
      await owner.close();
    }
    expect(await sqlStateAs(names.app, `INSERT INTO ${schema.quoted}.later_items (v) VALUES ('x')`)).toBeNull();
    expect(await sqlStateAs(names.app, `DROP TABLE ${schema.quoted}.later_items`)).toBe('42501');
  });

  it('granting to a role that does not exist, or to the owner itself, is refused naming --grant-to', async () => {
    const owner = new PgDb({ connectionString: urlAs(names.owner), max: 1, schema });
    try {
      for (const role of [`syncrelay_nobody_${suffix}`, names.owner]) {
        const err = await grantAppRole(owner, role).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ValidationError);
        expect((err as ValidationError).field).toBe('--grant-to');
      }
    } finally {
      await owner.close();
    }
  });
});

async function sqlRows<R extends pg.QueryResultRow>(sql: string, values: unknown[]): Promise<R[]> {
  const client = new pg.Client({ connectionString: pgUrl(names.database) });
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end();
  }
}
