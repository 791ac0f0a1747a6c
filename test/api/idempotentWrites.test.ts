/**
 * Idempotency-Key on every endpoint that changes something, not only triggers: creating an
 * integration, cancelling a run, and creating, changing and deleting a schedule. A repeat with the
 * same key and body answers the first answer (Idempotent-Replayed: true) and has no effect of its
 * own; the same key with another body is a 422 that writes nothing; a bad body is a 400 whatever
 * its key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, isErrorShape, openApiHarness, SYNTHETIC, tableCounts, type ApiHarness, type Reply } from './helpers.js';

let h: ApiHarness;
let integration: string;
beforeAll(async () => {
  h = await openApiHarness();
  integration = (await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC })).body.id;
});
afterAll(async () => {
  await h?.close();
});

let keys = 0;
const newKey = () => `write-${++keys}`;

function send(method: string, path: string, key: string, body?: unknown): Promise<Reply> {
  return call(h.url, method, path, { token: h.tokens.admin, body, headers: { 'idempotency-key': key } });
}

/**
 * The first answer, then the same request again: the replay must equal it and change no table.
 * With `otherBody` (valid, but not the first), the same key with it is a 422 that writes nothing.
 */
async function firstThenReplay(
  method: string,
  path: string,
  body?: unknown,
  otherBody?: unknown,
): Promise<[Reply, Reply]> {
  const key = newKey();
  const first = await send(method, path, key, body);
  expect(first.status, JSON.stringify(first.body)).toBeLessThan(300);
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  const before = await tableCounts(h.db);
  const again = await send(method, path, key, body);
  expect(again.status).toBe(first.status);
  expect(again.body).toEqual(first.body);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(await tableCounts(h.db)).toEqual(before);
  if (otherBody !== undefined) {
    const other = await send(method, path, key, otherBody);
    expect(other.status, JSON.stringify(other.body)).toBe(422);
    expect(isErrorShape(other.body)).toBe(true);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(await tableCounts(h.db)).toEqual(before);
  }
  return [first, again];
}

async function newSchedule(cron = '0 * * * *'): Promise<string> {
  const r = await call(h.url, 'POST', '/api/v1/schedules', {
    token: h.tokens.admin,
    body: { integration_id: integration, cron },
  });
  expect(r.status).toBe(201);
  return r.body.id;
}

