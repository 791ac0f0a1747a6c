import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiToken } from '../../src/api/tokens.js';
import { systemClock } from '../../src/clock.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

describe('API token names and orgs', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  it('refuse control characters (C0, DEL, C1), naming the field, and write nothing', async () => {
    for (const name of ['ci\u001b[31m', 'tab\there', 'del\u007f', 'c1\u0085']) {
      await expect(createApiToken(t.db, systemClock, { orgId: 'org-a', name, scopes: ['read'] })).rejects.toThrow(
        /name/,
      );
    }
    await expect(createApiToken(t.db, systemClock, { orgId: 'org\u009b', scopes: ['read'] })).rejects.toThrow(/org/);
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.db.schema.api_tokens}`);
    expect(rows[0]!.n).toBe(0);
    const ok = await createApiToken(t.db, systemClock, { orgId: 'org-a', name: 'ci — déploiement', scopes: ['read'] });
    expect(ok.row.name).toBe('ci — déploiement');
  });
});
