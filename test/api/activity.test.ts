/**
 * GET /api/v1/activity over HTTP (in process, real PostgreSQL, injected clock): a read token gets the
 * org's hourly series and daily metrics, matching the contract; only an admin token gets the
 * system-wide reconciler series; another org sees none of this org's rows; bad input is a 400.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Activity } from '../../src/api/contracts/activity.js';
import { buildServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { seedIntegration, seedRun, seedUnits } from '../store/seed.js';
import { isErrorShape, ORG_A, ORG_B } from './helpers.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
/** 10:30 UTC: the window of 24 hours starts at 11:00 the day before, the current hour is bucket 23. */
const NOW = new Date('2030-01-02T10:30:00Z');
const clock = new ManualClock(NOW);
const ago = (ms: number) => new Date(NOW.getTime() - ms);

let t: TestDatabase;
let engine: Engine;
let app: FastifyInstance;
const tokens = { admin: '', read: '', foreign: '' };

async function get(url: string, token?: string) {
  const res = await app.inject({
    method: 'GET',
    url,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: res.statusCode, body: res.json<Record<string, unknown>>(), text: res.body };
}

type Hour = { start: string; runs: Record<string, number>; units: Record<string, number> } & Record<string, unknown>;

beforeAll(async () => {
  t = await createTestDatabase();
  engine = await Engine.open({
    settings: testSettings(),
    db: t.db,
    broker: new InProcessBroker(),
    logger: silentLogger(),
    clock,
    migrate: false,
  });
  app = await buildServer({ engine, rateLimit: false });
  await app.ready();
  const token = async (orgId: string, scopes: string[]) =>
    (await createApiToken(t.db, clock, { orgId, scopes, name: scopes.join('+') })).token;
  tokens.admin = await token(ORG_A, ['admin']);
  tokens.read = await token(ORG_A, ['read']);
  tokens.foreign = await token(ORG_B, ['admin']);

  const db = t.db;
  const a = await seedIntegration(db, ORG_A);
  // Runs: two ended in the current hour (success, partial_failed), one 3 h ago (failed), one before the window.
  await seedRun(db, a, { status: 'success', completedAt: ago(10 * MIN) });
  await seedRun(db, a, { status: 'partial_failed', completedAt: ago(20 * MIN) });
  await seedRun(db, a, { status: 'failed', completedAt: ago(3 * HOUR) });
  await seedRun(db, a, { status: 'success', completedAt: ago(30 * HOUR) });
  const open = await seedRun(db, a);
  await seedUnits(db, a, open, [
    { set: { status: 'success', updated_at: ago(5 * MIN), rate_limit_deferrals: 3 } },
    { set: { status: 'success', updated_at: ago(6 * MIN) } },
    { set: { status: 'failed', updated_at: ago(7 * MIN), rate_limit_deferrals: 1 } },
  ]);
  const samples = db.schema.table('outbox_depth_samples');
  await db.query(
    `INSERT INTO ${samples} (sampled_at, org_id, pending, due, oldest_due_age_ms)
     VALUES ($1, '', 9, 4, 120000), ($1, $3, 5, 2, 90000), ($2, '', 0, 0, NULL)`,
    [ago(2 * MIN), ago(HOUR + 5 * MIN), ORG_A],
  );
  await db.query(
    `INSERT INTO ${db.schema.reconciler_passes} (reconciler, started_at, finished_at, duration_ms, counters, error)
     VALUES ('r', $1, $1, 10, '{}', NULL), ('r', $1, $1, 30, '{}', 'boom')`,
    [ago(MIN)],
  );
  await db.query(
    `INSERT INTO ${db.schema.table('work_item_metrics_daily')}
       (org_id, integration_id, day, computed_at, items_created, items_completed, wip,
        cycle_time_p50_hours, cycle_time_p90_hours, prs_merged, pr_time_to_merge_p50_hours)
     VALUES ($1, $2, '2030-01-02', $3, 4, 2, 7, 12.5, 30, 1, 2.25)`,
    [ORG_A, a.integrationId, ago(MIN)],
  );
});
afterAll(async () => {
  await app?.close();
  await engine?.close();
  await t?.drop();
});

it('answers the org’s hourly series and daily metrics to a read token, as the contract says', async () => {
  const r = await get('/api/v1/activity', tokens.read);
  expect(r.status, r.text).toBe(200);
  expect(Activity.safeParse(r.body).success, r.text).toBe(true);
  expect(r.body).toMatchObject({ since: '2030-01-01T11:00:00.000Z', until: NOW.toISOString(), includes_system: false });
  const hours = r.body.hours as Hour[];
  expect(hours).toHaveLength(24);
  expect(hours[23]!.start).toBe('2030-01-02T10:00:00.000Z');
  expect(hours[23]!.runs).toEqual({ success: 1, partial_failed: 1, failed: 0, cancelled: 0 });
  expect(hours[20]!.runs).toEqual({ success: 0, partial_failed: 0, failed: 1, cancelled: 0 });
  expect(hours[23]!.units).toEqual({ success: 2, failed: 1, cancelled: 0 });
  // Three units in the 30 minutes of the current hour so far.
  expect(hours[23]!.units_per_minute).toBe(0.1);
  expect(hours[23]!.rate_limit_deferrals).toBe(4);
  expect(hours[23]!.outbox).toEqual({ samples: 1, pending_max: 5, due_max: 2, oldest_due_age_seconds_max: 90 });
  // A sampled minute without a row of the org: nothing pending. No sample: null.
  expect(hours[22]!.outbox).toEqual({ samples: 1, pending_max: 0, due_max: 0, oldest_due_age_seconds_max: null });
  expect(hours[21]!.outbox).toBeNull();
  expect(hours.every((h) => h.reconciler === null)).toBe(true);
  expect(hours.slice(0, 20).every((h) => Object.values(h.runs).every((n) => n === 0))).toBe(true);

  const m = r.body.work_item_metrics as { first_day: string; last_day: string; days: unknown[] };
  expect(m.first_day).toBe('2029-12-20');
  expect(m.last_day).toBe('2030-01-02');
  expect(m.days).toEqual([
    expect.objectContaining({
      day: '2030-01-02',
      integration_name: 'store-test',
      items_created: 4,
      items_completed: 2,
      wip: 7,
      cycle_time_p50_hours: 12.5,
      cycle_time_p90_hours: 30,
      prs_merged: 1,
      pr_time_to_merge_p50_hours: 2.25,
    }),
  ]);
});

it('gives the system-wide reconciler series to admin tokens only', async () => {
  const r = await get('/api/v1/activity?hours=2', tokens.admin);
  expect(r.status, r.text).toBe(200);
  expect(Activity.safeParse(r.body).success, r.text).toBe(true);
  const hours = r.body.hours as Hour[];
  expect(r.body.includes_system).toBe(true);
  expect(hours.map((h) => h.reconciler)).toEqual([
    { passes: 0, errors: 0, avg_duration_ms: null },
    { passes: 2, errors: 1, avg_duration_ms: 20 },
  ]);
});

it('shows another org none of this org’s rows', async () => {
  const r = await get('/api/v1/activity?hours=3&days=1', tokens.foreign);
  expect(r.status, r.text).toBe(200);
  const hours = r.body.hours as Hour[];
  expect(hours).toHaveLength(3);
  for (const h of hours) {
    expect(Object.values(h.runs).every((n) => n === 0)).toBe(true);
    expect(Object.values(h.units).every((n) => n === 0)).toBe(true);
    expect(h.rate_limit_deferrals).toBe(0);
  }
  expect(hours[2]!.outbox).toEqual({ samples: 1, pending_max: 0, due_max: 0, oldest_due_age_seconds_max: null });
  expect((r.body.work_item_metrics as { days: unknown[] }).days).toEqual([]);
});

it('refuses bad windows and callers without a token', async () => {
  for (const q of ['hours=0', 'hours=721', 'hours=1.5', 'days=0', 'days=91', 'other=1']) {
    const r = await get(`/api/v1/activity?${q}`, tokens.read);
    expect(r.status, q).toBe(400);
    expect(isErrorShape(r.body)).toBe(true);
  }
  expect((await get('/api/v1/activity')).status).toBe(401);
});
