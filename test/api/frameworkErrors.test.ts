/**
 * Answers given before (or instead of) a route: non-JSON bodies, unreadable URLs, over-long path
 * segments, bad JSON, bodies too large, unknown paths and wrong methods. Each is in the error
 * shape, carries the same security headers as any other answer, and repeats nothing of the request.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, startApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { systemClock } from '../../src/clock.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';
import { isErrorShape, SYNTHETIC, tableCounts } from './helpers.js';

/** Put into every bad request; no answer may contain it. */
const MARK = 'zq7mark';
const NONE = '00000000-0000-4000-8000-000000000000';

let te: TestEngine;
let app: FastifyInstance;
let auth: { authorization: string };
/** Security headers of an ordinary answer, which every error must carry too. */
let security: Record<string, string>;
let integrationId: string;

beforeAll(async () => {
  te = await openTestEngine();
  app = await buildServer({ engine: te.engine, rateLimit: false });
  const token = await createApiToken(te.t.db, systemClock, { orgId: 'org-a', scopes: ['admin'], name: 'admin' });
  auth = { authorization: `Bearer ${token.token}` };
  const ok = await app.inject({ method: 'GET', url: '/healthz' });
  security = pickSecurity(ok.headers);
  const created = await app.inject({ method: 'POST', url: '/api/v1/integrations', headers: auth, payload: SYNTHETIC });
  integrationId = created.json<{ id: string }>().id;
});
afterAll(async () => {
  await app?.close();
  await te?.close();
});

function pickSecurity(headers: LightMyRequestResponse['headers'] | Headers): Record<string, string> {
  const get = (k: string) => (headers instanceof Headers ? headers.get(k) : headers[k]);
  const out: Record<string, string> = {};
  for (const k of [
    'content-security-policy',
    'cross-origin-opener-policy',
    'cross-origin-resource-policy',
    'origin-agent-cluster',
    'referrer-policy',
    'strict-transport-security',
    'x-content-type-options',
    'x-dns-prefetch-control',
    'x-download-options',
    'x-frame-options',
    'x-permitted-cross-domain-policies',
    'x-xss-protection',
  ]) {
    const v = get(k);
    if (typeof v === 'string') out[k] = v;
  }
  return out;
}

/** The answer is `status`/`code` in the error shape, with the usual headers and nothing of the request. */
function expectRefusal(r: LightMyRequestResponse, status: number, code: string): void {
  expect(r.statusCode, r.body).toBe(status);
  const body: unknown = JSON.parse(r.body);
  expect(isErrorShape(body), r.body).toBe(true);
  expect((body as { error: { code: string } }).error.code).toBe(code);
  expect(r.body).not.toContain(MARK);
  expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(typeof r.headers['x-request-id']).toBe('string');
  expect(pickSecurity(r.headers)).toEqual(security);
}

it('the reference answer carries helmet headers', () => {
  expect(security['content-security-policy']).toBeTruthy();
  expect(security['x-content-type-options']).toBe('nosniff');
  expect(security['x-frame-options']).toBeTruthy();
});

describe('request bodies are JSON only', () => {
  const writes = (): Array<[string, string, unknown]> => [
    ['POST', '/api/v1/integrations', SYNTHETIC],
    ['POST', `/api/v1/integrations/${integrationId}/sync`, { mode: 'incremental' }],
    [
      'POST',
      `/api/v1/integrations/${integrationId}/backfill`,
      { since: '2026-01-01T00:00:00Z', before: '2026-01-02T00:00:00Z' },
    ],
    ['POST', `/api/v1/sync-runs/${NONE}/cancel`, {}],
    ['POST', '/api/v1/schedules', { integration_id: integrationId, cron: '@hourly' }],
    ['PATCH', `/api/v1/schedules/${NONE}`, { enabled: false }],
    ['DELETE', `/api/v1/schedules/${NONE}`, {}],
  ];

  it.each(['text/plain', `text/plain; charset=${MARK}`, 'application/xml', `application/${MARK}`, 'text/html'])(
    '%s is a 415 on every write, and nothing is written',
    async (contentType) => {
      for (const [method, url, json] of writes()) {
        const before = await tableCounts(te.t.db);
        const r = await app.inject({
          method: method as 'POST',
          url,
          headers: { ...auth, 'content-type': contentType },
          payload: JSON.stringify(json),
        });
        expectRefusal(r, 415, 'unsupported_media_type');
        expect(await tableCounts(te.t.db), `${method} ${url}`).toEqual(before);
      }
    },
  );

  it('a JSON body with a charset parameter is still JSON', async () => {
    const r = await app.inject({
      method: 'POST',
      url: `/api/v1/integrations/${integrationId}/sync`,
      headers: { ...auth, 'content-type': 'application/json; charset=utf-8' },
      payload: JSON.stringify({ mode: 'incremental' }),
    });
    expect(r.statusCode, r.body).toBe(202);
  });

  it('bad JSON and bodies too large answer in the same shape without quoting the body', async () => {
    const headers = { ...auth, 'content-type': 'application/json' };
    const url = `/api/v1/integrations/${integrationId}/sync`;
    expectRefusal(await app.inject({ method: 'POST', url, headers, payload: `{"${MARK}": ` }), 400, 'invalid_json');
    const huge = JSON.stringify({ mode: 'incremental', [MARK]: 'x'.repeat(70_000) });
    expectRefusal(await app.inject({ method: 'POST', url, headers, payload: huge }), 413, 'payload_too_large');
  });
});

