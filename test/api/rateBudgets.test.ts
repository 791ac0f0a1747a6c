/**
 * GET /rate-budgets and /rate-budgets/:key/history (in process, real PostgreSQL, a ManualClock): a
 * read token suffices; the answer matches its contract and the recorded figures; another org's
 * budgets are never listed and their keys answer 404 like unknown ones; bad input is a 400; no
 * answer holds a secret.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpoints } from '../../src/api/contracts/endpoints.js';
import { buildServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { budgetKeyOf } from '../../src/domain/rateBudgetKeys.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { recordRateBudget } from '../../src/store/rateBudgets.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { seedCredentialedIntegration, seedLimitedUnits, type SeededCredential } from '../helpers/rateBudgets.js';
import { isErrorShape, ORG_A, ORG_B } from './helpers.js';

const MIN = 60_000;
const T0 = new Date('2026-03-02T12:00:00Z');
const clock = new ManualClock(T0);
let t: TestDatabase;
let engine: Engine;
let app: FastifyInstance;
const tokens = { admin: '', read: '', foreign: '' };
let ours: SeededCredential;
let theirs: SeededCredential;

beforeAll(async () => {
  t = await createTestDatabase();
  engine = await Engine.open({
    settings: testSettings(),
    db: t.db,
    broker: new InProcessBroker(),
    logger: silentLogger(),
    migrate: false,
    clock,
  });
  app = await buildServer({ engine, rateLimit: false });
  await app.ready();
  const token = async (orgId: string, scopes: string[]) =>
    (await createApiToken(t.db, clock, { orgId, scopes, name: scopes.join('+') })).token;
  tokens.admin = await token(ORG_A, ['admin']);
  tokens.read = await token(ORG_A, ['read']);
  tokens.foreign = await token(ORG_B, ['admin']);

  ours = await seedCredentialedIntegration(t.db, ORG_A, 'Acme GitHub');
  theirs = await seedCredentialedIntegration(t.db, ORG_B, 'Their GitHub');
  const o = (remaining: number, limitedForMs: number) => ({
    remaining,
    limit: 5000,
    resetAt: new Date(clock.now().getTime() + 60 * MIN),
    limitedUntil: limitedForMs ? new Date(clock.now().getTime() + limitedForMs) : null,
    observedAt: clock.now(),
  });
  await recordRateBudget(t.db, { orgId: ORG_A, provider: 'github', credentialId: ours.holder }, o(120, 0), 'u1');
  clock.advance(MIN);
  await recordRateBudget(t.db, { orgId: ORG_A, provider: 'github', credentialId: ours.holder }, o(0, 10 * MIN), 'u2');
  await recordRateBudget(t.db, { orgId: ORG_B, provider: 'github', credentialId: theirs.holder }, o(7, 0), 'u3');
  await seedLimitedUnits(t.db, { orgId: ORG_A, integrationId: ours.integrationId }, [
    { deferrals: 1, firstSeenAt: clock.now(), dueAt: new Date(clock.now().getTime() + 10 * MIN) },
  ]);
  clock.advance(MIN);
});
afterAll(async () => {
  await app?.close();
  await engine?.close();
  await t?.drop();
});

async function get(url: string, token: string | null) {
  const res = await app.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.statusCode, body: res.json<Record<string, unknown>>(), text: res.body };
}

describe('GET /rate-budgets', () => {
  it("lists the org's budget per credential with a read token, matching its contract", async () => {
    const res = await get('/api/v1/rate-budgets', tokens.read);
    expect(res.status, res.text).toBe(200);
    expect(endpoints.listRateBudgets.success.schema.safeParse(res.body).success).toBe(true);
    const items = res.body.items as Record<string, unknown>[];
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      key: budgetKeyOf('github', ours.holder),
      provider: 'github',
      credential: {
        holder: ours.holder,
        kind: 'token',
        integrations: [{ id: ours.integrationId, name: 'Acme GitHub' }],
      },
      state: 'limited',
      remaining: 0,
      limit: 5000,
      limited_until: new Date(T0.getTime() + 11 * MIN).toISOString(),
      observed_at: new Date(T0.getTime() + MIN).toISOString(),
      limit_responses: { last_hour: 1, last_day: 1 },
      deferrals: { last_hour: 1, last_day: 1 },
      waiting: { units: 1, next_due_at: new Date(T0.getTime() + 11 * MIN).toISOString() },
    });
    expect(res.body.as_of).toBe(clock.now().toISOString());
    expect(res.text).not.toContain(theirs.holder);
    expect(res.text).not.toMatch(/ciphertext|nonce|auth_tag/);
  });

  it('filters by provider; another org sees only its own; a bad provider is a 400; no token is a 401', async () => {
    expect((await get('/api/v1/rate-budgets?provider=linear', tokens.read)).body.items).toEqual([]);
    expect((await get('/api/v1/rate-budgets?provider=github', tokens.admin)).body.items).toHaveLength(1);
    const foreign = await get('/api/v1/rate-budgets', tokens.foreign);
    expect(foreign.status).toBe(200);
    expect((foreign.body.items as { credential: { holder: string } }[]).map((i) => i.credential.holder)).toEqual([
      theirs.holder,
    ]);
    const bad = await get('/api/v1/rate-budgets?provider=GitHub%00', tokens.read);
    expect(bad.status).toBe(400);
    expect(isErrorShape(bad.body)).toBe(true);
    expect((await get('/api/v1/rate-budgets?org_id=org-b', tokens.read)).status).toBe(400);
    expect((await get('/api/v1/rate-budgets', null)).status).toBe(401);
  });
});

describe('GET /rate-budgets/:key/history', () => {
  it('answers the samples of the window, oldest first', async () => {
    const key = budgetKeyOf('github', ours.holder);
    const res = await get(`/api/v1/rate-budgets/${key}/history?hours=1`, tokens.read);
    expect(res.status, res.text).toBe(200);
    expect(endpoints.rateBudgetHistory.success.schema.safeParse(res.body).success).toBe(true);
    expect(res.body).toMatchObject({ key, provider: 'github', holder: ours.holder });
    expect(res.body.samples).toEqual([
      expect.objectContaining({ minute: T0.toISOString(), remaining: 120, observations: 1, limit_responses: 0 }),
      expect.objectContaining({
        minute: new Date(T0.getTime() + MIN).toISOString(),
        remaining: 0,
        limit: 5000,
        observations: 1,
        limit_responses: 1,
      }),
    ]);
    clock.advance(60 * MIN);
    const later = await get(`/api/v1/rate-budgets/${key}/history?hours=1`, tokens.read);
    expect(later.body.samples).toHaveLength(0);
    expect((await get(`/api/v1/rate-budgets/${key}/history`, tokens.read)).body.samples).toHaveLength(2);
    clock.advance(-60 * MIN);
  });

  it("answers 404 for another org's key and for keys naming no budget; 400 for bad hours", async () => {
    const foreignKey = budgetKeyOf('github', theirs.holder);
    const theirsToUs = await get(`/api/v1/rate-budgets/${foreignKey}/history`, tokens.read);
    expect(theirsToUs.status).toBe(404);
    expect(isErrorShape(theirsToUs.body)).toBe(true);
    expect((await get(`/api/v1/rate-budgets/${foreignKey}/history`, tokens.foreign)).status).toBe(200);
    expect((await get(`/api/v1/rate-budgets/${budgetKeyOf('jira', ours.holder)}/history`, tokens.read)).status).toBe(
      404,
    );
    expect((await get('/api/v1/rate-budgets/not-a-key/history', tokens.read)).status).toBe(404);
    const key = budgetKeyOf('github', ours.holder);
    expect((await get(`/api/v1/rate-budgets/${key}/history?hours=0`, tokens.read)).status).toBe(400);
    expect((await get(`/api/v1/rate-budgets/${key}/history?hours=169`, tokens.read)).status).toBe(400);
  });
});
