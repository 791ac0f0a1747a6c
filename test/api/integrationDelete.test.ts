/**
 * DELETE /api/v1/integrations/:id: the integration and its run records go; the data it synced into
 * the normalized tables and its metrics stay unless purge_data=true deletes them in the same
 * transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as R from '../../src/api/contracts/resources.js';
import { NORMALIZED_SURFACES } from '../../src/sinks/normalized/index.js';
import { NORMALIZED_DATA_TABLES } from '../../src/store/normalizedPurge.js';
import { call, openApiHarness, ORG_A, type ApiHarness } from './helpers.js';

let h: ApiHarness;

beforeAll(async () => {
  h = await openApiHarness();
});
afterAll(async () => {
  await h?.close();
});

async function createIntegration(name: string): Promise<string> {
  const r = await call(h.url, 'POST', '/api/v1/integrations', {
    token: h.tokens.admin,
    body: { provider: 'synthetic', name, sources: ['team-a'], datasets: ['work-items'] },
  });
  expect(r.status).toBe(201);
  return r.body.id as string;
}

/** A row in every normalized table (two in work_items) and a metrics row for `integrationId`. */
async function seedData(integrationId: string): Promise<void> {
  const s = h.db.schema;
  for (const table of NORMALIZED_SURFACES) {
    await h.db.query(
      `INSERT INTO ${s.table(table)} (org_id, integration_id, provider, external_id, last_synced_at)
       VALUES ($1, $2, 'github', '1', now())`,
      [ORG_A, integrationId],
    );
  }
  await h.db.query(
    `INSERT INTO ${s.table('work_items')} (org_id, integration_id, provider, external_id, last_synced_at, status)
     VALUES ($1, $2, 'github', '2', now(), 'todo')`,
    [ORG_A, integrationId],
  );
  await h.db.query(
    `INSERT INTO ${s.table('work_item_metrics_daily')}
       (org_id, integration_id, day, computed_at, items_created, items_completed, wip, prs_merged)
     VALUES ($1, $2, '2026-03-01', now(), 1, 0, 1, 0)`,
    [ORG_A, integrationId],
  );
}

/** A finished run with a unit and a JobRun, a schedule and a watermark of `integrationId`. */
async function seedRecords(integrationId: string, runStatus = 'success'): Promise<void> {
  const s = h.db.schema;
  const run = await h.db.query<{ id: string }>(
    `INSERT INTO ${s.sync_runs} (org_id, integration_id, triggered_by, mode, status)
     VALUES ($1, $2, 'manual', 'backfill', $3) RETURNING id`,
    [ORG_A, integrationId, runStatus],
  );
  const runId = run.rows[0]!.id;
  await h.db.query(
    `INSERT INTO ${s.sync_run_units} (org_id, sync_run_id, integration_id, provider, dataset_key, tier, cost_class,
                                      mode, status, attempts)
     VALUES ($1, $2, $3, 'synthetic', 'work-items', 'work_item', 'standard', 'backfill', 'success', 1)`,
    [ORG_A, runId, integrationId],
  );
  await h.db.query(
    `INSERT INTO ${s.post_sync_receipts} (org_id, sync_run_id, handler, delivery) VALUES ($1, $2, 'h', 'at-most-once')`,
    [ORG_A, runId],
  );
  const job = await h.db.query<{ id: string }>(
    `INSERT INTO ${s.scheduled_jobs} (org_id, integration_id, cron, mode) VALUES ($1, $2, '0 * * * *', 'incremental')
     RETURNING id`,
    [ORG_A, integrationId],
  );
  await h.db.query(
    `INSERT INTO ${s.job_runs} (org_id, job_id, integration_id, status, triggered_by, result)
     VALUES ($1, $2, $3, 'success', 'schedule', jsonb_build_object('sync_run_id', $4::text))`,
    [ORG_A, job.rows[0]!.id, integrationId, runId],
  );
}

async function countRows(integrationId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of NORMALIZED_DATA_TABLES) {
    const { rows } = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${h.db.schema.table(table)} WHERE integration_id = $1`,
      [integrationId],
    );
    out[table] = rows[0]!.n;
  }
  return out;
}

async function countRecords(integrationId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of ['integrations', 'integration_sources', 'sync_runs', 'scheduled_jobs', 'job_runs']) {
    const column = table === 'integrations' ? 'id' : 'integration_id';
    const { rows } = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${h.db.schema.table(table)} WHERE ${column} = $1`,
      [integrationId],
    );
    out[table] = rows[0]!.n;
  }
  return out;
}

const seeded = () => ({
  ...Object.fromEntries(NORMALIZED_DATA_TABLES.map((t) => [t, 1])),
  work_items: 2,
});

