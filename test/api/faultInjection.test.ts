/**
 * The synthetic provider's fault knobs (failRate, rateLimitRate, hangRate, hangMs) are refused
 * unless the server runs with SYNCRELAY_ALLOW_FAULT_INJECTION=true; every numeric knob is bounded
 * either way; and a hanging unit stalls only itself — the API keeps answering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/engine.js';
import { call, isErrorShape, openApiHarness, SYNTHETIC, tableCounts, type ApiHarness } from './helpers.js';

const FAULT_KNOBS: [string, number][] = [
  ['failRate', 0.5],
  ['rateLimitRate', 0.1],
  ['hangRate', 1],
  ['hangMs', 1000],
];

const OUT_OF_BOUNDS: [string, number][] = [
  ['itemsPerDay', 2 ** 53 - 1],
  ['itemsPerDay', 1001],
  ['latencyMs', 600_001],
  ['hangMs', 1e12],
  ['hangMs', 600_001],
  ['seed', 2 ** 31],
  ['rateLimitRetryAfterMs', 3_600_001],
];

const createWith = (h: ApiHarness, config: Record<string, unknown>) =>
  call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: { ...SYNTHETIC, config } });

async function expectRefused(h: ApiHarness, config: Record<string, unknown>, field: string): Promise<void> {
  const before = await tableCounts(h.db);
  const r = await createWith(h, config);
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(isErrorShape(r.body)).toBe(true);
  expect(r.body.error.details.field).toBe(field);
  expect(r.body.error.message).toContain(field);
  expect(await tableCounts(h.db)).toEqual(before);
}

describe('a server without SYNCRELAY_ALLOW_FAULT_INJECTION', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await openApiHarness({ settings: { allowFaultInjection: false } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it.each(FAULT_KNOBS)('refuses %s (400 naming it, nothing written)', async (knob, value) => {
    await expectRefused(h, { latencyMs: 0, [knob]: value }, `config.${knob}`);
  });

  it('refuses a fault knob even at its default value', async () => {
    await expectRefused(h, { hangRate: 0 }, 'config.hangRate');
  });

  it.each(OUT_OF_BOUNDS)('refuses %s = %d', async (knob, value) => {
    await expectRefused(h, { [knob]: value }, `config.${knob}`);
  });

  it('accepts the other knobs at their maximum', async () => {
    const config = { itemsPerDay: 1000, latencyMs: 600_000, seed: 2 ** 31 - 1, rateLimitRetryAfterMs: 3_600_000 };
    const r = await createWith(h, config);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.config).toEqual(config);
  });
});

describe('a server with SYNCRELAY_ALLOW_FAULT_INJECTION=true', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await openApiHarness({ settings: { allowFaultInjection: true } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('accepts every fault knob', async () => {
    const config = { latencyMs: 0, failRate: 0.5, rateLimitRate: 0.1, hangRate: 0.2, hangMs: 600_000 };
    const r = await createWith(h, config);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.config).toEqual(config);
  });

  it.each(OUT_OF_BOUNDS)('still refuses %s = %d', async (knob, value) => {
    await expectRefused(h, { [knob]: value }, `config.${knob}`);
  });

  it('a hanging unit stalls only itself: the API answers throughout', async () => {
    const hangMs = 3000;
    const created = await call(h.url, 'POST', '/api/v1/integrations', {
      token: h.tokens.admin,
      body: { ...SYNTHETIC, sources: ['s'], datasets: ['teams'], config: { latencyMs: 0, hangRate: 1, hangMs } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    h.engine.startWorker({ concurrency: 1 });
    await h.engine.startReconciler();
    const t = await call(h.url, 'POST', `/api/v1/integrations/${created.body.id}/sync`, {
      token: h.tokens.admin,
      body: { mode: 'incremental' },
    });
    expect(t.status).toBe(202);

    const outcomes = async () =>
      (
        await h.db.query<{ outcome: string }>(
          `SELECT e.outcome FROM ${h.db.schema.table('synthetic_executions')} e
             JOIN ${h.db.schema.table('sync_run_units')} u ON u.id = e.unit_id
            WHERE u.sync_run_id = $1`,
          [t.body.sync_run_id],
        )
      ).rows.map((r) => r.outcome);
    // Ping the API back to back from before the unit starts until its hang is over.
    let slowest = 0;
    let pings = 0;
    const started = Date.now();
    while (!(await outcomes()).some((o) => o !== 'running')) {
      const t0 = performance.now();
      const r = await call(h.url, 'GET', '/healthz');
      expect(r.status).toBe(200);
      slowest = Math.max(slowest, performance.now() - t0);
      pings++;
      if (Date.now() - started > 30_000) throw new Error('the unit did not finish within 30 s');
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(hangMs - 100);
    expect(pings).toBeGreaterThan(10);
    expect(slowest).toBeLessThan(1000);
    // The heartbeats went on during the hang: the unit kept its lease and succeeded.
    await waitFor(async () => (await outcomes()).includes('success'), 10_000);
  });
});
