/**
 * GET /api/v1/integrations/:id/freshness over HTTP (real server on 127.0.0.1, cloned PostgreSQL,
 * sources seeded by real synthetic runs): a read token suffices; the answer has the contract's
 * shape and each source's state; another org's integration is a 404 exactly like a missing one;
 * a malformed id is a 400, no token a 401.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpoints } from '../../src/api/contracts/endpoints.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { seedFreshnessStates, type FreshnessSeed } from '../helpers/freshness.js';
import { call, isErrorShape, openApiHarness, ORG_A, type ApiHarness } from './helpers.js';

let h: ApiHarness;
let seed: FreshnessSeed;
const path = (id: string) => `/api/v1/integrations/${id}/freshness`;

beforeAll(async () => {
  h = await openApiHarness({ broker: new InProcessBroker() });
  h.engine.startWorker({ concurrency: 2 });
  await h.engine.startReconciler({ scheduler: false });
  seed = await seedFreshnessStates(h.engine, ORG_A);
}, 60_000);
afterAll(async () => {
  await h?.close();
});

describe('GET /integrations/:id/freshness', () => {
  it('answers each source × work-item dataset with its state to a read token', async () => {
    const r = await call(h.url, 'GET', path(seed.integrationId), { token: h.tokens.read });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(endpoints.getIntegrationFreshness.success.schema.safeParse(r.body).success).toBe(true);
    expect(r.body).toMatchObject({
      integration_id: seed.integrationId,
      name: 'Acme synthetic',
      provider: 'synthetic',
      max_lag_ms: 86_400_000,
      max_lag_basis: 'setting',
      counts: { failing: 1, deferred_by_budget: 1, catching_up: 0, never_synced: 1, fresh: 1 },
    });
    const items = r.body.items as Record<string, unknown>[];
    expect(items.map((i) => [i.source_key, i.dataset_key, i.state])).toEqual([
      ['s-failing', 'work-items', 'failing'],
      ['s-deferred', 'work-items', 'deferred_by_budget'],
      ['s-never', 'work-items', 'never_synced'],
      ['s-fresh', 'work-items', 'fresh'],
    ]);
    expect(items[0]).toMatchObject({ last_error_category: 'provider_error', last_error_run_id: seed.runs.failing });
    expect(items[1]).toMatchObject({ in_progress_run_id: seed.runs.deferred });
    expect(typeof items[1]!.deferred_until).toBe('string');
    expect(items[3]).toMatchObject({ last_success_run_id: seed.runs.fresh, source_id: seed.sources['s-fresh'] });

    const db = h.db;
    const { rows } = await db.query<{ watermark_at: Date }>(
      `SELECT watermark_at FROM ${db.schema.sync_watermarks} WHERE source_id = $1 AND dataset_key = 'work-items'`,
      [seed.sources['s-fresh']],
    );
    expect(items[3]!.watermark_at).toBe(rows[0]!.watermark_at.toISOString());
    expect(items[3]!.lag_ms).toBe(Date.parse(r.body.as_of as string) - rows[0]!.watermark_at.getTime());
  });

  it("answers another org's integration exactly like a missing one", async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const foreign = await call(h.url, 'GET', path(seed.integrationId), { token: h.tokens.foreign });
    const missing = await call(h.url, 'GET', path(unknown), { token: h.tokens.foreign });
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(isErrorShape(foreign.body)).toBe(true);
    // The same answer but for the id asked about (and the request id).
    const shape = (b: unknown, id: string) =>
      JSON.parse(
        JSON.stringify(b)
          .replaceAll(id, 'ID')
          .replace(/"request_id":"[^"]*"/, ''),
      ) as unknown;
    expect(shape(foreign.body, seed.integrationId)).toEqual(shape(missing.body, unknown));
    expect(JSON.stringify(foreign.body)).not.toContain('s-fresh');
  });

  it('refuses a malformed id and a missing token', async () => {
    const bad = await call(h.url, 'GET', path('not-a-uuid'), { token: h.tokens.read });
    expect(bad.status).toBe(400);
    expect(isErrorShape(bad.body)).toBe(true);
    const anonymous = await call(h.url, 'GET', path(seed.integrationId), { token: null });
    expect(anonymous.status).toBe(401);
  });
});
