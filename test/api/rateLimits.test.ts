/**
 * Request budgets: failed authentications are counted per client address and, once an address has
 * used its budget, answer 429 before any token lookup; authenticated requests are counted per token
 * id; with Redis, two servers count together.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { systemClock } from '../../src/clock.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { startApiServer, type ApiServerOptions, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken, generateToken } from '../../src/api/tokens.js';
import { countingDb, type CountingDb } from '../helpers/countingDb.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { call, isErrorShape, openApiHarness, type ApiHarness } from './helpers.js';

/** The statement that looks a token up (authenticateTokenHash). */
const LOOKUP = 'WHERE token_hash = $1';
const PATH = '/api/v1/integrations';

describe('failed authentications, per client address', () => {
  let t: TestDatabase;
  let counting: CountingDb;
  let engine: Engine;
  let server: RunningApiServer | undefined;
  let valid: { token: string; id: string };

  beforeAll(async () => {
    t = await createTestDatabase();
    counting = countingDb(t.db);
    engine = await Engine.open({
      settings: testSettings(),
      db: counting.db,
      broker: new InProcessBroker(),
      logger: silentLogger(),
      migrate: false,
    });
    const made = await createApiToken(t.db, systemClock, { orgId: 'org-rl', scopes: ['read'] });
    valid = { token: made.token, id: made.row.id };
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  afterAll(async () => {
    await engine?.close();
    await t?.drop();
  });

  /** A server that trusts X-Forwarded-For, so each test can speak from addresses of its own. */
  async function serve(rateLimit: ApiServerOptions['rateLimit']): Promise<string> {
    server = await startApiServer({ engine, host: '127.0.0.1', port: 0, trustProxy: true, rateLimit });
    return server.url;
  }
  const from = (address: string, token?: string) => ({
    token,
    headers: { 'x-forwarded-for': address },
  });

  it('rotating made-up tokens from one address get 429 after the budget and stop costing lookups', async () => {
    const url = await serve({ max: 1000, timeWindowMs: 60_000, authFailureMax: 5 });
    const lookups = counting.count(LOOKUP);
    const statuses: number[] = [];
    let last = null as Awaited<ReturnType<typeof call>> | null;
    for (let i = 0; i < 20; i++) {
      last = await call(url, 'GET', PATH, from('198.51.100.7', generateToken()));
      statuses.push(last.status);
    }
    expect(statuses).toEqual([...Array<number>(5).fill(401), ...Array<number>(15).fill(429)]);
    expect(counting.count(LOOKUP) - lookups).toBe(5);
    expect(isErrorShape(last!.body)).toBe(true);
    expect(last!.body.error).toMatchObject({ code: 'rate_limited', details: { limit: 5 } });
    expect(last!.body.error.details.retry_after_seconds).toBeGreaterThan(0);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);

    // Requests without a token, or with a malformed header, are failures of the address too.
    expect((await call(url, 'GET', PATH, from('198.51.100.7'))).status).toBe(429);
    expect(
      (await call(url, 'GET', PATH, { headers: { 'x-forwarded-for': '198.51.100.7', authorization: 'Basic eA==' } }))
        .status,
    ).toBe(429);
    // Another address is not affected: its live token works and its failures have their own budget.
    expect((await call(url, 'GET', PATH, from('203.0.113.9', valid.token))).status).toBe(200);
    expect((await call(url, 'GET', PATH, from('203.0.113.9', generateToken()))).status).toBe(401);
    // Public routes are never limited.
    expect((await call(url, 'GET', '/healthz', from('198.51.100.7'))).status).toBe(200);
  });

  it('requests without a token are limited per address as well', async () => {
    const url = await serve({ max: 1000, timeWindowMs: 60_000, authFailureMax: 3 });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await call(url, 'GET', PATH, from('198.51.100.8'))).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
  });

  it("a live token's requests do not use the address's failure budget", async () => {
    const url = await serve({ max: 1000, timeWindowMs: 60_000, authFailureMax: 2 });
    for (let i = 0; i < 10; i++)
      expect((await call(url, 'GET', PATH, from('198.51.100.9', valid.token))).status).toBe(200);
    expect((await call(url, 'GET', PATH, from('198.51.100.9', generateToken()))).status).toBe(401);
  });

  it('authenticated requests are counted per token, from whatever address they come', async () => {
    const url = await serve({ max: 3, timeWindowMs: 60_000 });
    const other = await createApiToken(t.db, systemClock, { orgId: 'org-rl', scopes: ['read'] });
    const statuses = [];
    for (const address of ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4', '192.0.2.5']) {
      statuses.push((await call(url, 'GET', PATH, from(address, valid.token))).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const ok = await call(url, 'GET', PATH, from('192.0.2.1', other.token));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-ratelimit-limit')).toBe('3');
    expect(ok.headers.get('x-ratelimit-remaining')).toBe('2');
  });

  it('the default failure budget is a tenth of the request budget', async () => {
    const url = await serve({ max: 20, timeWindowMs: 60_000 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(url, 'GET', PATH, from('198.51.100.10'))).status);
    expect(statuses).toEqual([401, 401, 429]);
  });
});

describe('with Redis, replicas share the counters', () => {
  let h: ApiHarness;
  let second: RunningApiServer;
  let redis: Redis;
  const keyPrefix = `${uniquePrefix('rate')}:rate-limit:`;

  beforeAll(async () => {
    const rateLimit = { max: 4, timeWindowMs: 60_000, authFailureMax: 3, redisUrl: REDIS_URL, keyPrefix };
    h = await openApiHarness({ server: { rateLimit } });
    second = await startApiServer({ engine: h.engine, host: '127.0.0.1', port: 0, rateLimit });
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    if (redis) {
      const keys = await redis.keys(`${keyPrefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
    await second?.close();
    await h?.close();
  });

  it('requests of one token split across two servers hit the limit together', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const url = i % 2 === 0 ? h.url : second.url;
      statuses.push((await call(url, 'GET', PATH, { token: h.tokens.read })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });

  it('failed authentications split across two servers use one budget', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const url = i % 2 === 0 ? h.url : second.url;
      statuses.push((await call(url, 'GET', PATH, { token: generateToken() })).status);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
  });

  it("keeps the counters under the install's prefix, named by token id and address, never by the token", async () => {
    const keys = await redis.keys(`${keyPrefix}*`);
    const { rows } = await h.db.query<{ id: string; token_hash: string }>(
      'SELECT id, token_hash FROM syncrelay.api_tokens WHERE org_id = $1 AND $2 = ANY(scopes) AND scopes = $3',
      ['org-a', 'read', ['read']],
    );
    const read = rows[0]!;
    expect(keys.some((k) => k.endsWith(`token:${read.id}`))).toBe(true);
    expect(keys.some((k) => k.endsWith('addr:127.0.0.1'))).toBe(true);
    for (const k of keys) {
      expect(k).not.toContain(read.token_hash);
      expect(k).not.toContain(h.tokens.read);
    }
  });
});
