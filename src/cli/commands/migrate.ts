/**
 * `syncrelay migrate`: applies pending schema migrations — the core's, then each built-in
 * provider's own (`synthetic/0001_tables`) — into the install's schema and prints what it applied.
 */
import type { Command } from 'commander';
import { loadMigrations, migrate, schemaVersion } from '../../db/migrator.js';
import { openDb } from '../../db/open.js';
import { defaultRegistry } from '../../providers/registry.js';
import { printJson, printLine } from '../output.js';
import { cliLogger, describeDatabase, lockEmbeddedDb, resolveSettings } from '../session.js';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description("apply pending database migrations (the core's, then the providers') and print what was applied")
    .option('--json', 'print {"applied": [...], "version": N}')
    .addHelpText(
      'after',
      '\nOther commands also migrate on start; run this first when several processes share one PostgreSQL.\n' +
        'Runs under an advisory lock; tables go into the schema SYNCRELAY_SCHEMA names (default syncrelay).\n' +
        'A database migrated by a newer syncrelay is refused.',
    )
    .action(async (opts: { json?: boolean }) => {
      const settings = resolveSettings();
      cliLogger(false);
      const release = settings.databaseUrl ? () => undefined : lockEmbeddedDb(settings.dataDir);
      try {
        const db = await openDb(settings, { poolSize: 1, applicationName: 'syncrelay-migrate' });
        try {
          const applied = await migrate(db, { providers: defaultRegistry(db).list() });
          const version = await schemaVersion(db);
          if (opts.json) return printJson({ applied, version });
          const latest = (await loadMigrations()).at(-1)?.name ?? 'none';
          for (const name of applied) printLine(`applied ${name}`);
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
