/**
 * Triggers: Idempotency-Key replay and 422, the 409 conflict and force, 202 with Redis down, and the
 * verify mode (202 for a provider that verifies a dataset, 400 on mode for one that verifies none).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMqBroker } from '../../src/broker/bullmq.js';
import type { Provider } from '../../src/sdk/types.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { uniquePrefix } from '../helpers/pg.js';
import { call, isErrorShape, openApiHarness, SYNTHETIC, tableCounts, type ApiHarness } from './helpers.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await openApiHarness();
});
afterAll(async () => {
  await h?.close();
});

async function newIntegration(token = h.tokens.admin): Promise<string> {
  const r = await call(h.url, 'POST', '/api/v1/integrations', { token, body: SYNTHETIC });
  expect(r.status).toBe(201);
  return r.body.id;
}

const backfill = { since: '2026-01-01T00:00:00Z', before: '2026-01-15T00:00:00Z', datasets: ['work-items'] };

describe('Idempotency-Key', () => {
  it('the same key and body replays the first answer and writes nothing more', async () => {
    const id = await newIntegration();
    const send = (body: unknown) =>
      call(h.url, 'POST', `/api/v1/integrations/${id}/backfill`, {
        token: h.tokens.trigger,
        body,
        headers: { 'idempotency-key': 'bf-2026-01' },
      });
    const first = await send(backfill);
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const before = await tableCounts(h.db);

    // Key order does not change the request.
    const again = await send({ datasets: ['work-items'], before: backfill.before, since: backfill.since });
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await tableCounts(h.db)).toEqual(before);
  });

  it('the same key with another body is a 422 that writes nothing', async () => {
    const id = await newIntegration();
    const headers = { 'idempotency-key': 'sync-once' };
    const first = await call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
      token: h.tokens.trigger,
      body: { mode: 'incremental' },
      headers,
    });
    expect(first.status).toBe(202);
    const before = await tableCounts(h.db);
    const other = await call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
      token: h.tokens.trigger,
      body: { mode: 'incremental', force: true },
      headers,
    });
    expect(other.status).toBe(422);
    expect(isErrorShape(other.body)).toBe(true);
    expect(other.body.error).toMatchObject({ code: 'idempotency_key_reused', details: { field: 'Idempotency-Key' } });
    // Another endpoint with the same key is another request too.
    const elsewhere = await call(h.url, 'POST', `/api/v1/integrations/${id}/backfill`, {
      token: h.tokens.trigger,
      body: backfill,
      headers,
    });
    expect(elsewhere.status).toBe(422);
    expect(await tableCounts(h.db)).toEqual(before);
  });

  it('concurrent requests with one key plan one run and all answer with it', async () => {
    const id = await newIntegration();
    const before = await tableCounts(h.db);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
          token: h.tokens.trigger,
          body: { mode: 'full_resync', force: true },
          headers: { 'idempotency-key': 'race-1' },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(202));
    expect(new Set(answers.map((a) => a.body.sync_run_id)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(7);
    const after = await tableCounts(h.db);
    expect(after.sync_runs - before.sync_runs).toBe(1);
    expect(after.job_runs - before.job_runs).toBe(1);
    expect(after.idempotency_keys - before.idempotency_keys).toBe(1);
  });

  it('a failed request is not recorded: the key can be used again once the request is valid', async () => {
    const id = await newIntegration();
    const headers = { 'idempotency-key': 'retry-after-fix' };
    const bad = await call(h.url, 'POST', `/api/v1/integrations/${id}/backfill`, {
      token: h.tokens.trigger,
      body: { ...backfill, datasets: ['members'] },
      headers,
    });
    expect(bad.status).toBe(400);
    const good = await call(h.url, 'POST', `/api/v1/integrations/${id}/backfill`, {
      token: h.tokens.trigger,
      body: backfill,
      headers,
    });
    expect(good.status).toBe(202);
  });

  it('a malformed key is a 400 naming the header', async () => {
    const id = await newIntegration();
    const before = await tableCounts(h.db);
    for (const key of ['has space', 'x'.repeat(256)]) {
      const r = await call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
        token: h.tokens.trigger,
        body: { mode: 'incremental' },
        headers: { 'idempotency-key': key },
      });
      expect(r.status).toBe(400);
      expect(r.body.error.details.field).toBe('Idempotency-Key');
    }
    expect(await tableCounts(h.db)).toEqual(before);
  });
});

describe('409 conflict', () => {
  const secondUnfinishedRun =
    'a second unfinished run of the same mode names the first; force starts another; other modes are free';
  it(secondUnfinishedRun, async () => {
    const id = await newIntegration();
    const first = await call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
      token: h.tokens.trigger,
      body: { mode: 'incremental' },
    });
    expect(first.status).toBe(202);
    const before = await tableCounts(h.db);
    const second = await call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
      token: h.tokens.trigger,
      body: { mode: 'incremental' },
    });
    expect(second.status).toBe(409);
    expect(isErrorShape(second.body)).toBe(true);
    expect(second.body.error).toMatchObject({
      code: 'run_conflict',
      details: { existing_run_id: first.body.sync_run_id, mode: 'incremental' },
    });
    expect(await tableCounts(h.db)).toEqual(before);

    const other = await call(h.url, 'POST', `/api/v1/integrations/${id}/backfill`, {
      token: h.tokens.trigger,
      body: backfill,
    });
    expect(other.status).toBe(202);
    const forced = await call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
      token: h.tokens.trigger,
      body: { mode: 'incremental', force: true },
    });
    expect(forced.status).toBe(202);
    expect(forced.body.sync_run_id).not.toBe(first.body.sync_run_id);

    // Once the first is cancelled (and the forced one too), the mode is free again.
    for (const run of [first.body.sync_run_id, forced.body.sync_run_id]) {
      expect((await call(h.url, 'POST', `/api/v1/sync-runs/${run}/cancel`, { token: h.tokens.trigger })).status).toBe(
        202,
      );
    }
    const free = await call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
      token: h.tokens.trigger,
      body: { mode: 'incremental' },
    });
    expect(free.status).toBe(202);
  });
});

describe('broker down', () => {
  let down: ApiHarness;
  beforeAll(async () => {
    down = await openApiHarness({
      broker: new BullMqBroker({
        redisUrl: 'redis://127.0.0.1:1',
        prefix: uniquePrefix('api-down'),
        publishTimeoutMs: 500,
      }),
      server: { readinessTimeoutMs: 1000 },
    });
  });
  afterAll(async () => {
    await down?.close();
  });

  it('a trigger still answers 202 and leaves its dispatch row pending for the relay', async () => {
    const integration = await call(down.url, 'POST', '/api/v1/integrations', {
      token: down.tokens.admin,
      body: SYNTHETIC,
    });
    expect(integration.status).toBe(201);
    const started = Date.now();
    const r = await call(down.url, 'POST', `/api/v1/integrations/${integration.body.id}/backfill`, {
      token: down.tokens.trigger,
      body: backfill,
    });
    expect(r.status).toBe(202);
    expect(Date.now() - started).toBeLessThan(2000);
    const { rows } = await down.db.query<{ kind: string; status: string; dispatched_at: Date | null }>(
      'SELECT kind, status, dispatched_at FROM syncrelay.sync_dispatch_outbox WHERE sync_run_id = $1',
      [r.body.sync_run_id],
    );
    expect(rows).toEqual([{ kind: 'dispatch_sync_run', status: 'pending', dispatched_at: null }]);
    const stats = await call(down.url, 'GET', '/api/v1/outbox/stats', { token: down.tokens.read });
    expect(stats.body.counts).toEqual([{ kind: 'dispatch_sync_run', status: 'pending', count: 1 }]);
  });

  it('/readyz answers 503 naming the broker; /healthz stays 200', async () => {
    const ready = await call(down.url, 'GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(isErrorShape(ready.body)).toBe(true);
    expect(ready.body.error).toMatchObject({
      code: 'not_ready',
      message: 'not ready: broker',
      details: { checks: { database: 'ok', broker: expect.stringMatching(/unreachable|timeout/) } },
    });
    expect((await call(down.url, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('verify', () => {
  /** A provider that can list one of its datasets (`verifies`) and not the other. */
  const lister: Provider = {
    name: 'apiverify',
    datasets: [
      { key: 'work-items', tier: 'work_item', costClass: 'rest', keepsWatermark: true, surfaces: [], verifies: true },
      { key: 'commits', tier: 'work_item', costClass: 'rest', keepsWatermark: true, surfaces: [] },
    ],
    runUnit: () => Promise.resolve({ items: 0 }),
  };
  const sync = (id: string, body: unknown) =>
    call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, { token: h.tokens.trigger, body });

  it('a verify answers 202 and plans the datasets that verify; a second one is a 409', async () => {
    if (!h.engine.ctx.registry.has(lister.name)) h.engine.ctx.registry.register(lister, normalizedSink(h.db));
    const created = await call(h.url, 'POST', '/api/v1/integrations', {
      token: h.tokens.admin,
      body: { provider: 'apiverify', name: 'lists', sources: ['a', 'b'], datasets: ['work-items', 'commits'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const first = await sync(created.body.id, { mode: 'verify' });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const run = await call(h.url, 'GET', `/api/v1/sync-runs/${first.body.sync_run_id}`, { token: h.tokens.read });
    expect(run.body).toMatchObject({ run: { mode: 'verify' } });
    const { rows } = await h.db.query<{ dataset_key: string; since_at: Date | null; n: number }>(
      `SELECT dataset_key, since_at, count(*)::int AS n FROM ${h.db.schema.sync_run_units}
        WHERE sync_run_id = $1 GROUP BY 1, 2`,
      [first.body.sync_run_id],
    );
    expect(rows).toEqual([{ dataset_key: 'work-items', since_at: null, n: 2 }]);

    const before = await tableCounts(h.db);
    const second = await sync(created.body.id, { mode: 'verify' });
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({
      code: 'run_conflict',
      details: { existing_run_id: first.body.sync_run_id, mode: 'verify' },
    });
    expect(await tableCounts(h.db)).toEqual(before);
  });

  it('a verify of an integration whose provider verifies none of its datasets is a 400 on mode naming it', async () => {
    const id = await newIntegration();
    const before = await tableCounts(h.db);
    const r = await sync(id, { mode: 'verify' });
    expect(r.status).toBe(400);
    expect(isErrorShape(r.body)).toBe(true);
    expect(r.body.error.details.field).toBe('mode');
    expect(r.body.error.message).toContain('"synthetic"');
    expect(await tableCounts(h.db)).toEqual(before);
  });
});
