/**
 * Reconciler passes are system-wide (every org's counters and raw error text): admin tokens only.
 * Outbox stats are the caller's org's own rows and stay readable with `read`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcilePass } from '../../src/reconciler/pass.js';
import { call, isErrorShape, openApiHarness, type ApiHarness } from './helpers.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await openApiHarness();
  await reconcilePass(h.engine.ctx, 'scope-test');
});
afterAll(async () => {
  await h?.close();
});

describe('GET /api/v1/reconciler/passes', () => {
  it.each(['read', 'trigger'] as const)('answers 403 to a %s token', async (name) => {
    const r = await call(h.url, 'GET', '/api/v1/reconciler/passes', { token: h.tokens[name] });
    expect(r.status).toBe(403);
    expect(isErrorShape(r.body)).toBe(true);
    expect(r.body.error).toMatchObject({ code: 'forbidden', details: { required_scope: 'admin' } });
    expect(JSON.stringify(r.body)).not.toContain('scope-test');
  });

  it('answers an admin token with the passes', async () => {
    const r = await call(h.url, 'GET', '/api/v1/reconciler/passes', { token: h.tokens.admin });
    expect(r.status).toBe(200);
    expect(r.body.items[0]).toMatchObject({ reconciler: 'scope-test' });
  });

  it('still answers 401 without a token', async () => {
    expect((await call(h.url, 'GET', '/api/v1/reconciler/passes')).status).toBe(401);
  });
});

describe('GET /api/v1/outbox/stats', () => {
  it("stays readable with read: it counts the caller's org only", async () => {
    const r = await call(h.url, 'GET', '/api/v1/outbox/stats', { token: h.tokens.read });
    expect(r.status).toBe(200);
  });
});
