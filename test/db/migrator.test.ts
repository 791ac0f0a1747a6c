import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, loadMigrations, schemaVersion } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import { createSyntheticProvider } from '../../src/providers/synthetic.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

describe('migrator', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  it('finds the template already at the latest version and applies nothing', async () => {
    const latest = (await loadMigrations()).at(-1)!.version;
    expect(await schemaVersion(t.db)).toBe(latest);
    expect(await migrate(t.db)).toEqual([]);
    expect(await migrate(t.db, { providers: [createSyntheticProvider()] })).toEqual([]);
  });

  it('refuses a database migrated by a newer version', async () => {
    await t.db.query('INSERT INTO syncrelay.syncrelay_migrations (version, name) VALUES (9999, $1)', ['9999_future']);
    await expect(migrate(t.db)).rejects.toThrow(/newer than this syncrelay/);
    await t.db.query('DELETE FROM syncrelay.syncrelay_migrations WHERE version = 9999');
  });

  it('applies every migration on an empty PGlite database, concurrently safe', async () => {
    const db = await PgliteDb.open();
    try {
      const synthetic = createSyntheticProvider();
      const opts = { providers: [synthetic] };
      const [a, b] = await Promise.all([migrate(db, opts), migrate(db, opts)]);
      expect([...a, ...b]).toEqual([
        ...(await loadMigrations()).map((m) => m.name),
        ...(await synthetic.migrations!()).map((m) => `${synthetic.name}/${m.name}`),
      ]);
    } finally {
      await db.close();
    }
    // PGlite (WebAssembly) applies every core and provider migration here: minutes on a loaded machine.
  }, 180_000);
});