describe('a repeated write with the same key answers the first answer and acts once', () => {
  it('POST /integrations creates one integration', async () => {
    const before = await tableCounts(h.db);
    const [first] = await firstThenReplay(
      'POST',
      '/api/v1/integrations',
      { ...SYNTHETIC, name: 'once' },
      { ...SYNTHETIC, name: 'twice' },
    );
    expect(first.status).toBe(201);
    const after = await tableCounts(h.db);
    expect(after.integrations - before.integrations).toBe(1);
    expect(after.integration_sources - before.integration_sources).toBe(SYNTHETIC.sources.length);
  });

  it('POST /sync-runs/:id/cancel cancels once: the replay says cancelled, not already_terminal', async () => {
    const run = (
      await call(h.url, 'POST', `/api/v1/integrations/${integration}/sync`, {
        token: h.tokens.admin,
        body: { mode: 'full_resync', force: true },
      })
    ).body.sync_run_id;
    const key = newKey();
    const path = `/api/v1/sync-runs/${run}/cancel`;
    const first = await send('POST', path, key);
    expect(first.status).toBe(202);
    expect(first.body.outcome).toBe('cancelled');
    const { rows: once } = await h.db.query<{ updated_at: Date }>(
      `SELECT updated_at FROM ${h.db.schema.sync_runs} WHERE id = $1`,
      [run],
    );
    const again = await send('POST', path, key);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const { rows: after } = await h.db.query<{ updated_at: Date }>(
      `SELECT updated_at FROM ${h.db.schema.sync_runs} WHERE id = $1`,
      [run],
    );
    expect(after).toEqual(once);
    // Without the key the same request is a new one.
    const fresh = await call(h.url, 'POST', path, { token: h.tokens.admin });
    expect(fresh.body.outcome).toBe('already_terminal');
  });

  it('POST /schedules creates one schedule', async () => {
    const before = await tableCounts(h.db);
    const [first] = await firstThenReplay(
      'POST',
      '/api/v1/schedules',
      { integration_id: integration, cron: '5 * * * *' },
      { integration_id: integration, cron: '6 * * * *' },
    );
    expect(first.status).toBe(201);
    expect((await tableCounts(h.db)).scheduled_jobs - before.scheduled_jobs).toBe(1);
  });

  it('PATCH /schedules/:id changes once: a replay does not undo a later change', async () => {
    const id = await newSchedule();
    const [first] = await firstThenReplay('PATCH', `/api/v1/schedules/${id}`, { enabled: false }, { enabled: true });
    expect(first.status).toBe(200);
    expect(first.body.enabled).toBe(false);
    const key = newKey();
    const change = await send('PATCH', `/api/v1/schedules/${id}`, key, { cron: '10 * * * *' });
    expect(change.body.cron).toBe('10 * * * *');
    // Someone changes it again; the replay of the first change answers as before and changes nothing.
    const later = await call(h.url, 'PATCH', `/api/v1/schedules/${id}`, {
      token: h.tokens.admin,
      body: { cron: '20 * * * *', enabled: true },
    });
    expect(later.status).toBe(200);
    const replay = await send('PATCH', `/api/v1/schedules/${id}`, key, { cron: '10 * * * *' });
    expect(replay.body).toEqual(change.body);
    const now = await call(h.url, 'GET', `/api/v1/schedules/${id}`, { token: h.tokens.read });
    expect(now.body).toMatchObject({ cron: '20 * * * *', enabled: true, updated_at: later.body.updated_at });
  });

  it('DELETE /schedules/:id deletes once: the replay answers the deleted schedule, not 404', async () => {
    const id = await newSchedule();
    const [first, again] = await firstThenReplay('DELETE', `/api/v1/schedules/${id}`);
    expect(first.status).toBe(200);
    expect(again.body.id).toBe(id);
    const gone = await call(h.url, 'DELETE', `/api/v1/schedules/${id}`, { token: h.tokens.admin });
    expect(gone.status).toBe(404);
  });

  it('one key on two endpoints is two requests: the second is a 422', async () => {
    const key = newKey();
    const id = await newSchedule();
    expect((await send('PATCH', `/api/v1/schedules/${id}`, key, { enabled: false })).status).toBe(200);
    const before = await tableCounts(h.db);
    const elsewhere = await send('DELETE', `/api/v1/schedules/${id}`, key);
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.body.error.code).toBe('idempotency_key_reused');
    expect(await tableCounts(h.db)).toEqual(before);
  });
});

describe('bad input is a 400 whatever the key', () => {
  it('a key first used with a valid body, then sent with an invalid one, is a 400 naming the field', async () => {
    const key = newKey();
    const ok = await send('POST', '/api/v1/schedules', key, { integration_id: integration, cron: '7 * * * *' });
    expect(ok.status).toBe(201);
    const before = await tableCounts(h.db);
    const bad = await send('POST', '/api/v1/schedules', key, { integration_id: integration, cron: 'not a cron' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.field).toBe('cron');
    const badIntegration = await send('POST', '/api/v1/integrations', key, { ...SYNTHETIC, provider: 'nope' });
    expect(badIntegration.status).toBe(400);
    expect(badIntegration.body.error.details.field).toBe('provider');
    expect(await tableCounts(h.db)).toEqual(before);
  });

  it('a malformed key on a write is a 400 naming the header', async () => {
    const id = await newSchedule();
    const before = await tableCounts(h.db);
    const r = await call(h.url, 'DELETE', `/api/v1/schedules/${id}`, {
      token: h.tokens.admin,
      headers: { 'idempotency-key': 'has space' },
    });
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe('Idempotency-Key');
    expect(await tableCounts(h.db)).toEqual(before);
  });
});
