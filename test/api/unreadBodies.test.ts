/**
 * An endpoint that reads no body (DELETE /schedules/:id) ignores whatever JSON was sent with it,
 * however deeply nested: it is not part of the Idempotency-Key fingerprint either. Found by the
 * API fuzz: a DELETE with 19,000 nested arrays overflowed the stack while fingerprinting (a 500).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { canonicalJson } from '../../src/api/idempotency.js';
import { buildServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { systemClock } from '../../src/clock.js';
import { ApiError } from '../../src/api/errors.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';
import { SYNTHETIC } from './helpers.js';

let te: TestEngine;
let app: FastifyInstance;
let headers: Record<string, string>;
let integrationId: string;

beforeAll(async () => {
  te = await openTestEngine();
  app = await buildServer({ engine: te.engine, rateLimit: false });
  const token = await createApiToken(te.t.db, systemClock, { orgId: 'org-a', scopes: ['admin'], name: 'admin' });
  headers = { authorization: `Bearer ${token.token}`, 'content-type': 'application/json' };
  const r = await app.inject({ method: 'POST', url: '/api/v1/integrations', headers, payload: SYNTHETIC });
  integrationId = r.json<{ id: string }>().id;
});
afterAll(async () => {
  await app?.close();
  await te?.close();
});

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

async function newSchedule(): Promise<string> {
  const r = await app.inject({
    method: 'POST',
    url: '/api/v1/schedules',
    headers,
    payload: { integration_id: integrationId, cron: '@hourly' },
  });
  expect(r.statusCode, r.body).toBe(201);
  return r.json<{ id: string }>().id;
}

it('DELETE with a deeply nested body it does not read deletes, under an Idempotency-Key too', async () => {
  for (const key of [undefined, 'delete-deep-1']) {
    const id = await newSchedule();
    const r = await app.inject({
      method: 'DELETE',
      url: `/api/v1/schedules/${id}`,
      headers: key ? { ...headers, 'idempotency-key': key } : headers,
      payload: deep(20_000),
    });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json<{ id: string }>().id).toBe(id);
  }
});

it('the ignored body is not part of the fingerprint: another body with the same key replays', async () => {
  const id = await newSchedule();
  const send = (payload: string) =>
    app.inject({
      method: 'DELETE',
      url: `/api/v1/schedules/${id}`,
      headers: { ...headers, 'idempotency-key': 'delete-deep-2' },
      payload,
    });
  const first = await send('{"a":1}');
  expect(first.statusCode, first.body).toBe(200);
  const again = await send('{"b":2}');
  expect(again.statusCode, again.body).toBe(200);
  expect(again.headers['idempotent-replayed']).toBe('true');
});

it('canonicalJson refuses a value nested too deep with a 400 instead of overflowing the stack', () => {
  expect(canonicalJson(JSON.parse(deep(64)))).toBe(deep(64));
  let err: unknown;
  try {
    canonicalJson(JSON.parse(deep(20_000)));
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).status).toBe(400);
});
