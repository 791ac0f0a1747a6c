/** Bad input is a 4xx naming the field and writes nothing; unexpected errors are a generic 500. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiPlugin } from '../../src/api/server.js';
import { call, isErrorShape, openApiHarness, SYNTHETIC, tableCounts, type ApiHarness, type Reply } from './helpers.js';

const responses: { url: string; status: number }[] = [];
const plugin: ApiPlugin = (app) => {
  app.get('/api/v1/test/boom', { config: { scope: 'read' } }, async () => {
    throw new Error('secret detail: password=hunter2');
  });
  app.get('/api/v1/test/whoami', { config: { scope: 'read' } }, async (request) => ({ org: request.principal?.orgId }));
  app.get('/api/v1/test/undeclared', async () => ({ ok: true }));
};

let h: ApiHarness;
let id: string;
let runId: string;
beforeAll(async () => {
  h = await openApiHarness({
    server: {
      maxBackfillDays: 30,
      plugins: [plugin],
      onResponse: (request, reply, done) => {
        responses.push({ url: request.url, status: reply.statusCode });
        done();
      },
    },
  });
  const r = await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC });
  id = r.body.id;
  const t = await call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, {
    token: h.tokens.admin,
    body: { mode: 'incremental' },
  });
  runId = t.body.sync_run_id;
});
afterAll(async () => {
  await h?.close();
});

/** Sends, expects `status` with the error shape naming `field`, and checks nothing was written. */
async function rejects(status: number, field: string | null, send: () => Promise<Reply>): Promise<Reply> {
  const before = await tableCounts(h.db);
  const r = await send();
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(isErrorShape(r.body), JSON.stringify(r.body)).toBe(true);
  if (field !== null) expect(r.body.error.details.field).toBe(field);
  expect(JSON.stringify(r.body)).not.toMatch(/\n\s+at |"stack"/);
  expect(await tableCounts(h.db)).toEqual(before);
  return r;
}

const post = (path: string, body: unknown) => () => call(h.url, 'POST', path, { token: h.tokens.admin, body });
const raw =
  (path: string, text: string, contentType = 'application/json') =>
  () =>
    call(h.url, 'POST', path, { token: h.tokens.admin, raw: text, headers: { 'content-type': contentType } });
const get = (path: string) => () => call(h.url, 'GET', path, { token: h.tokens.admin });

const window = { since: '2026-01-01T00:00:00Z', before: '2026-01-15T00:00:00Z' };

describe('trigger bodies', () => {
  const sync = () => `/api/v1/integrations/${id}/sync`;
  const bf = () => `/api/v1/integrations/${id}/backfill`;

  it.each([
    ['mode of the wrong type', 'mode', { mode: 5 }],
    ['mode backfill on /sync', 'mode', { mode: 'backfill' }],
    ['missing mode', 'mode', {}],
    ['force not a boolean', 'force', { mode: 'incremental', force: 'yes' }],
    ['an unknown field', 'since', { mode: 'incremental', since: '2026-01-01T00:00:00Z' }],
    ['another unknown field', 'extra', { mode: 'incremental', extra: 1 }],
  ])('sync: %s', async (_, field, body) => {
    await rejects(400, field, post(sync(), body));
  });

  it.each([
    ['since missing', 'since', { before: window.before }],
    ['since a number', 'since', { ...window, since: 1767225600 }],
    ['since without a zone', 'since', { ...window, since: '2026-01-01T00:00:00' }],
    ['since not a date', 'since', { ...window, since: '2026-02-30T00:00:00Z' }],
    ['since in year 0', 'since', { ...window, since: '0000-12-01T00:00:00Z' }],
    ['since ≥ before', 'since', { since: window.before, before: window.since }],
    ['since = before', 'since', { since: window.since, before: window.since }],
    [
      'a window over the maximum (30 days here)',
      'before',
      { since: '2026-01-01T00:00:00Z', before: '2026-02-01T00:00:01Z' },
    ],
    ['datasets not a list', 'datasets', { ...window, datasets: 'work-items' }],
    ['a dataset of the wrong type', 'datasets.0', { ...window, datasets: [1] }],
    ['an empty dataset list', 'datasets', { ...window, datasets: [] }],
    ['an unknown dataset', 'datasets', { ...window, datasets: ['nope'] }],
    ['a dataset not enabled on the integration', 'datasets', { ...window, datasets: ['members'] }],
    ['an unknown field', 'mode', { ...window, mode: 'backfill' }],
  ])('backfill: %s', async (_, field, body) => {
    await rejects(400, field, post(bf(), body));
  });

  it('a window of exactly the maximum is accepted', async () => {
    const r = await call(h.url, 'POST', bf(), {
      token: h.tokens.admin,
      body: { since: '2026-01-01T00:00:00Z', before: '2026-01-31T00:00:00Z', force: true },
    });
    expect(r.status).toBe(202);
  });

  it('bodies that are not a JSON object', async () => {
    await rejects(400, 'body', raw(sync(), '{"mode": "incremental"'));
    await rejects(400, 'body', raw(sync(), ''));
    await rejects(400, 'body', raw(sync(), 'null'));
    await rejects(400, 'body', raw(sync(), '["incremental"]'));
    await rejects(400, 'body', raw(sync(), '{"__proto__": {"mode": "incremental"}}'));
    await rejects(400, 'body', () => call(h.url, 'POST', sync(), { token: h.tokens.admin }));
    await rejects(415, null, raw(sync(), '<mode>incremental</mode>', 'application/xml'));
  });

  it('an oversized body is a 413 in the error shape', async () => {
    const r = await rejects(413, null, post(bf(), { ...window, datasets: Array(20_000).fill('work-items') }));
    expect(r.body.error.code).toBe('payload_too_large');
  });
});

