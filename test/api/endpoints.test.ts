/** Every endpoint's happy path against a real server, answers checked against the contracts. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import * as R from '../../src/api/contracts/resources.js';
import { reconcilePass } from '../../src/reconciler/pass.js';
import { OUTBOX_PENDING } from '../../src/store/sql.js';
import { call, ORG_A, openApiHarness, SYNTHETIC, type ApiHarness } from './helpers.js';

let h: ApiHarness;
beforeAll(async () => {
  // The history test pages five live forced runs of one integration: above the default live-runs cap.
  h = await openApiHarness({ settings: { integrationMaxLiveRuns: 8 } });
});
afterAll(async () => {
  await h?.close();
});

/** The answer matches its contract exactly (strict schemas: no undocumented field). */
function conforms<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const r = schema.safeParse(body);
  if (!r.success)
    throw new Error(`answer does not match its contract: ${JSON.stringify(r.error.issues)}\n${JSON.stringify(body)}`);
  return r.data;
}

async function createIntegration(over: Record<string, unknown> = {}) {
  const r = await call(h.url, 'POST', '/api/v1/integrations', {
    token: h.tokens.admin,
    body: { ...SYNTHETIC, ...over },
  });
  expect(r.status).toBe(201);
  return conforms(R.Integration, r.body);
}

describe('integrations', () => {
  it('POST creates (201, id at the top level); GET lists and reads it', async () => {
    const created = await createIntegration({ name: 'first' });
    expect(created).toMatchObject({ org_id: ORG_A, provider: 'synthetic', name: 'first', enabled: true });
    expect(created.sources).toEqual(['team-a', 'team-b']);
    expect(created.datasets).toEqual(['teams', 'work-items']);
    expect(created.config).toEqual(SYNTHETIC.config);

    const one = await call(h.url, 'GET', `/api/v1/integrations/${created.id.toUpperCase()}`, { token: h.tokens.read });
    expect(one.status).toBe(200);
    expect(conforms(R.Integration, one.body)).toEqual(created);

    const all = await call(h.url, 'GET', '/api/v1/integrations', { token: h.tokens.read });
    expect(all.status).toBe(200);
    expect(conforms(R.IntegrationList, all.body).items.map((i) => i.id)).toContain(created.id);
  });
});

