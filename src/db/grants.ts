/**
 * Two PostgreSQL roles for production, neither a superuser (docs/operations.md, "Roles and grants"):
 *
 * - the owner (`syncrelay_owner`) runs the migrations: it may create schemas in the database and
 *   owns the install's schema and everything in it. The migrations need nothing more: no extension
 *   (`gen_random_uuid()` is core), no event trigger, one SQL function, advisory locks.
 * - the app role (`syncrelay_app`) runs the API, the workers and the reconciler: USAGE on the
 *   schema, SELECT/INSERT/UPDATE/DELETE on its tables (SELECT only on the two migration ledgers),
 *   its sequences and its function; no DDL. Default privileges give it the same on whatever later
 *   migrations — the core's and the providers' — create.
 *
 * The SQL is built here once, for `syncrelay migrate --grant-to` and for the documentation.
 */
import { ValidationError } from '../errors.js';
import { quoteIdent, type DbSchema } from './schema.js';
import type { Db } from './types.js';

export interface RoleNames {
  /** The database syncrelay's schema lives in. */
  database: string;
  /** The role that migrates and owns the schema. */
  owner: string;
  /** The role the API, workers and reconciler connect as. */
  app: string;
}

/**
 * What an administrator (a superuser, or a role with CREATEROLE and the database's ownership) runs
 * once: both roles (passwords are set apart, e.g. psql's `\password`), CREATE on the database for
 * the owner, and no CREATE in `public` for anyone (PostgreSQL 15's default; older ones granted it).
 */
export function createRolesSql(r: RoleNames): string[] {
  const [db, owner, app] = [quoteIdent(r.database), quoteIdent(r.owner), quoteIdent(r.app)];
  return [
    `CREATE ROLE ${owner} LOGIN`,
    `CREATE ROLE ${app} LOGIN`,
    `GRANT CONNECT, CREATE ON DATABASE ${db} TO ${owner}`,
    `GRANT CONNECT ON DATABASE ${db} TO ${app}`,
    'REVOKE CREATE ON SCHEMA public FROM PUBLIC',
  ];
}

/**
 * What the owner runs after migrating (`syncrelay migrate --grant-to app`): the app role's grants
 * on what exists now, and default privileges for what the owner creates in the schema later.
 */
export function appGrantsSql(schema: DbSchema, owner: string, app: string): string[] {
  const s = schema.quoted;
  const [o, a] = [quoteIdent(owner), quoteIdent(app)];
  const defaults = `ALTER DEFAULT PRIVILEGES FOR ROLE ${o} IN SCHEMA ${s}`;
  return [
    `GRANT USAGE ON SCHEMA ${s} TO ${a}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${s} TO ${a}`,
    `REVOKE INSERT, UPDATE, DELETE ON ${schema.syncrelay_migrations}, ${schema.provider_migrations} FROM ${a}`,
    `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${s} TO ${a}`,
    `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${s} TO ${a}`,
    `${defaults} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${a}`,
    `${defaults} GRANT USAGE, SELECT ON SEQUENCES TO ${a}`,
    `${defaults} GRANT EXECUTE ON FUNCTIONS TO ${a}`,
  ];
}

/**
 * Grants `app` what it needs in the migrated schema, as the connected role (the schema's owner),
 * in one transaction. A role that does not exist is refused naming `setting`. Returns the owner.
 */
export async function grantAppRole(db: Db, app: string, setting = '--grant-to'): Promise<{ owner: string }> {
  return db.transaction(async (tx) => {
    // Reads the catalog only; locks nothing. Returns whether `app` exists and who we are.
    const { rows } = await tx.query<{ exists: boolean; owner: string }>(
      'SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS exists, current_user AS owner',
      [app],
    );
    const { exists, owner } = rows[0]!;
    if (!exists) throw new ValidationError(setting, `the role ${JSON.stringify(app)} does not exist`);
    if (app === owner) throw new ValidationError(setting, `must name another role than the one migrating (${owner})`);
    for (const statement of appGrantsSql(tx.schema, owner, app)) await tx.query(statement);
    return { owner };
  });
}
