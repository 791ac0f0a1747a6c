import type { Logger } from 'pino';
import type { ResolvedSettings } from '../config.js';
import { ensurePrivateDataDir } from './dataDir.js';
import { PgDb, type PgDbOptions } from './pg.js';
import { PgliteDb } from './pglite.js';
import { DbSchema } from './schema.js';
import { withPgTls } from './tls.js';
import type { Db } from './types.js';

/** Where the database is, and how its connections may be used (the pooler settings default as in config.ts). */
export type DbSettings = Pick<ResolvedSettings, 'databaseUrl' | 'dataDir' | 'schema'> &
  Partial<Pick<ResolvedSettings, 'databaseDirectUrl' | 'databasePooler' | 'databasePreparedStatements'>> &
  Partial<Pick<ResolvedSettings, 'pgSslMode' | 'pgSslRootCert'>>;

export interface OpenDbOptions {
  poolSize?: number;
  applicationName?: string;
  /** Statements over DATABASE_DIRECT_URL when set (migrations). @default false */
  direct?: boolean;
  /** Where the one "no LISTEN, polling only" warning goes. @default none */
  logger?: Logger;
}

/** Opens PostgreSQL when DATABASE_URL is set, otherwise the embedded PGlite in `dataDir` (kept 0700). */
export async function openDb(settings: DbSettings, opts: OpenDbOptions = {}): Promise<Db> {
  const schema = new DbSchema(settings.schema);
  if (settings.databaseUrl) {
    const { poolSize: max, applicationName } = opts;
    const urls = withPgTls(connections(settings, settings.databaseUrl, opts), settings);
    return new PgDb({ ...urls, max, applicationName, schema });
  }
  ensurePrivateDataDir(settings.dataDir);
  return PgliteDb.open(settings.dataDir, schema);
}

/**
 * Which URL carries statements and which the LISTEN connection, and whether statements are named.
 * Behind a transaction pooler with no direct URL there is no LISTEN: the loops wake by polling.
 */
function connections(
  settings: DbSettings,
  databaseUrl: string,
  opts: OpenDbOptions,
): Pick<PgDbOptions, 'connectionString' | 'preparedStatements' | 'listenConnectionString' | 'onNoListen'> {
  const direct = settings.databaseDirectUrl;
  const pooled = settings.databasePooler === 'transaction';
  return {
    connectionString: (opts.direct && direct) || databaseUrl,
    preparedStatements: settings.databasePreparedStatements ?? !pooled,
    listenConnectionString: direct ?? (pooled ? null : databaseUrl),
    onNoListen: () =>
      opts.logger?.warn(
        'DATABASE_URL is a transaction pooler (SYNCRELAY_DB_POOLER=transaction) and DATABASE_DIRECT_URL is not set: ' +
          'no LISTEN, so the reconciler and the scheduler wake by polling ' +
          '(every SYNC_RECONCILE_INTERVAL_SECONDS and 30 s); set DATABASE_DIRECT_URL for prompt wake-ups',
      ),
  };
}