describe('triggers, runs and history', () => {
  it('sync and backfill answer 202 with both ids; the run, its units and its JobRun are readable', async () => {
    const integration = await createIntegration({ name: 'triggers' });
    const sync = await call(h.url, 'POST', `/api/v1/integrations/${integration.id}/sync`, {
      token: h.tokens.trigger,
      body: { mode: 'incremental' },
    });
    expect(sync.status).toBe(202);
    const accepted = conforms(R.Accepted, sync.body);

    const backfill = await call(h.url, 'POST', `/api/v1/integrations/${integration.id}/backfill`, {
      token: h.tokens.trigger,
      body: { since: '2026-01-01T00:00:00Z', before: '2026-01-29T00:00:00+00:00', datasets: ['work-items'] },
    });
    expect(backfill.status).toBe(202);
    const bf = conforms(R.Accepted, backfill.body);

    const detail = await call(h.url, 'GET', `/api/v1/sync-runs/${bf.sync_run_id}`, { token: h.tokens.read });
    expect(detail.status).toBe(200);
    const d = conforms(R.RunDetail, detail.body);
    expect(d.run).toMatchObject({ id: bf.sync_run_id, mode: 'backfill', status: 'planned', triggered_by: 'backfill' });
    // 2 sources × 4 weekly windows of work-items; the backfill restricted itself to that dataset.
    expect(d.unit_counts).toEqual({ planned: 8 });
    expect(d.job_run).toMatchObject({ id: bf.job_run_id, status: 'pending', result: { sync_run_id: bf.sync_run_id } });

    // Units page by page (3 per page) cover all 8 exactly once.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `?limit=3&cursor=${cursor}` : '?limit=3';
      const page = await call(h.url, 'GET', `/api/v1/sync-runs/${bf.sync_run_id}/units${q}`, { token: h.tokens.read });
      expect(page.status).toBe(200);
      const p = conforms(R.UnitPage, page.body);
      expect(p.items.length).toBeLessThanOrEqual(3);
      for (const u of p.items) {
        expect(u).toMatchObject({ sync_run_id: bf.sync_run_id, dataset_key: 'work-items', status: 'planned' });
        expect(['team-a', 'team-b']).toContain(u.source_key);
        seen.push(u.id);
      }
      cursor = p.next_cursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(8);

    const planned = await call(h.url, 'GET', `/api/v1/sync-runs/${bf.sync_run_id}/units?status=running`, {
      token: h.tokens.read,
    });
    expect(conforms(R.UnitPage, planned.body).items).toEqual([]);

    const jobs = await call(h.url, 'GET', `/api/v1/job-runs?integration_id=${integration.id}`, {
      token: h.tokens.read,
    });
    expect(jobs.status).toBe(200);
    const j = conforms(R.JobRunPage, jobs.body);
    expect(j.items.map((x) => x.id)).toEqual([bf.job_run_id, accepted.job_run_id]);
    expect(j.items[0]).toMatchObject({
      sync_run_id: bf.sync_run_id,
      mode: 'backfill',
      run_status: 'planned',
      triggered_by: 'backfill',
    });
    expect(j.items[1]).toMatchObject({ sync_run_id: accepted.sync_run_id, mode: 'incremental', triggered_by: 'api' });
  });

  it('cancel answers 202 and cancels the run; cancelling again reports it already terminal', async () => {
    const integration = await createIntegration({ name: 'cancel' });
    const t = await call(h.url, 'POST', `/api/v1/integrations/${integration.id}/sync`, {
      token: h.tokens.admin,
      body: { mode: 'full_resync' },
    });
    const { sync_run_id, job_run_id } = conforms(R.Accepted, t.body);
    const c = await call(h.url, 'POST', `/api/v1/sync-runs/${sync_run_id}/cancel`, { token: h.tokens.trigger });
    expect(c.status).toBe(202);
    expect(conforms(R.CancelAccepted, c.body)).toEqual({ status: 'accepted', sync_run_id, outcome: 'cancelled' });
    const again = await call(h.url, 'POST', `/api/v1/sync-runs/${sync_run_id}/cancel`, {
      token: h.tokens.trigger,
      body: {},
    });
    expect(again.status).toBe(202);
    expect(again.body.outcome).toBe('already_terminal');
    // A JSON content type with an empty body is a bodiless POST, as clients often send it.
    const bare = await call(h.url, 'POST', `/api/v1/sync-runs/${sync_run_id}/cancel`, {
      token: h.tokens.trigger,
      raw: '',
    });
    expect(bare.status).toBe(202);

    const d = conforms(
      R.RunDetail,
      (await call(h.url, 'GET', `/api/v1/sync-runs/${sync_run_id}`, { token: h.tokens.read })).body,
    );
    expect(d.run.status).toBe('cancelled');
    expect(Object.keys(d.unit_counts)).toEqual(['cancelled']);
    expect(d.job_run).toMatchObject({ id: job_run_id, status: 'cancelled' });
  });

  it('GET /job-runs filters by status, trigger and time, and pages with an opaque cursor', async () => {
    const integration = await createIntegration({ name: 'history' });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await call(h.url, 'POST', `/api/v1/integrations/${integration.id}/sync`, {
        token: h.tokens.admin,
        body: { mode: 'incremental', force: true },
      });
      ids.push(conforms(R.Accepted, r.body).job_run_id);
    }
    const base = `/api/v1/job-runs?integration_id=${integration.id}`;
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const r = await call(h.url, 'GET', `${base}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
        token: h.tokens.read,
      });
      expect(r.status).toBe(200);
      const p = conforms(R.JobRunPage, r.body);
      pages.push(p.items.map((x) => x.id));
      cursor = p.next_cursor;
    } while (cursor);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat()).toEqual([...ids].reverse());

    const cancelled = await call(h.url, 'GET', `${base}&status=cancelled`, { token: h.tokens.read });
    expect(conforms(R.JobRunPage, cancelled.body).items).toEqual([]);
    const api = await call(h.url, 'GET', `${base}&status=pending&triggered_by=api`, { token: h.tokens.read });
    expect(conforms(R.JobRunPage, api.body).items).toHaveLength(5);
    const future = await call(h.url, 'GET', `${base}&created_after=2999-01-01T00:00:00Z`, { token: h.tokens.read });
    expect(conforms(R.JobRunPage, future.body).items).toEqual([]);
    const past = await call(h.url, 'GET', `${base}&created_before=2000-01-01T00:00:00Z`, { token: h.tokens.read });
    expect(conforms(R.JobRunPage, past.body).items).toEqual([]);
  });
});

describe('operations', () => {
  it('GET /outbox/stats counts per kind × status with claims, lateness and recent errors', async () => {
    // No worker or reconciler runs here: the pending rows stay as the triggers above left them.
    const asked = Date.now();
    const { rows } = await h.db.query<{ oldest: Date }>(
      `SELECT min(available_at) AS oldest FROM ${h.db.schema.sync_dispatch_outbox}
        WHERE org_id = $1 AND status = ${OUTBOX_PENDING} AND available_at <= $2`,
      [ORG_A, new Date(asked)],
    );
    const oldest = rows[0]!.oldest.getTime();
    const r = await call(h.url, 'GET', '/api/v1/outbox/stats', { token: h.tokens.read });
    const answered = Date.now();
    expect(r.status).toBe(200);
    const s = conforms(R.OutboxStats, r.body);
    const pendingDispatch = s.counts.find((c) => c.kind === 'dispatch_sync_run' && c.status === 'pending');
    expect(pendingDispatch?.count).toBeGreaterThan(0);
    expect(s.live_claims).toBe(0);
    expect(s.due).toBeGreaterThan(0);
    // The oldest due row's age at the moment the server answered (rounded to the millisecond).
    expect(s.oldest_pending_age_seconds).toBeGreaterThanOrEqual((asked - oldest) / 1000 - 0.002);
    expect(s.oldest_pending_age_seconds).toBeLessThanOrEqual((answered - oldest) / 1000 + 0.002);
    expect(s.recent_errors).toEqual([]);
  });

  it('GET /reconciler/passes lists recent passes with their counters', async () => {
    await reconcilePass(h.engine.ctx, 'api-test');
    const r = await call(h.url, 'GET', '/api/v1/reconciler/passes?limit=5', { token: h.tokens.admin });
    expect(r.status).toBe(200);
    const p = conforms(R.ReconcilerPasses, r.body);
    expect(p.items[0]).toMatchObject({ reconciler: 'api-test', error: null });
    expect(p.items[0]!.counters).toHaveProperty('relayed_dispatch');
  });

  it('healthz, readyz and the OpenAPI document need no token', async () => {
    const health = await call(h.url, 'GET', '/healthz');
    expect(health.status).toBe(200);
    conforms(R.Health, health.body);
    const ready = await call(h.url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(conforms(R.Ready, ready.body).checks).toEqual({ database: 'ok', broker: 'ok' });
    for (const path of ['/api/v1/openapi.json', '/openapi.json']) {
      const doc = await call(h.url, 'GET', path);
      expect(doc.status).toBe(200);
      expect(doc.body.openapi).toBe('3.1.0');
      expect(Object.keys(doc.body.paths)).toEqual(
        expect.arrayContaining([
          '/api/v1/integrations',
          '/api/v1/integrations/{id}',
          '/api/v1/integrations/{id}/sync',
          '/api/v1/integrations/{id}/backfill',
          '/api/v1/sync-runs/{id}/cancel',
          '/api/v1/job-runs',
          '/api/v1/sync-runs/{id}',
          '/api/v1/sync-runs/{id}/units',
          '/api/v1/outbox/stats',
          '/api/v1/reconciler/passes',
          '/healthz',
          '/readyz',
        ]),
      );
      expect(doc.body.paths['/api/v1/integrations/{id}/backfill'].post['x-required-scope']).toBe('trigger');
      expect(doc.body.components.schemas.BackfillRequest.additionalProperties).toBe(false);
    }
  });

  it("answers carry a request id (the caller's when it is plain) and security headers", async () => {
    const mine = await call(h.url, 'GET', '/healthz', { headers: { 'x-request-id': 'req-123' } });
    expect(mine.headers.get('x-request-id')).toBe('req-123');
    const made = await call(h.url, 'GET', '/api/v1/integrations', {
      token: h.tokens.read,
      headers: { 'x-request-id': 'bad id\twith spaces' },
    });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(made.headers.get('x-content-type-options')).toBe('nosniff');
    expect(made.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(made.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(made.headers.get('x-ratelimit-limit')).not.toBeNull();
  });
});
