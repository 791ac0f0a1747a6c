import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { PgDb } from '../../src/db/pg.js';
import { migrate } from '../../src/db/migrator.js';
import { createSyntheticProvider } from '../../src/providers/synthetic.js';
import { adminQuery, pgUrl } from './pg.js';

const STALE_MS = 3 * 3600_000;

/**
 * Builds a migrated template database for this test run (each file clones it): the core schema
 * and the synthetic provider's tables, which the tests' engines run. Drops
 * templates and clones that crashed runs older than three hours left behind.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await dropStale();
  const template = `syncrelay_tpl_${Date.now()}_${randomBytes(3).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${template}`);
  const db = new PgDb({ connectionString: pgUrl(template), max: 1 });
  try {
    await migrate(db, { providers: [createSyntheticProvider()] });
  } finally {
    await db.close();
  }
  project.provide('templateDb', template);
  return async () => {
    await adminQuery(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  };
}

async function dropStale(): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl('postgres') });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname ~ '^syncrelay_(tpl|t)_[0-9]+_'",
    );
    for (const { datname } of rows) {
      const ts = Number(datname.split('_')[2]);
      if (Date.now() - ts > STALE_MS) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    templateDb: string;
  }
}
