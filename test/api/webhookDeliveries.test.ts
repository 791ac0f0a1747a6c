/**
 * GET /integrations/:id/webhook-deliveries and …/summary over HTTP (in process, real PostgreSQL):
 * a read token suffices; pages come newest first through `next_cursor`; `status` filters; the summary
 * counts the window and times delivery to data exactly; another org's integration (or none) is a 404;
 * bad input is a 400; no answer holds the webhook secret or a payload.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { systemClock } from '../../src/clock.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { SecretKey } from '../../src/secrets/key.js';
import { signWebhookBody } from '../../src/secrets/webhookSecrets.js';
import { endpoints } from '../../src/api/contracts/endpoints.js';
import { WEBHOOK_DELIVERY_STATUSES, WEBHOOK_OUTCOMES } from '../../src/store/webhookDeliveries.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { seedIntegration, seedKnownWindow } from '../helpers/webhookDeliveries.js';
import { isErrorShape, ORG_A, ORG_B } from './helpers.js';

let t: TestDatabase;
let engine: Engine;
let app: FastifyInstance;
const tokens = { admin: '', read: '', foreign: '' };
let github: string;
let seeded: string;
let secret: string;
const NOW = new Date();

beforeAll(async () => {
  t = await createTestDatabase();
  engine = await Engine.open({
    settings: testSettings({ secretKey: SecretKey.generate() }),
    db: t.db,
    broker: new InProcessBroker(),
    logger: silentLogger(),
    migrate: false,
  });
  app = await buildServer({ engine, rateLimit: false });
  await app.ready();
  const token = async (orgId: string, scopes: string[]) =>
    (await createApiToken(t.db, systemClock, { orgId, scopes, name: scopes.join('+') })).token;
  tokens.admin = await token(ORG_A, ['admin']);
  tokens.read = await token(ORG_A, ['read']);
  tokens.foreign = await token(ORG_B, ['admin']);

  const created = await get('POST', '/api/v1/integrations', tokens.admin, {
    provider: 'github',
    name: 'Acme GitHub',
    sources: ['acme/widgets'],
    datasets: ['work-items'],
    config: {},
  });
  expect(created.status, created.text).toBe(201);
  github = created.body.id as string;
  const made = await get('POST', `/api/v1/integrations/${github}/webhook-secret`, tokens.admin, {});
  expect(made.status, made.text).toBe(201);
  secret = made.body.secret as string;

  seeded = await seedIntegration(t.db, ORG_A, 'github', 'Seeded');
  await seedKnownWindow(t.db, ORG_A, seeded, NOW);
});
afterAll(async () => {
  await app?.close();
  await engine?.close();
  await t?.drop();
});

async function get(method: 'GET' | 'POST', url: string, token: string | null, body?: unknown) {
  const res = await app.inject({
    method,
    url,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: res.statusCode, body: res.json<Record<string, unknown>>(), text: res.body };
}

function deliver(deliveryId: string, payload: Record<string, unknown>) {
  const body = JSON.stringify(payload);
  return app.inject({
    method: 'POST',
    url: `/api/v1/webhooks/github/${github}`,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': signWebhookBody(body, secret),
      'x-github-event': 'issues',
      'x-github-delivery': deliveryId,
    },
    payload: body,
  });
}

const list = (id: string, q = '', token = tokens.read) =>
  get('GET', `/api/v1/integrations/${id}/webhook-deliveries${q}`, token);
const summary = (id: string, q = '', token = tokens.read) =>
  get('GET', `/api/v1/integrations/${id}/webhook-deliveries/summary${q}`, token);

describe('listing deliveries', () => {
  it("lists a GitHub integration's received and redelivered deliveries with a read token, no secret", async () => {
    const payload = {
      action: 'opened',
      issue: { id: 1001, number: 1, title: 'A confidential title', state: 'open' },
      repository: { id: 42, name: 'widgets', full_name: 'acme/widgets', owner: { login: 'acme' } },
    };
    expect((await deliver('gh-delivery-1', payload)).statusCode).toBe(202);
    expect((await deliver('gh-delivery-1', payload)).statusCode).toBe(202);
    const res = await list(github);
    expect(res.status, res.text).toBe(200);
    const items = res.body.items as Record<string, unknown>[];
    expect(items.map((d) => [d.delivery_id, d.status, d.event, d.action, d.source])).toEqual([
      ['gh-delivery-1', 'duplicate', 'issues', 'opened', 'acme/widgets'],
      ['gh-delivery-1', 'received', 'issues', 'opened', 'acme/widgets'],
    ]);
    expect(items[1]!.outcome).not.toBeNull();
    expect(res.body.next_cursor).toBeNull();
    expect(endpoints.listWebhookDeliveries.success.schema.safeParse(res.body).success).toBe(true);
    // Neither the secret, nor the payload, nor the org.
    for (const text of [res.text, (await summary(github)).text]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('confidential');
      expect(text).not.toContain('org_id');
    }
  });

  it('pages newest first through next_cursor, each delivery once', async () => {
    const seen: Record<string, unknown>[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list(seeded, `?limit=5${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status, res.text).toBe(200);
      seen.push(...(res.body.items as Record<string, unknown>[]));
      cursor = res.body.next_cursor as string | null;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(new Set(seen.map((d) => d.id)).size).toBe(19);
    const times = seen.map((d) => Date.parse(d.received_at as string));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('filters by status', async () => {
    const rejected = await list(seeded, '?status=rejected');
    expect(rejected.status).toBe(200);
    expect(rejected.body.items).toMatchObject([
      { status: 'rejected', delivery_id: null, outcome: null, summary: { reason: 'the body is not a JSON object' } },
    ]);
    const duplicates = await list(seeded, '?status=duplicate');
    expect((duplicates.body.items as unknown[]).length).toBe(2);
  });

  it('refuses a bad status, cursor or limit with a 400', async () => {
    for (const q of ['?status=armed', '?status=RECEIVED', '?cursor=not-ours', '?limit=0', '?limit=101', '?hours=2']) {
      const res = await list(seeded, q);
      expect(res.status, `${q}: ${res.text}`).toBe(400);
      expect(isErrorShape(res.body)).toBe(true);
    }
  });
});

describe('the summary', () => {
  it('counts the last 24 h and times delivery to data exactly', async () => {
    const res = await summary(seeded);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      integration_id: seeded,
      statuses: { received: 15, duplicate: 2, rejected: 1 },
      outcomes: { armed: 11, coalesced: 2, pending: 1, ignored: 1 },
      runs_armed: 11,
      delivery_to_data: { samples: 12, p50_ms: 4000, p95_ms: 10_000, max_ms: 10_000 },
    });
    // Keyed in the order of the constants (jsonb would sort them its own way).
    expect(Object.keys(res.body.statuses as object)).toEqual([...WEBHOOK_DELIVERY_STATUSES]);
    expect(Object.keys(res.body.outcomes as object)).toEqual([...WEBHOOK_OUTCOMES]);
    const span = Date.parse(res.body.until as string) - Date.parse(res.body.since as string);
    expect(span).toBe(24 * 3_600_000);
    expect(endpoints.summarizeWebhookDeliveries.success.schema.safeParse(res.body).success).toBe(true);
  });

  it('takes ?hours=', async () => {
    const res = await summary(seeded, '?hours=48');
    expect(res.status, res.text).toBe(200);
    expect(res.body.delivery_to_data).toEqual({ samples: 13, p50_ms: 5000, p95_ms: 60_000, max_ms: 60_000 });
    expect((await summary(seeded, '?hours=720')).status).toBe(200);
    for (const q of ['?hours=0', '?hours=721', '?hours=1.5', '?hours=x', '?hours=', '?status=received']) {
      const bad = await summary(seeded, q);
      expect(bad.status, `${q}: ${bad.text}`).toBe(400);
      expect(isErrorShape(bad.body)).toBe(true);
    }
  });
});

describe('who may read', () => {
  it("answers 404 for another org's integration and for none, 401 without a token", async () => {
    for (const call of [list, summary]) {
      const foreign = await call(seeded, '', tokens.foreign);
      expect(foreign.status).toBe(404);
      expect((foreign.body as { error: { code: string } }).error.code).toBe('not_found');
      expect((await call('00000000-0000-4000-8000-000000000000')).status).toBe(404);
      expect((await call('not-a-uuid')).status).toBe(400);
      expect((await call(seeded, '', null as unknown as string)).status).toBe(401);
      expect((await call(seeded, '', tokens.admin)).status).toBe(200);
    }
  });
});
