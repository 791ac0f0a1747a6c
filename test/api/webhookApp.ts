/**
 * What the webhook API tests share: an engine on the test's own database (in-process broker, no
 * worker, trace logs kept in memory), the API server in process (no rate limit), an admin token of
 * ORG_A, and `api()` to call it as that token.
 */
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { systemClock } from '../../src/clock.js';
import type { Db } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import { SecretKey } from '../../src/secrets/key.js';
import { testSettings } from '../helpers/engine.js';
import { memoryLogger } from '../helpers/leakScan.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { ORG_A } from './helpers.js';

export interface WebhookApp {
  t: TestDatabase;
  db: Db;
  engine: Engine;
  app: FastifyInstance;
  log: ReturnType<typeof memoryLogger>;
  /** Calls the API as the admin token, with a JSON body when one is given. */
  api(
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown>; text: string }>;
  close(): Promise<void>;
}

export async function openWebhookApp(): Promise<WebhookApp> {
  const t = await createTestDatabase();
  const log = memoryLogger('trace');
  const engine = await Engine.open({
    settings: testSettings({ secretKey: SecretKey.generate(), webhookDebounceMs: 5000 }),
    db: t.db,
    broker: new InProcessBroker(),
    logger: log.logger,
    migrate: false,
  });
  const app = await buildServer({ engine, rateLimit: false });
  await app.ready();
  const admin = (await createApiToken(t.db, systemClock, { orgId: ORG_A, scopes: ['admin'], name: 'admin' })).token;
  return {
    t,
    db: t.db,
    engine,
    app,
    log,
    async api(method, url, body) {
      const res = await app.inject({
        method,
        url,
        headers: {
          authorization: `Bearer ${admin}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      return { status: res.statusCode, body: res.json<Record<string, unknown>>(), text: res.body };
    },
    async close() {
      await app.close();
      await engine.close();
      await t.drop();
    },
  };
}
