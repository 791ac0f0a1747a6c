/**
 * The scheduler on the embedded default (PGlite, one connection): savepoints, SKIP LOCKED and
 * NOTIFY work there too.
 */
import { afterEach, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { PgliteDb } from '../../src/db/pglite.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { createSchedule } from '../../src/planning/schedules.js';
import { getSchedule } from '../../src/store/schedules.js';
import { testSettings, waitFor } from '../helpers/engine.js';

let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
});

it('fires, skips on conflict and fails a broken job on PGlite; the loop runs there too', async () => {
  const clock = new ManualClock(new Date('2026-01-05T10:20:00Z'));
  engine = await Engine.open({
    settings: testSettings(),
    db: await PgliteDb.open(),
    broker: new InProcessBroker(),
    clock,
    logger: silentLogger(),
  });
  const integration = async () =>
    (
      await engine!.createIntegration({
        orgId: 'o',
        provider: 'synthetic',
        name: 'x',
        sources: ['s'],
        datasets: ['work-items'],
      })
    ).id;
  const first = await integration();
  const ok = await createSchedule(engine.db, clock, { orgId: 'o', integrationId: first, cron: '0 * * * *' });
  const twin = await createSchedule(engine.db, clock, { orgId: 'o', integrationId: first, cron: '0 * * * *' });
  const broken = await createSchedule(engine.db, clock, {
    orgId: 'o',
    integrationId: await integration(),
    cron: '0 * * * *',
  });
  await engine.db.query("UPDATE syncrelay.integrations SET provider = 'gone' WHERE id = $1", [broken.integration_id]);

  clock.set(new Date('2026-01-05T11:00:00Z'));
  const tick = await engine.tickScheduler();
  // Two schedules of one integration and mode: the first claimed fires, the other skips.
  expect([...tick.fired, ...tick.skipped].map((f) => f.scheduleId).sort()).toEqual([ok.id, twin.id].sort());
  expect(tick.fired).toHaveLength(1);
  expect(tick.skipped[0]!.existingRunId).toBe(tick.fired[0]!.syncRunId);
  expect(tick.failed.map((f) => f.scheduleId)).toEqual([broken.id]);
  const { rows } = await engine.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncrelay.job_runs');
  expect(rows[0]!.n).toBe(1);

  await engine.db.query("UPDATE syncrelay.sync_runs SET status = 'success'");
  clock.set(new Date('2026-01-05T12:00:00Z'));
  await engine.startScheduler({ pollIntervalMs: 60_000 });
  const moved = async (id: string) =>
    (await getSchedule(engine!.db, id))!.next_run_at!.getTime() > clock.now().getTime();
  await waitFor(async () => (await moved(ok.id)) && (await moved(twin.id)) && (await moved(broken.id)), 10_000);
  const { rows: after } = await engine.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncrelay.job_runs');
  expect(after[0]!.n).toBe(2);
});
