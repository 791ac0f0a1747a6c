import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { PgDb } from '../../src/db/pg.js';
import { migrate } from '../../src/db/migrator.js';
import { createSyntheticProvider } from '../../src/providers/synthetic.js';
import { adminQuery, PG_POOLED, pgUrl } from './pg.js';

const STALE_MS = 3 * 3600_000;

/**
 * Builds a migrated template database for this test run (each file clones it): the core schema
 * and the synthetic provider's tables, which the tests' engines run (made on PG_BASE even when the
 * engines go through PG_POOLED, which must then answer). Drops
 * templates and clones that crashed runs older than three hours left behind.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await dropStale();
  await checkPooler(project.config.env?.SYNCRELAY_TEST_PG_POOLED || PG_POOLED);
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

/** With SYNCRELAY_TEST_PG_POOLED set (the `pooler` project), PgBouncer must answer: CI starts it. */
async function checkPooler(pooled: string | undefined): Promise<void> {
  if (!pooled) return;
  const client = new pg.Client({ connectionString: `${pooled}/postgres`, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (cause) {
    throw new Error(
      `SYNCRELAY_TEST_PG_POOLED (${new URL(pooled).host}) is not answering: start PgBouncer with ` +
        '.ci/pgbouncer.ini as .ci/run does, or run another project (--project suite)',
      { cause },
    );
  } finally {
    await client.end().catch(() => undefined);
  }
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
