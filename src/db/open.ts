import { mkdir } from 'node:fs/promises';
import type { ResolvedSettings } from '../config.js';
import { PgDb } from './pg.js';
import { PgliteDb } from './pglite.js';
import type { Db } from './types.js';

/** Opens PostgreSQL when DATABASE_URL is set, otherwise the embedded PGlite in `dataDir`. */
export async function openDb(
  settings: Pick<ResolvedSettings, 'databaseUrl' | 'dataDir'>,
  opts: { poolSize?: number; applicationName?: string } = {},
): Promise<Db> {
  if (settings.databaseUrl) {
    return new PgDb({ connectionString: settings.databaseUrl, max: opts.poolSize, applicationName: opts.applicationName });
  }
  await mkdir(settings.dataDir, { recursive: true });
  return PgliteDb.open(settings.dataDir);
}