describe('URLs the router cannot take', () => {
  it.each([
    ['GET', `/api/v1/runs/${MARK}%E0%A4%A`],
    ['GET', `/api/v1/sync-runs/${MARK}%E0%A4%A`],
    ['GET', `/api/v1/sync-runs/${NONE}/units/${MARK}%`],
    ['POST', `/api/v1/sync-runs/${MARK}%ZZ/cancel`],
    ['DELETE', `/api/v1/schedules/%C0%AF${MARK}`],
    ['GET', `/${MARK}%E0`],
  ])('a malformed percent-encoding: %s %s', async (method, url) => {
    const before = await tableCounts(te.t.db);
    const r = await app.inject({
      method: method as 'GET',
      url,
      headers: { ...auth, 'content-type': 'application/json' },
    });
    expectRefusal(r, 400, 'invalid_url');
    expect(await tableCounts(te.t.db)).toEqual(before);
  });

  it('an over-long path segment', async () => {
    const r = await app.inject({ method: 'GET', url: `/api/v1/sync-runs/${MARK}${'a'.repeat(1500)}`, headers: auth });
    expectRefusal(r, 414, 'uri_too_long');
  });

  it("keeps the caller's request id", async () => {
    const r = await app.inject({
      method: 'GET',
      url: '/api/v1/runs/%E0%A4%A',
      headers: { 'x-request-id': 'bad-url-1' },
    });
    expectRefusal(r, 400, 'invalid_url');
    expect(r.headers['x-request-id']).toBe('bad-url-1');
  });

  it('the same over a real socket', async () => {
    const server = await startApiServer({ engine: te.engine, host: '127.0.0.1', port: 0, rateLimit: false });
    try {
      const res = await fetch(`${server.url}/api/v1/runs/${MARK}%E0%A4%A`);
      const text = await res.text();
      expect(res.status).toBe(400);
      expect(JSON.parse(text).error.code).toBe('invalid_url');
      expect(text).not.toContain(MARK);
      expect(pickSecurity(res.headers)).toEqual(security);
    } finally {
      await server.close();
    }
  });
});

describe('no route', () => {
  it('an unknown path is a 404 that does not repeat it', async () => {
    for (const url of [`/api/v1/${MARK}`, `/api/v1/integrations/${NONE}/${MARK}?q=${MARK}`, `/${MARK}<script>`]) {
      expectRefusal(await app.inject({ method: 'GET', url, headers: auth }), 404, 'not_found');
    }
  });

  it('a known path with another method is a 405 listing the methods it takes', async () => {
    const cases: Array<[string, string, string]> = [
      ['PUT', '/api/v1/integrations', 'GET, HEAD, POST'],
      ['PUT', `/api/v1/integrations/${NONE}`, 'DELETE, GET, HEAD'],
      ['GET', `/api/v1/sync-runs/${MARK}/cancel`, 'POST'],
      ['PUT', `/api/v1/schedules/${MARK}`, 'DELETE, GET, HEAD, PATCH'],
      ['OPTIONS', '/healthz', 'GET, HEAD'],
    ];
    for (const [method, url, allow] of cases) {
      const r = await app.inject({ method: method as 'GET', url, headers: auth });
      expectRefusal(r, 405, 'method_not_allowed');
      expect(r.headers.allow, `${method} ${url}`).toBe(allow);
    }
  });
});
