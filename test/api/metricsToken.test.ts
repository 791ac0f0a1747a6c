/**
 * SYNCRELAY_METRICS_TOKEN: when set, `/metrics` answers only to that bearer (401 otherwise), and the
 * token shows in no answer and no log line; unset, `/metrics` stays open.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { systemClock } from '../../src/clock.js';
import { Engine } from '../../src/engine.js';
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { call, isErrorShape } from './helpers.js';

const TOKEN = 'metrics-secret-7f3a9c1e5b2d';

let t: TestDatabase | undefined;
let engine: Engine | undefined;
let server: RunningApiServer | undefined;
afterEach(async () => {
  await server?.close();
  await engine?.close();
  await t?.drop();
  server = engine = t = undefined;
});

/** A server over an engine with `metricsToken` in its settings; every log line is kept. */
async function serve(metricsToken: string | undefined): Promise<{ url: string; logs: string[] }> {
  t = await createTestDatabase();
  const logs: string[] = [];
  const logger = pino({ level: 'trace' }, { write: (s: string) => void logs.push(s) });
  engine = await Engine.open({
    settings: testSettings({ metricsToken }),
    db: t.db,
    broker: new InProcessBroker(),
    logger,
    migrate: false,
  });
  server = await startApiServer({ engine, host: '127.0.0.1', port: 0 });
  return { url: server.url, logs };
}

describe('GET /metrics with SYNCRELAY_METRICS_TOKEN set', () => {
  it('answers 401 without the token or with another, 200 with it; the token is never echoed or logged', async () => {
    const { url, logs } = await serve(TOKEN);
    const refused: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong-token-0000000000' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` },
      { authorization: TOKEN },
    ];
    const bodies: string[] = [];
    for (const headers of refused) {
      const r = await call(url, 'GET', '/metrics', { headers });
      expect(r.status, JSON.stringify(headers)).toBe(401);
      expect(isErrorShape(r.body)).toBe(true);
      expect(r.body.error.code).toBe('unauthorized');
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
      bodies.push(JSON.stringify(r.body));
    }
    const ok = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await ok.text()).toContain('syncrelay_outbox_rows');
    expect(logs.length).toBeGreaterThan(0);
    for (const text of [...bodies, ...logs]) expect(text).not.toContain(TOKEN.slice(0, 12));
  });

  it('is not opened by an API token', async () => {
    const { url } = await serve(TOKEN);
    const admin = await createApiToken(t!.db, systemClock, { orgId: 'org-m', scopes: ['admin'] });
    expect((await call(url, 'GET', '/metrics', { token: admin.token })).status).toBe(401);
  });
});

describe('GET /metrics without SYNCRELAY_METRICS_TOKEN', () => {
  it('is open', async () => {
    const { url } = await serve(undefined);
    const r = await fetch(`${url}/metrics`);
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('syncrelay_outbox_rows');
  });
});
