/**
 * The activity charts' reads and the outbox-depth samples against real PostgreSQL, on virtual time
 * (every statement takes its times as parameters): runs and units ended per hour, the org's sampled
 * depth per hour (a sampled minute without the org's row is nothing pending, one sample a minute
 * whoever takes it), pruning, and the metrics handler's latest generation per day.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Db } from '../../src/db/types.js';
import { countRunsEndedByHour, countUnitsEndedByHour, latestMetricsDays } from '../../src/store/activity.js';
import { armOutbox } from '../../src/store/outbox.js';
import {
  outboxDepthByHour,
  pruneOutboxSamples,
  sampleMinute,
  sampleOutboxDepth,
} from '../../src/store/outboxSamples.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { at, seedIntegration, seedRun, seedUnits, T0 } from './seed.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

let t: TestDatabase;
let db: Db;
let a: { orgId: string; integrationId: string };
let b: { orgId: string; integrationId: string };

beforeAll(async () => {
  t = await createTestDatabase();
  db = t.db;
  a = await seedIntegration(db, 'org-a');
  b = await seedIntegration(db, 'org-b');
});
afterAll(async () => {
  await t?.drop();
});

it('counts the org’s runs and units by the hour they ended, with the units’ deferrals', async () => {
  const since = T0;
  const until = at(T0, 3 * HOUR);
  await seedRun(db, a, { status: 'success', completedAt: at(T0, 10 * MIN) });
  await seedRun(db, a, { status: 'success', completedAt: at(T0, 50 * MIN) });
  await seedRun(db, a, { status: 'failed', completedAt: at(T0, 2 * HOUR + MIN) });
  await seedRun(db, a, { status: 'success', completedAt: at(T0, -MIN) }); // before the window
  await seedRun(db, b, { status: 'success', completedAt: at(T0, 10 * MIN) }); // another org
  const open = await seedRun(db, a);
  await seedUnits(db, a, open, [
    { set: { status: 'success', updated_at: at(T0, 5 * MIN), rate_limit_deferrals: 2 } },
    { set: { status: 'success', updated_at: at(T0, 65 * MIN), rate_limit_deferrals: 1 } },
    { set: { status: 'failed', updated_at: at(T0, 70 * MIN), rate_limit_deferrals: 4 } },
    { set: { status: 'running', updated_at: at(T0, 70 * MIN), rate_limit_deferrals: 9 } }, // not ended
    { set: { status: 'success', updated_at: at(T0, 3 * HOUR) } }, // at `until`: outside
  ]);
  const otherRun = await seedRun(db, b);
  await seedUnits(db, b, otherRun, [{ set: { status: 'success', updated_at: at(T0, 5 * MIN) } }]);

  expect(await countRunsEndedByHour(db, a.orgId, since, until)).toEqual([
    { bucket: 0, status: 'success', n: 2 },
    { bucket: 2, status: 'failed', n: 1 },
  ]);
  expect(await countUnitsEndedByHour(db, a.orgId, since, until)).toEqual([
    { bucket: 0, status: 'success', n: 1, deferrals: 2 },
    { bucket: 1, status: 'failed', n: 1, deferrals: 4 },
    { bucket: 1, status: 'success', n: 1, deferrals: 1 },
  ]);
});

it('samples the outbox once a minute, per org and for every org, and reads the org’s depth per hour', async () => {
  const base = at(T0, 10 * HOUR);
  const runA = await seedRun(db, a);
  const runA2 = await seedRun(db, a);
  const runB = await seedRun(db, b);
  // org-a: one row due 90 s before the sample, one not due yet; org-b: one due.
  await armOutbox(db, 'dispatch_sync_run', [{ orgId: a.orgId, runId: runA }], at(base, -90_000), base);
  await armOutbox(db, 'dispatch_sync_run', [{ orgId: a.orgId, runId: runA2 }], at(base, HOUR), base);
  await armOutbox(db, 'dispatch_sync_run', [{ orgId: b.orgId, runId: runB }], at(base, -1000), base);

  const now = at(base, 15_000);
  expect(await sampleOutboxDepth(db, now)).toBe(3); // org-a, org-b, every org
  expect(await sampleOutboxDepth(db, at(now, 30_000))).toBe(0); // same minute
  const { rows } = await db.query(
    `SELECT org_id, pending, due, oldest_due_age_ms::int AS age, sampled_at
       FROM ${db.schema.table('outbox_depth_samples')} ORDER BY org_id`,
  );
  expect(rows).toEqual([
    { org_id: '', pending: 3, due: 2, age: 105_000, sampled_at: sampleMinute(now) },
    { org_id: 'org-a', pending: 2, due: 1, age: 105_000, sampled_at: base },
    { org_id: 'org-b', pending: 1, due: 1, age: 16_000, sampled_at: base },
  ]);

  // The next minute org-a's rows are gone: only the every-org row and org-b's are written.
  await db.query(`DELETE FROM ${db.schema.sync_dispatch_outbox} WHERE org_id = $1`, [a.orgId]);
  expect(await sampleOutboxDepth(db, at(base, MIN))).toBe(2);
  // An hour later nothing is pending: the every-org row still says the minute was sampled.
  await db.query(`DELETE FROM ${db.schema.sync_dispatch_outbox}`);
  expect(await sampleOutboxDepth(db, at(base, HOUR))).toBe(1);

  expect(await outboxDepthByHour(db, a.orgId, base, at(base, 3 * HOUR))).toEqual([
    { bucket: 0, samples: 2, pending_max: 2, due_max: 1, oldest_due_age_ms_max: 105_000 },
    { bucket: 1, samples: 1, pending_max: 0, due_max: 0, oldest_due_age_ms_max: null },
  ]);
  expect(await outboxDepthByHour(db, 'org-none', base, at(base, 3 * HOUR))).toEqual([
    { bucket: 0, samples: 2, pending_max: 0, due_max: 0, oldest_due_age_ms_max: null },
    { bucket: 1, samples: 1, pending_max: 0, due_max: 0, oldest_due_age_ms_max: null },
  ]);

  // Pruning: rows older than the cutoff, in batches of `limit`.
  expect(await pruneOutboxSamples(db, at(base, 30 * MIN), 2)).toBe(2);
  expect(await pruneOutboxSamples(db, at(base, 30 * MIN), 2)).toBe(2);
  expect(await pruneOutboxSamples(db, at(base, 30 * MIN), 2)).toBe(1);
  expect(await pruneOutboxSamples(db, at(base, 30 * MIN), 2)).toBe(0);
  expect(await outboxDepthByHour(db, a.orgId, base, at(base, 3 * HOUR))).toEqual([
    { bucket: 1, samples: 1, pending_max: 0, due_max: 0, oldest_due_age_ms_max: null },
  ]);
});

it('reads the latest metrics generation per integration and day of the org', async () => {
  const table = db.schema.table('work_item_metrics_daily');
  const insert = (orgId: string, integrationId: string, day: string, computedAt: Date, created: number) =>
    db.query(
      `INSERT INTO ${table} (org_id, integration_id, day, computed_at, items_created, items_completed, wip,
                             cycle_time_p50_hours, cycle_time_p90_hours, prs_merged, pr_time_to_merge_p50_hours)
       VALUES ($1, $2, $3, $4, $5, 1, 2, 3.5, 9, 0, NULL)`,
      [orgId, integrationId, day, computedAt, created],
    );
  await insert(a.orgId, a.integrationId, '2030-01-01', T0, 1);
  await insert(a.orgId, a.integrationId, '2030-01-01', at(T0, HOUR), 5); // the later generation
  await insert(a.orgId, a.integrationId, '2030-01-02', T0, 2);
  await insert(a.orgId, a.integrationId, '2029-12-31', T0, 7); // before the days asked
  await insert(b.orgId, b.integrationId, '2030-01-01', T0, 9); // another org

  const rows = await latestMetricsDays(db, a.orgId, '2030-01-01', '2030-01-03');
  expect(rows.map((r) => [r.day, r.items_created, r.computed_at.toISOString()])).toEqual([
    ['2030-01-01', 5, at(T0, HOUR).toISOString()],
    ['2030-01-02', 2, T0.toISOString()],
  ]);
  expect(rows[0]).toMatchObject({
    integration_id: a.integrationId,
    integration_name: 'store-test',
    items_completed: 1,
    wip: 2,
    cycle_time_p50_hours: 3.5,
    cycle_time_p90_hours: 9,
    prs_merged: 0,
    pr_time_to_merge_p50_hours: null,
  });
});