describe('DELETE /api/v1/integrations/:id', () => {
  it('purges every normalized table and the metrics', () => {
    expect([...NORMALIZED_DATA_TABLES].sort()).toEqual([...NORMALIZED_SURFACES, 'work_item_metrics_daily'].sort());
  });

  it('without purge_data deletes the integration and its run records; its synced data stays', async () => {
    const id = await createIntegration('keep data');
    await seedData(id);
    await seedRecords(id);
    const r = await call(h.url, 'DELETE', `/api/v1/integrations/${id}`, { token: h.tokens.admin });
    expect(r.status).toBe(200);
    const body = R.IntegrationDeletion.parse(r.body);
    expect(body).toMatchObject({ runs_deleted: 1, schedules_deleted: 1, purged_rows: null });
    expect(body.integration).toMatchObject({ id, name: 'keep data', sources: ['team-a'] });
    expect(await countRecords(id)).toEqual({
      integrations: 0,
      integration_sources: 0,
      sync_runs: 0,
      scheduled_jobs: 0,
      job_runs: 0,
    });
    expect(await countRows(id)).toEqual(seeded());
    const again = await call(h.url, 'GET', `/api/v1/integrations/${id}`, { token: h.tokens.admin });
    expect(again.status).toBe(404);
  });

  it('with purge_data=true also deletes its rows from every normalized table and metrics, none other', async () => {
    const id = await createIntegration('purge data');
    const other = await createIntegration('other');
    await seedData(id);
    await seedData(other);
    await seedRecords(id);
    const r = await call(h.url, 'DELETE', `/api/v1/integrations/${id}?purge_data=true`, { token: h.tokens.admin });
    expect(r.status).toBe(200);
    expect(R.IntegrationDeletion.parse(r.body).purged_rows).toEqual(seeded());
    expect(Object.values(await countRows(id)).every((n) => n === 0)).toBe(true);
    expect(await countRows(other)).toEqual(seeded());
    expect((await countRecords(other)).integrations).toBe(1);
  });

  it('purge_data=false keeps the data', async () => {
    const id = await createIntegration('explicit false');
    await seedData(id);
    const r = await call(h.url, 'DELETE', `/api/v1/integrations/${id}?purge_data=false`, { token: h.tokens.admin });
    expect(r.status).toBe(200);
    expect(r.body.purged_rows).toBeNull();
    expect(await countRows(id)).toEqual(seeded());
  });

  it('refuses (409 integration_busy) while a run is unfinished, and deletes and purges nothing', async () => {
    const id = await createIntegration('busy');
    await seedData(id);
    await seedRecords(id, 'dispatching');
    const r = await call(h.url, 'DELETE', `/api/v1/integrations/${id}?purge_data=true`, { token: h.tokens.admin });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatchObject({ code: 'integration_busy', details: { live_runs: 1 } });
    expect(await countRows(id)).toEqual(seeded());
    expect(await countRecords(id)).toMatchObject({ integrations: 1, sync_runs: 1, scheduled_jobs: 1 });
  });

  it('answers 404 for an unknown integration and for another org’s, which stays', async () => {
    const id = await createIntegration('mine');
    await seedData(id);
    const foreign = await call(h.url, 'DELETE', `/api/v1/integrations/${id}?purge_data=true`, {
      token: h.tokens.foreign,
    });
    expect(foreign.status).toBe(404);
    expect((await countRecords(id)).integrations).toBe(1);
    expect(await countRows(id)).toEqual(seeded());
    const unknown = await call(h.url, 'DELETE', '/api/v1/integrations/01900000-0000-7000-8000-000000000000', {
      token: h.tokens.admin,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
  });

  it('refuses a bad purge_data and a token without admin scope', async () => {
    const id = await createIntegration('guarded');
    const bad = await call(h.url, 'DELETE', `/api/v1/integrations/${id}?purge_data=yes`, { token: h.tokens.admin });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.field).toContain('purge_data');
    const read = await call(h.url, 'DELETE', `/api/v1/integrations/${id}`, { token: h.tokens.read });
    expect(read.status).toBe(403);
    expect((await countRecords(id)).integrations).toBe(1);
  });

  it('replays an Idempotency-Key; the same key with another purge_data is refused', async () => {
    const id = await createIntegration('idempotent');
    await seedData(id);
    const headers = { 'idempotency-key': `del-${id}` };
    const first = await call(h.url, 'DELETE', `/api/v1/integrations/${id}`, { token: h.tokens.admin, headers });
    expect(first.status).toBe(200);
    const again = await call(h.url, 'DELETE', `/api/v1/integrations/${id}`, { token: h.tokens.admin, headers });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const purge = await call(h.url, 'DELETE', `/api/v1/integrations/${id}?purge_data=true`, {
      token: h.tokens.admin,
      headers,
    });
    expect(purge.body.error.code).toBe('idempotency_key_reused');
    expect(await countRows(id)).toEqual(seeded());
  });

  it('is in the OpenAPI document with its query parameter', async () => {
    const r = await call(h.url, 'GET', '/api/v1/openapi.json', { token: h.tokens.read });
    expect(r.status).toBe(200);
    const op = r.body.paths['/api/v1/integrations/{id}'].delete;
    expect(op.operationId).toBe('deleteIntegration');
    expect(op.parameters.map((p: { name: string }) => p.name)).toContain('purge_data');
    expect(Object.keys(op.responses)).toContain('409');
  });
});