describe('malformed ids in paths are 400s', () => {
  const bad = [
    'not-a-uuid',
    '1234',
    `${'0'.repeat(8)}-0000-0000-0000-00000000000g`,
    'x'.repeat(600),
    '%27%20OR%201=1--',
  ];
  it.each([
    ['GET', (x: string) => `/api/v1/integrations/${x}`],
    ['POST', (x: string) => `/api/v1/integrations/${x}/sync`],
    ['POST', (x: string) => `/api/v1/integrations/${x}/backfill`],
    ['POST', (x: string) => `/api/v1/sync-runs/${x}/cancel`],
    ['GET', (x: string) => `/api/v1/sync-runs/${x}`],
    ['GET', (x: string) => `/api/v1/sync-runs/${x}/units`],
  ] as const)('%s %s', async (method, path) => {
    for (const x of bad) {
      const body = method === 'POST' ? (path('x').endsWith('sync') ? { mode: 'incremental' } : window) : undefined;
      await rejects(400, 'id', () => call(h.url, method, path(x), { token: h.tokens.admin, body }));
    }
  });

  it('a well-formed id that does not exist is a 404', async () => {
    const none = '00000000-0000-4000-8000-000000000000';
    await rejects(404, null, get(`/api/v1/integrations/${none}`));
    await rejects(404, null, post(`/api/v1/integrations/${none}/sync`, { mode: 'incremental' }));
    await rejects(404, null, post(`/api/v1/sync-runs/${none}/cancel`, {}));
    await rejects(404, null, get(`/api/v1/sync-runs/${none}/units`));
  });
});

describe('query strings', () => {
  it.each([
    ['/api/v1/job-runs?limit=0', 'limit'],
    ['/api/v1/job-runs?limit=101', 'limit'],
    ['/api/v1/job-runs?limit=ten', 'limit'],
    ['/api/v1/job-runs?limit=1&limit=2', 'limit'],
    ['/api/v1/job-runs?status=done', 'status'],
    ['/api/v1/job-runs?triggered_by=cron', 'triggered_by'],
    ['/api/v1/job-runs?integration_id=42', 'integration_id'],
    ['/api/v1/job-runs?created_after=yesterday', 'created_after'],
    ['/api/v1/job-runs?cursor=bm90LWEtY3Vyc29y', 'cursor'],
    [
      '/api/v1/job-runs?cursor=WyJ0IiwiOTk5OTk5OTk5OTk5OTk5OTk5IiwiMDAwMDAwMDAtMDAwMC00MDAwLTgwMDAtMDAwMDAwMDAwMDAwIl0',
      'cursor',
    ],
    ['/api/v1/job-runs?cursor=%00', 'cursor'],
    ['/api/v1/job-runs?sort=asc', 'sort'],
    ['/api/v1/integrations?all=1', 'all'],
    ['/api/v1/reconciler/passes?limit=-1', 'limit'],
  ])('%s', async (path, field) => {
    await rejects(400, field, get(path));
  });

  it('unit listings check their cursor and status', async () => {
    await rejects(400, 'cursor', get(`/api/v1/sync-runs/${runId}/units?cursor=abc`));
    await rejects(400, 'status', get(`/api/v1/sync-runs/${runId}/units?status=lost`));
  });
});

