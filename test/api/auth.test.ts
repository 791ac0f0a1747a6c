/** Tokens, scopes and org isolation: 401 / 403 / 404 across every endpoint, and rate limits. */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { revokeApiToken } from '../../src/store/apiTokens.js';
import { generateToken } from '../../src/api/tokens.js';
import {
  call,
  isErrorShape,
  ORG_A,
  ORG_B,
  openApiHarness,
  SYNTHETIC,
  tableCounts,
  type ApiHarness,
} from './helpers.js';

let h: ApiHarness;
/** Org A's integration, run and JobRun. */
let a: { integration: string; run: string; jobRun: string };
/** Org B's. */
let b: { integration: string; run: string };

beforeAll(async () => {
  h = await openApiHarness();
  const ia = await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC });
  const ta = await call(h.url, 'POST', `/api/v1/integrations/${ia.body.id}/sync`, {
    token: h.tokens.admin,
    body: { mode: 'incremental' },
  });
  a = { integration: ia.body.id, run: ta.body.sync_run_id, jobRun: ta.body.job_run_id };
  const ib = await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.foreign, body: SYNTHETIC });
  const tb = await call(h.url, 'POST', `/api/v1/integrations/${ib.body.id}/sync`, {
    token: h.tokens.foreign,
    body: { mode: 'incremental' },
  });
  b = { integration: ib.body.id, run: tb.body.sync_run_id };
  expect([ia.status, ta.status, ib.status, tb.status]).toEqual([201, 202, 201, 202]);
});
afterAll(async () => {
  await h?.close();
});

type Scope = 'read' | 'trigger' | 'admin';
interface Route {
  name: string;
  method: 'GET' | 'POST';
  path: () => string;
  scope: Scope;
  body?: () => unknown;
}

const ROUTES: Route[] = [
  {
    name: '/api/v1/integrations',
    method: 'POST',
    path: () => '/api/v1/integrations',
    scope: 'admin',
    body: () => SYNTHETIC,
  },
  { name: '/api/v1/integrations', method: 'GET', path: () => '/api/v1/integrations', scope: 'read' },
  {
    name: '/api/v1/integrations/:id',
    method: 'GET',
    path: () => `/api/v1/integrations/${a.integration}`,
    scope: 'read',
  },
  {
    name: '/api/v1/integrations/:id/sync',
    method: 'POST',
    path: () => `/api/v1/integrations/${a.integration}/sync`,
    scope: 'trigger',
    body: () => ({ mode: 'full_resync' }),
  },
  {
    name: '/api/v1/integrations/:id/backfill',
    method: 'POST',
    path: () => `/api/v1/integrations/${a.integration}/backfill`,
    scope: 'trigger',
    body: () => ({ since: '2026-01-01T00:00:00Z', before: '2026-01-08T00:00:00Z' }),
  },
  {
    name: '/api/v1/sync-runs/:id/cancel',
    method: 'POST',
    path: () => `/api/v1/sync-runs/${a.run}/cancel`,
    scope: 'trigger',
  },
  { name: '/api/v1/job-runs', method: 'GET', path: () => '/api/v1/job-runs', scope: 'read' },
  { name: '/api/v1/sync-runs/:id', method: 'GET', path: () => `/api/v1/sync-runs/${a.run}`, scope: 'read' },
  { name: '/api/v1/sync-runs/:id/units', method: 'GET', path: () => `/api/v1/sync-runs/${a.run}/units`, scope: 'read' },
  { name: '/api/v1/outbox/stats', method: 'GET', path: () => '/api/v1/outbox/stats', scope: 'read' },
  // System-wide (every org's counters): admin only.
  { name: '/api/v1/reconciler/passes', method: 'GET', path: () => '/api/v1/reconciler/passes', scope: 'admin' },
];

const label = (r: Route) => `${r.method} ${r.name}`;

async function expectUnchanged<T>(fn: () => Promise<T>): Promise<T> {
  const before = await tableCounts(h.db);
  const out = await fn();
  expect(await tableCounts(h.db)).toEqual(before);
  return out;
}

