/**
 * `syncrelay migrate`: applies pending schema migrations — the core's, then each built-in
 * provider's own (`synthetic/0001_tables`) — into the install's schema and prints what it applied.
 */
import type { Command } from 'commander';
import { grantAppRole } from '../../db/grants.js';
import { loadMigrations, migrate, schemaVersion } from '../../db/migrator.js';
import { openDb } from '../../db/open.js';
import { ValidationError } from '../../errors.js';
import { defaultRegistry } from '../../providers/registry.js';
import { printJson, printLine } from '../output.js';
import { cliLogger, describeDatabase, lockEmbeddedDb, resolveSettings } from '../session.js';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description("apply pending database migrations (the core's, then the providers') and print what was applied")
    .option('--json', 'print {"applied": [...], "version": N} (and "grantedTo" with --grant-to)')
    .option('--grant-to <role>', "then grant this role the API's, workers' and reconciler's privileges on the schema")
    .addHelpText(
      'after',
      '\nOther commands also migrate on start; run this first when several processes share one PostgreSQL.\n' +
        'Runs under an advisory lock; tables go into the schema SYNCRELAY_SCHEMA names (default syncrelay).\n' +
        'Connects to DATABASE_DIRECT_URL when it is set (the server, not a transaction pooler).\n' +
        'A database migrated by a newer syncrelay is refused.\n' +
        '--grant-to: run as the role that owns the schema; later migrations by it are granted too\n' +
        '(docs/operations.md, "Roles and grants").',
    )
    .action(async (opts: { json?: boolean; grantTo?: string }) => {
      const settings = resolveSettings();
      if (opts.grantTo !== undefined && !settings.databaseUrl) {
        throw new ValidationError('--grant-to', 'needs DATABASE_URL (PostgreSQL roles)');
      }
      cliLogger(false);
      const release = settings.databaseUrl ? () => undefined : lockEmbeddedDb(settings.dataDir);
      try {
        // DATABASE_DIRECT_URL when set: migrations take a session of their own, never a pooler's.
        const db = await openDb(settings, { poolSize: 1, applicationName: 'syncrelay-migrate', direct: true });
        try {
          const applied = await migrate(db, { providers: defaultRegistry(db).list() });
          const version = await schemaVersion(db);
          if (opts.grantTo !== undefined) await grantAppRole(db, opts.grantTo);
          if (opts.json) return printJson({ applied, version, ...(opts.grantTo ? { grantedTo: opts.grantTo } : {}) });
          const latest = (await loadMigrations()).at(-1)?.name ?? 'none';
          for (const name of applied) printLine(`applied ${name}`);
          if (opts.grantTo !== undefined) printLine(`granted ${opts.grantTo} the app role's privileges`);
          printLine(
            applied.length === 0
              ? `schema is up to date (version ${version}, ${latest}) — ${describeDatabase(settings)}`
              : `schema is now at version ${version} — ${describeDatabase(settings)}`,
          );
        } finally {
          await db.close();
        }
      } finally {
        release();
      }
    });
}