describe('integration bodies', () => {
  const path = '/api/v1/integrations';
  it.each([
    ['an unknown provider', 'provider', { ...SYNTHETIC, provider: 'asana' }],
    ['an unknown dataset', 'datasets', { ...SYNTHETIC, datasets: ['teams', 'prs'] }],
    ['no datasets', 'datasets', { ...SYNTHETIC, datasets: [] }],
    ['duplicate datasets', 'datasets', { ...SYNTHETIC, datasets: ['teams', 'teams'] }],
    ['duplicate sources', 'sources', { ...SYNTHETIC, sources: ['a', 'a'] }],
    ['a blank source', 'sources.0', { ...SYNTHETIC, sources: ['  '] }],
    ['a blank name', 'name', { ...SYNTHETIC, name: ' ' }],
    ['a name with NUL', 'name', { ...SYNTHETIC, name: 'a\u0000b' }],
    ['a name with a lone surrogate', 'name', { ...SYNTHETIC, name: 'a\ud800b' }],
    ['a name too long', 'name', { ...SYNTHETIC, name: 'n'.repeat(201) }],
    ['sources missing', 'sources', { ...SYNTHETIC, sources: undefined }],
    ['config not an object', 'config', { ...SYNTHETIC, config: [1] }],
    ['an unknown config key', 'config.colour', { ...SYNTHETIC, config: { colour: 'red' } }],
    ['a config value of the wrong type', 'config.itemsPerDay', { ...SYNTHETIC, config: { itemsPerDay: 'many' } }],
    ['a config with NUL inside', 'config', { ...SYNTHETIC, config: { impersonate: 'x\u0000' } }],
    [
      'a config nested too deep',
      'config',
      { ...SYNTHETIC, config: { seed: JSON.parse('['.repeat(40) + ']'.repeat(40)) } },
    ],
    ['an org in the body', 'org_id', { ...SYNTHETIC, org_id: 'other' }],
  ])('%s', async (_, field, body) => {
    await rejects(400, field, post(path, body));
  });
});

describe('unexpected errors and extension points', () => {
  it('a handler that throws answers a generic 500 with the request id, never the error', async () => {
    const r = await call(h.url, 'GET', '/api/v1/test/boom', {
      token: h.tokens.read,
      headers: { 'x-request-id': 'boom-1' },
    });
    expect(r.status).toBe(500);
    expect(isErrorShape(r.body)).toBe(true);
    expect(r.body.error.code).toBe('internal_error');
    expect(r.body.error.details).toEqual({ request_id: 'boom-1' });
    expect(JSON.stringify(r.body)).not.toMatch(/hunter2|secret|at .*\.ts/);
  });

  it("plugin routes get the token's principal; a route without a declared scope needs admin", async () => {
    const who = await call(h.url, 'GET', '/api/v1/test/whoami', { token: h.tokens.read });
    expect(who.body).toEqual({ org: 'org-a' });
    expect((await call(h.url, 'GET', '/api/v1/test/undeclared', { token: h.tokens.read })).status).toBe(403);
    expect((await call(h.url, 'GET', '/api/v1/test/undeclared', { token: h.tokens.admin })).status).toBe(200);
  });

  it('onResponse sees every answer with its status', async () => {
    await call(h.url, 'GET', '/healthz');
    expect(responses.some((x) => x.url === '/healthz' && x.status === 200)).toBe(true);
    expect(responses.some((x) => x.url === '/api/v1/test/boom' && x.status === 500)).toBe(true);
  });
});
