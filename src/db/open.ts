import type { ResolvedSettings } from '../config.js';
import { ensurePrivateDataDir } from './dataDir.js';
import { PgDb } from './pg.js';
import { PgliteDb } from './pglite.js';
import { DbSchema } from './schema.js';
import type { Db } from './types.js';

/** Opens PostgreSQL when DATABASE_URL is set, otherwise the embedded PGlite in `dataDir` (kept 0700). */
export async function openDb(
  settings: Pick<ResolvedSettings, 'databaseUrl' | 'dataDir' | 'schema'>,
  opts: { poolSize?: number; applicationName?: string } = {},
): Promise<Db> {
  const schema = new DbSchema(settings.schema);
  if (settings.databaseUrl) {
    const { poolSize: max, applicationName } = opts;
    return new PgDb({ connectionString: settings.databaseUrl, max, applicationName, schema });
  }
  ensurePrivateDataDir(settings.dataDir);
  return PgliteDb.open(settings.dataDir, schema);
}
