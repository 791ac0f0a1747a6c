/**
 * The leak test: a full run — API server, worker and reconciler on real PostgreSQL and Redis, the
 * synthetic provider revealing a canary credential — with the log at trace captured, every API
 * answer kept, `/metrics` scraped, every Redis key and database row dumped and the command line
 * read; none of it holds the credential in any form.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { BullMqBroker } from '../../src/broker/bullmq.js';
import { systemClock } from '../../src/clock.js';
import { Engine } from '../../src/engine.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { createSyntheticProvider, syntheticSink } from '../../src/providers/synthetic.js';
import type { UnitContext } from '../../src/sdk/types.js';
import { SecretKey } from '../../src/secrets/key.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import {
  canarySecret,
  dumpDatabase,
  dumpRedis,
  findLeaks,
  memoryLogger,
  processCommandLine,
  ResponseLog,
  secretForms,
} from '../helpers/leakScan.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';

describe('findLeaks', () => {
  it('finds a secret as is, in base64 at any alignment, base64url, hex and URL-encoded', () => {
    const secret = canarySecret('t');
    const bytes = Buffer.from(secret);
    for (let pad = 0; pad < 3; pad++) {
      const blob = Buffer.concat([Buffer.from('x'.repeat(pad)), bytes, Buffer.from('tail')]);
      expect(findLeaks(secret, { b64: blob.toString('base64') }).length).toBeGreaterThan(0);
      expect(findLeaks(secret, { b64url: blob.toString('base64url') }).length).toBeGreaterThan(0);
    }
    expect(findLeaks(secret, { hex: `\\x00${bytes.toString('hex')}ff` })).toEqual([{ source: 'hex', form: 'hex' }]);
    expect(findLeaks(secret, { raw: `a ${secret} b` }).map((l) => l.form)).toContain('raw');
    expect(findLeaks(`${secret}/+ x`, { uri: encodeURIComponent(`${secret}/+ x`) }).map((l) => l.form)).toContain(
      'uri',
    );
    expect(findLeaks(secret, { clean: 'nothing here', other: canarySecret('t') })).toEqual([]);
    expect(Object.keys(secretForms(secret))).toEqual(expect.arrayContaining(['raw', 'hex', 'base64@0', 'base64@2']));
  });
});

describe('a full run with a credential', () => {
  const first = canarySecret('ghp');
  const second = canarySecret('ghp');
  const log = memoryLogger('trace');
  const responses = new ResponseLog();
  const revealed: string[] = [];
  let t: TestDatabase;
  let prefix: string;
  let broker: BullMqBroker;
  let engine: Engine;
  let server: RunningApiServer;
  let token: string;

  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 6 });
    prefix = uniquePrefix('leak');
    broker = new BullMqBroker({ redisUrl: REDIS_URL, prefix });
    const synthetic = createSyntheticProvider();
    const registry = new ProviderRegistry().register(
      {
        ...synthetic,
        // A provider that uses its credential, and carelessly logs the credential object.
        runUnit: async (ctx: UnitContext) => {
          if (ctx.credential) revealed.push(ctx.credential.reveal());
          ctx.logger.trace({ credential: ctx.credential, credentialId: ctx.credential?.id }, 'unit has its credential');
          return synthetic.runUnit(ctx);
        },
      },
      syntheticSink(t.db),
    );
    engine = await Engine.open({
      settings: testSettings({ secretKey: SecretKey.generate(), queuePrefix: prefix, redisUrl: REDIS_URL }),
      db: t.db,
      broker,
      logger: log.logger,
      registry,
      migrate: false,
    });
    server = await startApiServer({ engine, host: '127.0.0.1', port: 0 });
    token = (await createApiToken(t.db, systemClock, { orgId: 'org-leak', scopes: ['admin'], name: 'leak' })).token;
    engine.startWorker();
    await engine.startReconciler({ scheduler: false });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await engine?.close();
    await broker?.close();
    await t?.drop();
  });

  function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const raw = typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body);
    return responses.call(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(raw === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: raw,
    });
  }

  it('leaves no trace of the credential in logs, answers, metrics, Redis, rows or the command line', async () => {
    const integration = {
      provider: 'synthetic',
      name: 'leak check',
      sources: ['team-a', 'team-b'],
      datasets: ['teams', 'work-items'],
      config: { itemsPerDay: 2, latencyMs: 0 },
      credential: first,
    };
    const created = await send('POST', '/api/v1/integrations', integration, { 'idempotency-key': 'leak-create' });
    expect(created.status).toBe(201);
    const id = (created.json as { id: string }).id;
    expect((await send('POST', '/api/v1/integrations', integration, { 'idempotency-key': 'leak-create' })).status).toBe(
      201,
    );

    // Refusals that carry the secret: each answered without it, and logged without it.
    const path = `/api/v1/integrations/${id}/credential`;
    expect((await send('PUT', path, `{"credential": ${second}}`)).status).toBe(400);
    expect((await send('PUT', path, `{"credential": "${second}`)).status).toBe(400);
    expect((await send('PUT', path, { credential: `${second}\u0007` })).status).toBe(400);
    expect((await send('PUT', path, { credential: second, [second]: second })).status).toBe(400);
    expect((await send('PUT', path, { credential: second.repeat(400) })).status).toBe(400);
    expect((await send('POST', '/api/v1/integrations', { ...integration, provider: second })).status).toBe(400);
    const wrongAuth = await responses.call(`${server.url}/api/v1/integrations`, {
      headers: { authorization: `Bearer ${second}` },
    });
    expect(wrongAuth.status).toBe(401);

    const put = await send('PUT', path, { credential: second }, { 'idempotency-key': 'leak-put' });
    expect(put.status).toBe(200);
    expect((await send('PUT', path, { credential: second }, { 'idempotency-key': 'leak-put' })).status).toBe(200);
    expect((await send('PUT', path, { credential: first }, { 'idempotency-key': 'leak-put' })).status).toBe(422);

    const trigger = await send('POST', `/api/v1/integrations/${id}/sync`, { mode: 'full_resync' });
    expect(trigger.status).toBe(202);
    const runId = (trigger.json as { sync_run_id: string }).sync_run_id;
    const done = await waitFor(
      async () => {
        const run = await send('GET', `/api/v1/sync-runs/${runId}`);
        const status = (run.json as { run?: { status?: string } }).run?.status;
        return status === 'planned' || status === 'dispatching' ? null : status;
      },
      90_000,
      250,
    );
    expect(done).toBe('success');
    await send('GET', `/api/v1/sync-runs/${runId}/units`);
    await send('GET', `/api/v1/integrations/${id}`);
    await send('GET', '/api/v1/integrations');
    await send('GET', '/api/v1/job-runs');
    await send('GET', '/api/v1/outbox/stats');
    await send('GET', '/api/v1/reconciler/passes');
    await send('GET', '/openapi.json');
    const metrics = await responses.call(`${server.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/syncrelay_/);
    expect((await send('DELETE', path)).status).toBe(200);
    expect((await send('PUT', path, { credential: first })).status).toBe(200);

    // The run really used the credential, and the log really was at trace.
    expect(revealed.length).toBeGreaterThan(0);
    expect(new Set(revealed)).toEqual(new Set([second]));
    expect(log.text()).toMatch(/"level":10/);
    expect(log.text()).toMatch(/unit has its credential/);

    const sources: Record<string, string> = {
      logs: log.text(),
      ...responses.sources(),
      ...(await dumpRedis(REDIS_URL, `${prefix}*`)),
      ...(await dumpDatabase(t.db)),
      ...processCommandLine(),
    };
    expect(Object.keys(sources).some((k) => k.startsWith('redis:'))).toBe(true);
    expect(sources['db:integration_credentials']).toMatch(/key_id/);
    expect(sources['db:idempotency_keys']).toMatch(/leak-put/);
    expect(findLeaks(first, sources)).toEqual([]);
    expect(findLeaks(second, sources)).toEqual([]);
  }, 180_000);
});
