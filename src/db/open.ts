import { mkdir } from 'node:fs/promises';
import type { ResolvedSettings } from '../config.js';
import { PgDb } from './pg.js';
import { PgliteDb } from './pglite.js';
import { DbSchema } from './schema.js';
import type { Db } from './types.js';

/** Opens PostgreSQL when DATABASE_URL is set, otherwise the embedded PGlite in `dataDir`. */
export async function openDb(
  settings: Pick<ResolvedSettings, 'databaseUrl' | 'dataDir' | 'schema'>,
  opts: { poolSize?: number; applicationName?: string } = {},
): Promise<Db> {
  const schema = new DbSchema(settings.schema);
  if (settings.databaseUrl) {
    const { poolSize: max, applicationName } = opts;
    return new PgDb({ connectionString: settings.databaseUrl, max, applicationName, schema });
  }
  await mkdir(settings.dataDir, { recursive: true });
  return PgliteDb.open(settings.dataDir, schema);
}
