/**
 * Several schedulers on one database — separate engines with their own connection pools, as
 * replicas would be — ticking at the same moment: every slot fires exactly once.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { PgDb } from '../../src/db/pg.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { runSchedulerTick, type SchedulerTick } from '../../src/planning/scheduler.js';
import { createSchedule } from '../../src/planning/schedules.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-race';
const REPLICAS = 4;
const HOUR = 3_600_000;
const START = Date.UTC(2026, 0, 5, 10, 20);

let t: TestDatabase;
let clock: ManualClock;
const engines: Engine[] = [];
const extraDbs: PgDb[] = [];

beforeAll(async () => {
  t = await createTestDatabase();
  clock = new ManualClock(START);
  for (let i = 0; i < REPLICAS; i++) {
    // Each replica has its own pool: its ticks run on their own connections.
    const db = i === 0 ? t.db : new PgDb({ connectionString: t.url, max: 4, applicationName: `replica-${i}` });
    if (i > 0) extraDbs.push(db);
    const broker = new InProcessBroker();
    engines.push(
      await Engine.open({ settings: testSettings(), db, broker, clock, logger: silentLogger(), migrate: false }),
    );
  }
});
afterAll(async () => {
  for (const e of engines) {
    await e.close();
    await e.ctx.broker.close();
  }
  for (const db of extraDbs) await db.close();
  await t?.drop();
});

async function integration(): Promise<string> {
  const created = await engines[0]!.createIntegration({
    orgId: ORG,
    provider: 'synthetic',
    name: 'race',
    sources: ['s1'],
    datasets: ['work-items'],
    config: { itemsPerDay: 1, latencyMs: 0 },
  });
  return created.id;
}

/** Every replica ticks at once (twice each, interleaved), all at the same instant. */
async function raceTicks(now: Date): Promise<SchedulerTick[]> {
  return Promise.all([...engines, ...engines].map((e) => runSchedulerTick(e.ctx, now)));
}

async function finishLiveRuns(): Promise<void> {
  await t.db.query(
    "UPDATE syncrelay.sync_runs SET status = 'success', completed_at = now() " +
      "WHERE org_id = $1 AND status IN ('planned', 'dispatching')",
    [ORG],
  );
}

/** JobRuns per (schedule, the hour they were created in). */
async function firesPerSlot(): Promise<Map<string, number>> {
  const { rows } = await t.db.query<{ job_id: string; created_at: Date; n: number }>(
    `SELECT job_id, date_trunc('hour', created_at) AS created_at, count(*)::int AS n
       FROM syncrelay.job_runs WHERE job_id IS NOT NULL GROUP BY 1, 2`,
  );
  return new Map(rows.map((r) => [`${r.job_id}@${r.created_at.toISOString()}`, r.n]));
}

describe('racing schedulers', () => {
  it('fire each slot of each schedule exactly once, and split the work between them', async () => {
    const schedules = [];
    for (let i = 0; i < 12; i++) {
      schedules.push(
        await createSchedule(t.db, clock, { orgId: ORG, integrationId: await integration(), cron: '0 * * * *' }),
      );
    }
    const slots = 5;
    let firedTotal = 0;
    const firedBy = new Set<number>();
    for (let k = 1; k <= slots; k++) {
      await finishLiveRuns();
      clock.set(Date.UTC(2026, 0, 5, 10 + k, 0, k)); // a few seconds into each hour
      const ticks = await raceTicks(clock.now());
      ticks.forEach((tk, i) => {
        expect(tk.errors).toEqual([]);
        expect(tk.failed).toEqual([]);
        // A slot claimed twice would show up here: the second claimant finds the first one's run.
        expect(tk.skipped).toEqual([]);
        if (tk.fired.length > 0) firedBy.add(i % REPLICAS);
        firedTotal += tk.fired.length;
      });
    }
    expect(firedTotal).toBe(schedules.length * slots);
    const perSlot = await firesPerSlot();
    expect(perSlot.size).toBe(schedules.length * slots);
    expect([...perSlot.values()].every((n) => n === 1)).toBe(true);
    // Not a guarantee, but with 8 ticks over 60 due jobs more than one replica takes part.
    expect(firedBy.size).toBeGreaterThan(1);
  });

  it('several schedules of one integration and mode due together start one run; the rest skip', async () => {
    const integrationId = await integration();
    await finishLiveRuns();
    clock.set(START);
    const ids = [];
    for (let i = 0; i < 5; i++)
      ids.push((await createSchedule(t.db, clock, { orgId: ORG, integrationId, cron: '*/10 * * * *' })).id);
    clock.set(START + 10 * 60_000);
    const ticks = await raceTicks(clock.now());
    const fired = ticks.flatMap((tk) => tk.fired).filter((f) => f.integrationId === integrationId);
    const skipped = ticks.flatMap((tk) => tk.skipped).filter((f) => f.integrationId === integrationId);
    expect(fired).toHaveLength(1);
    expect(skipped).toHaveLength(4);
    expect(new Set(skipped.map((s) => s.existingRunId))).toEqual(new Set([fired[0]!.syncRunId]));
    const { rows } = await t.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM syncrelay.sync_runs WHERE integration_id = $1 AND status = 'planned'",
      [integrationId],
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('property: for any clock jumps, every schedule fires once per tick instant at which it was due', async () => {
    await t.db.query('UPDATE syncrelay.scheduled_jobs SET enabled = false');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(
        (await createSchedule(t.db, clock, { orgId: ORG, integrationId: await integration(), cron: '*/15 * * * *' }))
          .id,
      );
    }
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 5 * HOUR }), { minLength: 1, maxLength: 4 }),
        async (jumps) => {
          await finishLiveRuns();
          const before = await countFor(ids);
          const { rows: due0 } = await t.db.query<{ id: string; next_run_at: Date }>(
            'SELECT id, next_run_at FROM syncrelay.scheduled_jobs WHERE id = ANY ($1::uuid[])',
            [ids],
          );
          const next = new Map(due0.map((r) => [r.id, r.next_run_at.getTime()]));
          let expected = 0;
          for (const jump of jumps) {
            clock.advance(jump);
            const now = clock.now().getTime();
            for (const [id, at] of next) {
              if (at <= now) {
                expected++;
                next.set(id, (Math.floor(now / (15 * 60_000)) + 1) * 15 * 60_000);
              }
            }
            const ticks = await raceTicks(clock.now());
            expect(ticks.flatMap((tk) => [...tk.skipped, ...tk.failed, ...tk.errors])).toEqual([]);
            await finishLiveRuns();
          }
          expect((await countFor(ids)) - before).toBe(expected);
          const { rows } = await t.db.query<{ id: string; next_run_at: Date }>(
            'SELECT id, next_run_at FROM syncrelay.scheduled_jobs WHERE id = ANY ($1::uuid[])',
            [ids],
          );
          for (const r of rows) expect(r.next_run_at.getTime()).toBe(next.get(r.id));
        },
      ),
      { numRuns: 15 },
    );
  });
});

async function countFor(ids: string[]): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM syncrelay.job_runs WHERE job_id = ANY ($1::uuid[])',
    [ids],
  );
  return rows[0]!.n;
}
