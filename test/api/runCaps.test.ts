/**
 * The trigger endpoints' refusals over HTTP, each writing nothing: a run over SYNC_RUN_MAX_UNITS
 * is a 422 `run_too_large` naming the count, the cap and how to narrow the request; an
 * integration at SYNC_INTEGRATION_MAX_LIVE_RUNS is a 409 `too_many_live_runs`, `force` or not;
 * and invalid input is a 400 before any of them, whatever runs are live.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, isErrorShape, openApiHarness, SYNTHETIC, tableCounts, type ApiHarness, type Reply } from './helpers.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await openApiHarness({ settings: { runMaxUnits: 10, integrationMaxLiveRuns: 2 } });
});
afterAll(async () => {
  await h?.close();
});

async function newIntegration(body: Record<string, unknown> = {}): Promise<string> {
  const r = await call(h.url, 'POST', '/api/v1/integrations', {
    token: h.tokens.admin,
    body: { ...SYNTHETIC, ...body },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}

const sync = (id: string, body: unknown) =>
  call(h.url, 'POST', `/api/v1/integrations/${id}/sync`, { token: h.tokens.trigger, body });
const backfill = (id: string, body: unknown) =>
  call(h.url, 'POST', `/api/v1/integrations/${id}/backfill`, { token: h.tokens.trigger, body });

/** Sends, expects `status` and `code` in the error shape, and checks nothing was written. */
async function refused(status: number, code: string, send: () => Promise<Reply>): Promise<Reply> {
  const before = await tableCounts(h.db);
  const r = await send();
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(isErrorShape(r.body)).toBe(true);
  expect(r.body.error.code).toBe(code);
  expect(await tableCounts(h.db)).toEqual(before);
  return r;
}

const DAYS_60 = { since: '2026-01-01T00:00:00Z', before: '2026-03-02T00:00:00Z' };
const DAYS_14 = { since: '2026-01-01T00:00:00Z', before: '2026-01-15T00:00:00Z' };

describe('422 run_too_large', () => {
  it('a backfill over the cap names the count, the cap and how to narrow it; force changes nothing', async () => {
    const id = await newIntegration();
    for (const body of [DAYS_60, { ...DAYS_60, force: true }]) {
      const r = await refused(422, 'run_too_large', () => backfill(id, body));
      // 1 reference unit + 2 sources × 9 weekly windows.
      expect(r.body.error).toEqual({
        code: 'run_too_large',
        message:
          'this run would plan 19 units, over the cap of 10 (SYNC_RUN_MAX_UNITS); narrow it: fewer datasets, ' +
          'a shorter window (since/before) or fewer enabled sources',
        details: {
          units: 19,
          max_units: 10,
          by_dataset: { teams: 1, 'work-items': 18 },
          setting: 'SYNC_RUN_MAX_UNITS',
        },
      });
    }
    // Narrowed, it is accepted.
    expect((await backfill(id, DAYS_14)).status).toBe(202);
  });

  it('a sync of an integration with too many sources is refused too', async () => {
    const id = await newIntegration({ sources: Array.from({ length: 12 }, (_, i) => `team-${i}`) });
    const r = await refused(422, 'run_too_large', () => sync(id, { mode: 'full_resync' }));
    expect(r.body.error.details).toMatchObject({ units: 13, max_units: 10 });
  });
});

describe('409 too_many_live_runs', () => {
  it('force cannot pile runs up past the cap; the answer names the live run count and the cap', async () => {
    const id = await newIntegration();
    expect((await sync(id, { mode: 'incremental' })).status).toBe(202);
    expect((await sync(id, { mode: 'incremental', force: true })).status).toBe(202);
    for (const send of [
      () => sync(id, { mode: 'incremental', force: true }),
      () => sync(id, { mode: 'full_resync' }),
      () => backfill(id, { ...DAYS_14, force: true }),
    ]) {
      const r = await refused(409, 'too_many_live_runs', send);
      expect(r.body.error.details).toEqual({
        live_runs: 2,
        max_live_runs: 2,
        setting: 'SYNC_INTEGRATION_MAX_LIVE_RUNS',
      });
      expect(r.body.error.message).toContain('the cap is 2 (SYNC_INTEGRATION_MAX_LIVE_RUNS');
    }
    // Unforced, a mode with a live run is still the run_conflict naming it.
    await refused(409, 'run_conflict', () => sync(id, { mode: 'incremental' }));
  });
});

describe('400 before 409 and 422', () => {
  it('a backfill with bad input answers 400 while a backfill is live and the live-runs cap is reached', async () => {
    const id = await newIntegration();
    expect((await backfill(id, DAYS_14)).status).toBe(202);
    expect((await sync(id, { mode: 'incremental' })).status).toBe(202);
    for (const body of [
      { ...DAYS_14, datasets: ['nope'] },
      { ...DAYS_14, datasets: ['members'] },
      { ...DAYS_14, datasets: ['nope'], force: true },
      { ...DAYS_60, datasets: ['nope'] },
      { since: DAYS_14.before, before: DAYS_14.since },
    ]) {
      const r = await refused(400, 'invalid_input', () => backfill(id, body));
      expect(['datasets', 'since']).toContain(r.body.error.details.field);
    }
  });

  it('a disabled integration answers 400 while it has live runs, for sync and backfill', async () => {
    const id = await newIntegration();
    expect((await backfill(id, DAYS_14)).status).toBe(202);
    expect((await sync(id, { mode: 'incremental' })).status).toBe(202);
    await h.db.query(`UPDATE ${h.db.schema.integrations} SET enabled = false WHERE id = $1`, [id]);
    for (const send of [
      () => sync(id, { mode: 'incremental' }),
      () => sync(id, { mode: 'full_resync', force: true }),
      () => backfill(id, DAYS_14),
      () => backfill(id, DAYS_60),
    ]) {
      const r = await refused(400, 'invalid_input', send);
      expect(r.body.error.details.field).toBe('integration');
    }
  });
});

it('the OpenAPI document lists 409 and 422 for both triggers', async () => {
  const doc = await call(h.url, 'GET', '/openapi.json');
  for (const path of ['/api/v1/integrations/{id}/sync', '/api/v1/integrations/{id}/backfill']) {
    expect(Object.keys(doc.body.paths[path].post.responses)).toEqual(expect.arrayContaining(['409', '422']));
  }
});
