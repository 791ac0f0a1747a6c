/** `syncrelay integrations delete ID [--purge-data]`: synced data stays unless asked for. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NORMALIZED_DATA_TABLES } from '../../src/store/normalizedPurge.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { parseJson, runCli } from './helpers.js';

let t: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  env = { DATABASE_URL: t.url };
});
afterAll(async () => {
  await t?.drop();
});

async function createIntegration(org: string): Promise<string> {
  const r = await runCli(
    ['integrations', 'create', '--org', org, '--provider', 'synthetic', '--name', 'n', '--sources', 's1'].concat([
      '--datasets',
      'work-items',
      '--json',
    ]),
    { env },
  );
  expect(r.stderr).toBe('');
  return parseJson<{ id: string }>(r.stdout).id;
}

async function seed(org: string, integrationId: string): Promise<void> {
  const s = t.db.schema;
  await t.db.query(
    `INSERT INTO ${s.table('work_items')} (org_id, integration_id, provider, external_id, last_synced_at, status)
     VALUES ($1, $2, 'github', '1', now(), 'todo'), ($1, $2, 'github', '2', now(), 'done')`,
    [org, integrationId],
  );
  await t.db.query(
    `INSERT INTO ${s.table('commits')} (org_id, integration_id, provider, external_id, last_synced_at)
     VALUES ($1, $2, 'github', 'abc', now())`,
    [org, integrationId],
  );
  await t.db.query(
    `INSERT INTO ${s.table('work_item_metrics_daily')}
       (org_id, integration_id, day, computed_at, items_created, items_completed, wip, prs_merged)
     VALUES ($1, $2, '2026-03-01', now(), 2, 1, 1, 0)`,
    [org, integrationId],
  );
}

async function dataRows(integrationId: string): Promise<number> {
  let n = 0;
  for (const table of NORMALIZED_DATA_TABLES) {
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${t.db.schema.table(table)} WHERE integration_id = $1`,
      [integrationId],
    );
    n += rows[0]!.n;
  }
  return n;
}

async function exists(integrationId: string): Promise<boolean> {
  const { rows } = await t.db.query(`SELECT 1 FROM ${t.db.schema.integrations} WHERE id = $1`, [integrationId]);
  return rows.length === 1;
}

describe('integrations delete', () => {
  it('keeps the synced data without --purge-data', async () => {
    const id = await createIntegration('cli-keep');
    await seed('cli-keep', id);
    const r = await runCli(['integrations', 'delete', id], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`deleted integration ${id}`);
    expect(r.stdout).toContain('synced data kept');
    expect(await exists(id)).toBe(false);
    expect(await dataRows(id)).toBe(4);
  });

  it('deletes the synced data and metrics with --purge-data', async () => {
    const id = await createIntegration('cli-purge');
    const other = await createIntegration('cli-purge');
    await seed('cli-purge', id);
    await seed('cli-purge', other);
    const r = await runCli(['integrations', 'delete', id, '--purge-data', '--json'], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = parseJson<{ purged: Record<string, number>; integration: { id: string } }>(r.stdout);
    expect(out.integration.id).toBe(id);
    expect(out.purged).toMatchObject({ work_items: 2, commits: 1, work_item_metrics_daily: 1, members: 0 });
    expect(await dataRows(id)).toBe(0);
    expect(await dataRows(other)).toBe(4);
  });

  it('exits non-zero naming the problem for an unknown id or another org, deleting nothing', async () => {
    const id = await createIntegration('cli-guard');
    await seed('cli-guard', id);
    const wrongOrg = await runCli(['integrations', 'delete', id, '--org', 'someone-else', '--purge-data'], { env });
    expect(wrongOrg.code).not.toBe(0);
    expect(wrongOrg.stderr).toMatch(/integration .* not found/);
    const unknown = await runCli(['integrations', 'delete', '01900000-0000-7000-8000-000000000000'], { env });
    expect(unknown.code).not.toBe(0);
    expect(await exists(id)).toBe(true);
    expect(await dataRows(id)).toBe(4);
  });
});