describe('401: no live token', () => {
  it.each(ROUTES.map((r) => [label(r), r] as const))('%s', async (_, r) => {
    const revoked = await h.token(ORG_A, ['admin']);
    const { rows } = await h.db.query<{ id: string }>('SELECT id FROM syncrelay.api_tokens WHERE token_hash = $1', [
      createHash('sha256').update(revoked).digest('hex'),
    ]);
    await revokeApiToken(h.db, rows[0]!.id, systemClock.now());
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer not-a-token' },
      { authorization: `Bearer ${generateToken()}` },
      { authorization: `Bearer ${revoked}` },
      { authorization: `Bearer ${h.tokens.admin}x` },
    ];
    for (const headers of attempts) {
      const res = await expectUnchanged(() => call(h.url, r.method, r.path(), { headers, body: r.body?.() }));
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(isErrorShape(res.body)).toBe(true);
      expect(res.body.error.code).toBe('unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });
});

describe('403: a token without the scope', () => {
  const lacking = (scope: Scope): (keyof ApiHarness['tokens'])[] =>
    scope === 'admin' ? ['read', 'trigger'] : scope === 'trigger' ? ['read'] : ['trigger'];
  it.each(ROUTES.map((r) => [label(r), r] as const))('%s', async (_, r) => {
    for (const name of lacking(r.scope)) {
      const res = await expectUnchanged(() =>
        call(h.url, r.method, r.path(), { token: h.tokens[name], body: r.body?.() }),
      );
      expect(res.status, name).toBe(403);
      expect(isErrorShape(res.body)).toBe(true);
      expect(res.body.error).toMatchObject({ code: 'forbidden', details: { required_scope: r.scope } });
    }
  });
});

describe("404: another org's ids, and lists without another org's rows", () => {
  const foreign = () => h.tokens.foreign;

  it.each([
    ['GET', () => `/api/v1/integrations/${a.integration}`, undefined],
    ['POST', () => `/api/v1/integrations/${a.integration}/sync`, { mode: 'incremental', force: true }],
    [
      'POST',
      () => `/api/v1/integrations/${a.integration}/backfill`,
      { since: '2026-01-01T00:00:00Z', before: '2026-01-08T00:00:00Z', force: true },
    ],
    ['POST', () => `/api/v1/sync-runs/${a.run}/cancel`, undefined],
    ['GET', () => `/api/v1/sync-runs/${a.run}`, undefined],
    ['GET', () => `/api/v1/sync-runs/${a.run}/units`, undefined],
  ] as const)('%s %s', async (method, path, body) => {
    const res = await expectUnchanged(() =>
      call(h.url, method, path(), { token: foreign(), body, headers: { 'idempotency-key': 'foreign-key' } }),
    );
    expect(res.status).toBe(404);
    expect(isErrorShape(res.body)).toBe(true);
    expect(res.body.error.code).toBe('not_found');
  });

  it("org A's run is untouched by the foreign cancel", async () => {
    const r = await call(h.url, 'GET', `/api/v1/sync-runs/${a.run}`, { token: h.tokens.read });
    expect(r.body.run.status).toBe('planned');
  });

  it("GET /integrations and /job-runs list only the caller's org", async () => {
    const ints = await call(h.url, 'GET', '/api/v1/integrations', { token: foreign() });
    expect(ints.body.items.map((i: { id: string }) => i.id)).toEqual([b.integration]);
    expect(ints.body.items.every((i: { org_id: string }) => i.org_id === ORG_B)).toBe(true);
    const jobs = await call(h.url, 'GET', '/api/v1/job-runs', { token: foreign() });
    expect(jobs.body.items.every((j: { org_id: string }) => j.org_id === ORG_B)).toBe(true);
    expect(jobs.body.items.map((j: { id: string }) => j.id)).not.toContain(a.jobRun);
    const filtered = await call(h.url, 'GET', `/api/v1/job-runs?integration_id=${a.integration}`, { token: foreign() });
    expect(filtered.body.items).toEqual([]);
  });

  it("GET /outbox/stats counts only the caller's org", async () => {
    const mine = await call(h.url, 'GET', '/api/v1/outbox/stats', { token: foreign() });
    const { rows } = await h.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM syncrelay.sync_dispatch_outbox WHERE org_id = $1 AND kind = 'dispatch_sync_run'",
      [ORG_B],
    );
    const counted = mine.body.counts
      .filter((c: { kind: string }) => c.kind === 'dispatch_sync_run')
      .reduce((s: number, c: { count: number }) => s + c.count, 0);
    expect(counted).toBe(rows[0]!.n);
    const all = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncrelay.sync_dispatch_outbox');
    expect(all.rows[0]!.n).toBeGreaterThan(counted);
  });

  it("POST /integrations creates in the token's org; the body cannot name another", async () => {
    const made = await call(h.url, 'POST', '/api/v1/integrations', {
      token: foreign(),
      body: { ...SYNTHETIC, name: 'mine' },
    });
    expect(made.status).toBe(201);
    expect(made.body.org_id).toBe(ORG_B);
    const smuggled = await expectUnchanged(() =>
      call(h.url, 'POST', '/api/v1/integrations', { token: foreign(), body: { ...SYNTHETIC, org_id: ORG_A } }),
    );
    expect(smuggled.status).toBe(400);
    expect(smuggled.body.error.details.field).toBe('org_id');
  });

  it('Idempotency-Keys are per org: the same key in two orgs is two requests', async () => {
    const key = 'shared-key-1';
    const ra = await call(h.url, 'POST', `/api/v1/integrations/${a.integration}/sync`, {
      token: h.tokens.trigger,
      body: { mode: 'full_resync', force: true },
      headers: { 'idempotency-key': key },
    });
    const rb = await call(h.url, 'POST', `/api/v1/integrations/${b.integration}/sync`, {
      token: foreign(),
      body: { mode: 'full_resync', force: true },
      headers: { 'idempotency-key': key },
    });
    expect([ra.status, rb.status]).toEqual([202, 202]);
    expect(ra.body.sync_run_id).not.toBe(rb.body.sync_run_id);
    expect(rb.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('tokens', () => {
  it('are stored only as their SHA-256 and stamp last_used_at', async () => {
    const { rows } = await h.db.query<{ token_hash: string; last_used_at: Date | null; scopes: string[] }>(
      'SELECT token_hash, last_used_at, scopes FROM syncrelay.api_tokens WHERE token_hash = $1',
      [createHash('sha256').update(h.tokens.read).digest('hex')],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.scopes).toEqual(['read']);
    expect(rows[0]!.last_used_at).not.toBeNull();
    const raw = await h.db.query("SELECT 1 FROM syncrelay.api_tokens WHERE token_hash LIKE 'sr_%' OR name LIKE 'sr_%'");
    expect(raw.rowCount).toBe(0);
    expect(h.tokens.read).toMatch(/^sr_[A-Za-z0-9_-]{43}$/);
  });

  it('public routes and unknown routes need none', async () => {
    expect((await call(h.url, 'GET', '/healthz')).status).toBe(200);
    expect((await call(h.url, 'GET', '/openapi.json')).status).toBe(200);
    const unknown = await call(h.url, 'GET', '/api/v1/nothing-here');
    expect(unknown.status).toBe(404);
    expect(isErrorShape(unknown.body)).toBe(true);
  });
});

describe('rate limits', () => {
  let limited: ApiHarness;
  beforeAll(async () => {
    limited = await openApiHarness({ server: { rateLimit: { max: 3, timeWindowMs: 60_000 } } });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it('answer 429 in the error shape per token; other tokens and health checks are not limited', async () => {
    const statuses: number[] = [];
    let last = null as Awaited<ReturnType<typeof call>> | null;
    for (let i = 0; i < 5; i++) {
      last = await call(limited.url, 'GET', '/api/v1/integrations', { token: limited.tokens.read });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(isErrorShape(last!.body)).toBe(true);
    expect(last!.body.error.code).toBe('rate_limited');
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await call(limited.url, 'GET', '/api/v1/integrations', { token: limited.tokens.admin })).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await call(limited.url, 'GET', '/healthz')).status).toBe(200);
  });
});
