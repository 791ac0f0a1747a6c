/** Deleting an integration on PGlite (the embedded database): the one-statement deletes run there too. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import { IntegrationBusyError, NotFoundError } from '../../src/errors.js';
import { deleteIntegration } from '../../src/planning/integrations.js';
import { insertIntegration } from './normalizedHelpers.js';

const ORG = 'org-purge';
let db: PgliteDb;

beforeAll(async () => {
  db = await PgliteDb.open();
  await migrate(db);
});
afterAll(async () => {
  await db.close();
});

async function seed(integrationId: string, runStatus: string): Promise<void> {
  const s = db.schema;
  const run = await db.query<{ id: string }>(
    `INSERT INTO ${s.sync_runs} (org_id, integration_id, triggered_by, mode, status)
     VALUES ($1, $2, 'schedule', 'incremental', $3) RETURNING id`,
    [ORG, integrationId, runStatus],
  );
  await db.query(
    `INSERT INTO ${s.sync_run_units} (org_id, sync_run_id, integration_id, provider, dataset_key, tier, cost_class,
                                      mode, status, attempts)
     VALUES ($1, $2, $3, 'github', 'work-items', 'work_item', 'standard', 'incremental', 'success', 1)`,
    [ORG, run.rows[0]!.id, integrationId],
  );
  const job = await db.query<{ id: string }>(
    `INSERT INTO ${s.scheduled_jobs} (org_id, integration_id, cron, mode) VALUES ($1, $2, '0 * * * *', 'incremental')
     RETURNING id`,
    [ORG, integrationId],
  );
  await db.query(
    `INSERT INTO ${s.job_runs} (org_id, job_id, integration_id, status, triggered_by)
     VALUES ($1, $2, $3, 'success', 'schedule')`,
    [ORG, job.rows[0]!.id, integrationId],
  );
  await db.query(
    `INSERT INTO ${s.table('work_items')} (org_id, integration_id, provider, external_id, last_synced_at)
     VALUES ($1, $2, 'github', '1', now())`,
    [ORG, integrationId],
  );
}

async function count(table: string, integrationId: string): Promise<number> {
  const column = table === 'integrations' ? 'id' : 'integration_id';
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${db.schema.table(table)} WHERE ${column} = $1`,
    [integrationId],
  );
  return rows[0]!.n;
}

describe('deleteIntegration on PGlite', () => {
  it('deletes the integration with its runs, schedules and JobRuns; keeps or purges the data', async () => {
    const keep = await insertIntegration(db, ORG);
    const purge = await insertIntegration(db, ORG);
    await seed(keep, 'success');
    await seed(purge, 'partial_failed');
    const kept = await deleteIntegration(db, keep, { orgId: ORG, purgeData: false });
    expect(kept).toMatchObject({ runsDeleted: 1, schedulesDeleted: 1, purged: null });
    const purged = await deleteIntegration(db, purge, { orgId: null, purgeData: true });
    expect(purged.purged).toMatchObject({ work_items: 1 });
    for (const table of ['integrations', 'sync_runs', 'sync_run_units', 'scheduled_jobs', 'job_runs']) {
      expect([table, await count(table, keep), await count(table, purge)]).toEqual([table, 0, 0]);
    }
    expect(await count('work_items', keep)).toBe(1);
    expect(await count('work_items', purge)).toBe(0);
  });

  it('refuses while a run is unfinished and when the integration is not the org’s', async () => {
    const busy = await insertIntegration(db, ORG);
    await seed(busy, 'planned');
    await expect(deleteIntegration(db, busy, { orgId: ORG, purgeData: true })).rejects.toBeInstanceOf(
      IntegrationBusyError,
    );
    await expect(deleteIntegration(db, busy, { orgId: 'other', purgeData: true })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    expect(await count('integrations', busy)).toBe(1);
    expect(await count('work_items', busy)).toBe(1);
  });
});
