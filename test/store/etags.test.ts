/**
 * provider_etags (src/store/etags.ts) on PostgreSQL and PGlite: read with whether the integration
 * exists, recorded (replacing the one stored) only for an integration that exists, and deleted with
 * the integration.
 */
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import type { Db } from '../../src/db/types.js';
import { listProviderEtags, readProviderEtag, recordProviderEtag } from '../../src/store/etags.js';
import { deleteIntegrationRecords } from '../../src/store/integrationDelete.js';
import { insertIntegration } from '../../src/store/integrations.js';
import { createTestDatabase } from '../helpers/pg.js';

const GONE = '00000000-0000-4000-8000-0000000000ff';
const AT = new Date('2026-03-02T12:00:00Z');

async function exercise(db: Db): Promise<void> {
  const add = (name: string) => insertIntegration(db, { orgId: 'o', provider: 'github', name, config: {} }, AT);
  const [a, b] = [await add('a'), await add('b')];
  expect(await readProviderEtag(db, a.id, 'k')).toEqual({ etag: null });
  expect(await readProviderEtag(db, GONE, 'k')).toBeNull();
  expect(await recordProviderEtag(db, a.id, 'k', 'W/"1"', AT)).toBe(true);
  expect(await recordProviderEtag(db, a.id, 'k', 'W/"2"', AT)).toBe(true);
  expect(await recordProviderEtag(db, b.id, 'k', '"3"', AT)).toBe(true);
  expect(await recordProviderEtag(db, GONE, 'k', 'W/"4"', AT)).toBe(false);
  expect(await readProviderEtag(db, a.id, 'k')).toEqual({ etag: 'W/"2"' });
  expect([...(await listProviderEtags(db, b.id))]).toEqual([['k', '"3"']]);

  await db.transaction((tx) => deleteIntegrationRecords(tx, a.id));
  expect((await listProviderEtags(db, a.id)).size).toBe(0);
  expect((await listProviderEtags(db, b.id)).size).toBe(1);
}

describe('provider_etags', () => {
  it('on PostgreSQL', async () => {
    const t = await createTestDatabase();
    try {
      await exercise(t.db);
    } finally {
      await t.drop();
    }
  });

  it('on PGlite', async () => {
    const db = await PgliteDb.open();
    try {
      await migrate(db, {});
      await exercise(db);
    } finally {
      await db.close();
    }
  });
});
