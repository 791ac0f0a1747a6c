/**
 * The scheduler tick on PostgreSQL with a ManualClock: one fire per slot, one fire after
 * downtime, time zones across DST, disabled jobs, conflicts, failures that block nothing else,
 * validation that writes nothing, and the loop that runs the tick.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { NotFoundError, ValidationError } from '../../src/errors.js';
import { runSchedulerTick } from '../../src/planning/scheduler.js';
import { createSchedule, deleteSchedule, updateSchedule } from '../../src/planning/schedules.js';
import { getSchedule, type ScheduleRow } from '../../src/store/schedules.js';
import { openTestEngine, waitFor, type TestEngine } from '../helpers/engine.js';

const ORG = 'org-sched';
const at = (iso: string) => new Date(iso);

let clock: ManualClock;
let h: TestEngine;

beforeEach(async () => {
  clock = new ManualClock(at('2026-01-05T10:20:00Z'));
  h = await openTestEngine({ clock });
});
afterEach(async () => {
  await h.close();
});

async function integration(org = ORG): Promise<string> {
  const created = await h.engine.createIntegration({
    orgId: org,
    provider: 'synthetic',
    name: 'sched',
    sources: ['s1'],
    datasets: ['work-items'],
    config: { itemsPerDay: 1, latencyMs: 0 },
  });
  return created.id;
}

const tick = (iso?: string) => {
  if (iso) clock.set(at(iso));
  return runSchedulerTick(h.engine.ctx, clock.now());
};

async function schedule(row: Partial<Parameters<typeof createSchedule>[2]> = {}): Promise<ScheduleRow> {
  const integrationId = row.integrationId ?? (await integration());
  return createSchedule(h.engine.db, clock, { orgId: ORG, cron: '0 * * * *', ...row, integrationId });
}

const reload = async (id: string) => (await getSchedule(h.engine.db, id))!;

async function jobRuns(scheduleId: string) {
  const { rows } = await h.engine.db.query<{
    id: string;
    triggered_by: string;
    status: string;
    sync_run_id: string;
    created_at: Date;
  }>(
    `SELECT id, triggered_by, status, result ->> 'sync_run_id' AS sync_run_id, created_at
       FROM syncrelay.job_runs WHERE job_id = $1 ORDER BY created_at`,
    [scheduleId],
  );
  return rows;
}

/** Ends every live run (as if it had finished), so the next slot does not conflict. */
async function finishLiveRuns(): Promise<void> {
  const { rows } = await h.engine.db.query<{ id: string }>(
    "SELECT id FROM syncrelay.sync_runs WHERE status IN ('planned', 'dispatching')",
  );
  for (const r of rows) await h.engine.cancel(r.id);
}

describe('runSchedulerTick', () => {
  it('fires once per slot: a JobRun triggered_by schedule with its planned run, then the next slot', async () => {
    const s = await schedule();
    expect(s.next_run_at).toEqual(at('2026-01-05T11:00:00Z'));

    expect((await tick('2026-01-05T10:59:59.999Z')).fired).toEqual([]);
    const first = await tick('2026-01-05T11:00:00Z');
    expect(first.fired).toHaveLength(1);
    expect(first.fired[0]).toMatchObject({
      scheduleId: s.id,
      slot: at('2026-01-05T11:00:00Z'),
      nextRunAt: at('2026-01-05T12:00:00Z'),
    });

    const [jr] = await jobRuns(s.id);
    expect(jr).toMatchObject({
      id: first.fired[0]!.jobRunId,
      triggered_by: 'schedule',
      status: 'pending',
      sync_run_id: first.fired[0]!.syncRunId,
    });
    const { rows: runs } = await h.engine.db.query<{
      triggered_by: string;
      mode: string;
      status: string;
      units: number;
    }>(
      `SELECT triggered_by, mode, status,
              (SELECT count(*)::int FROM syncrelay.sync_run_units u WHERE u.sync_run_id = r.id) AS units
         FROM syncrelay.sync_runs r WHERE id = $1`,
      [first.fired[0]!.syncRunId],
    );
    expect(runs[0]).toMatchObject({ triggered_by: 'schedule', mode: 'incremental', status: 'planned' });
    expect(runs[0]!.units).toBeGreaterThan(0);
    expect(await reload(s.id)).toMatchObject({
      next_run_at: at('2026-01-05T12:00:00Z'),
      last_run_at: at('2026-01-05T11:00:00Z'),
      last_outcome: 'fired',
      last_error: null,
      last_job_run_id: jr!.id,
    });

    // The same slot never fires twice, however often the tick runs.
    expect((await tick('2026-01-05T11:00:00Z')).fired).toEqual([]);
    expect((await tick('2026-01-05T11:59:00Z')).fired).toEqual([]);
    await finishLiveRuns();
    expect((await tick('2026-01-05T12:00:30Z')).fired.map((f) => f.scheduleId)).toEqual([s.id]);
    expect(await jobRuns(s.id)).toHaveLength(2);
  });

  it('after a long downtime fires once, and next_run_at is the next slot after now', async () => {
    const s = await schedule({ cron: '*/5 * * * *' });
    // 3 days and change later: 860-odd slots were missed.
    const result = await tick('2026-01-08T13:37:12Z');
    expect(result.fired).toHaveLength(1);
    expect(result.fired[0]!.slot).toEqual(at('2026-01-05T10:25:00Z'));
    expect((await reload(s.id)).next_run_at).toEqual(at('2026-01-08T13:40:00Z'));
    expect((await tick('2026-01-08T13:37:12Z')).fired).toEqual([]);
    expect(await jobRuns(s.id)).toHaveLength(1);
  });

  it('fires a daily 09:00 Europe/Berlin job at 08:00Z before and 07:00Z after the spring DST change', async () => {
    clock.set(at('2026-03-27T12:00:00Z'));
    const s = await schedule({ cron: '0 9 * * *', timezone: 'Europe/Berlin' });
    expect(s.next_run_at).toEqual(at('2026-03-28T08:00:00Z'));

    expect((await tick('2026-03-28T07:59:59Z')).fired).toEqual([]);
    expect((await tick('2026-03-28T08:00:00Z')).fired).toHaveLength(1);
    expect((await reload(s.id)).next_run_at).toEqual(at('2026-03-29T07:00:00Z'));
    await finishLiveRuns();

    expect((await tick('2026-03-29T06:59:59Z')).fired).toEqual([]);
    expect((await tick('2026-03-29T07:00:00Z')).fired).toHaveLength(1);
    expect((await reload(s.id)).next_run_at).toEqual(at('2026-03-30T07:00:00Z'));
    const runs = await jobRuns(s.id);
    expect(runs.map((r) => r.created_at.toISOString())).toEqual([
      '2026-03-28T08:00:00.000Z',
      '2026-03-29T07:00:00.000Z',
    ]);
  });

  it('never fires a disabled job; enabling it starts from the next slot after now, not the missed ones', async () => {
    const off = await schedule({ enabled: false });
    expect(off.next_run_at).toBeNull();
    const on = await schedule();
    await updateSchedule(h.engine.db, clock, on.id, ORG, { enabled: false });
    expect((await reload(on.id)).next_run_at).toBeNull();

    expect((await tick('2026-01-09T00:00:00Z')).fired).toEqual([]);
    expect((await tick('2026-02-01T00:00:00Z')).fired).toEqual([]);
    expect(await jobRuns(off.id)).toEqual([]);
    expect(await jobRuns(on.id)).toEqual([]);

    clock.set(at('2026-02-01T07:30:00Z'));
    const enabled = await updateSchedule(h.engine.db, clock, on.id, ORG, { enabled: true });
    expect(enabled.next_run_at).toEqual(at('2026-02-01T08:00:00Z'));
    expect((await tick()).fired).toEqual([]);
    expect((await tick('2026-02-01T08:00:00Z')).fired.map((f) => f.scheduleId)).toEqual([on.id]);
  });

  it('skips a slot while a run of the same mode is live, records why, and fires the next one', async () => {
    const integrationId = await integration();
    const inc = await schedule({ integrationId });
    const full = await schedule({ integrationId, mode: 'full_resync' });
    const manual = await h.engine.trigger({ orgId: ORG, integrationId, mode: 'incremental', triggeredBy: 'manual' });

    const result = await tick('2026-01-05T11:00:00Z');
    expect(result.skipped).toEqual([
      expect.objectContaining({
        scheduleId: inc.id,
        existingRunId: manual.syncRunId,
        nextRunAt: at('2026-01-05T12:00:00Z'),
      }),
    ]);
    // Another mode does not conflict.
    expect(result.fired.map((f) => f.scheduleId)).toEqual([full.id]);
    expect(await jobRuns(inc.id)).toEqual([]);
    const skipped = await reload(inc.id);
    expect(skipped).toMatchObject({
      last_outcome: 'skipped',
      last_job_run_id: null,
      next_run_at: at('2026-01-05T12:00:00Z'),
    });
    expect(skipped.last_error).toContain(manual.syncRunId);

    await finishLiveRuns();
    const next = await tick('2026-01-05T12:00:00Z');
    expect(next.fired.map((f) => f.scheduleId).sort()).toEqual([inc.id, full.id].sort());
    expect((await reload(inc.id)).last_outcome).toBe('fired');
  });

  it('a job that fails rolls back what it wrote, moves on, and does not block the others', async () => {
    const broken = await schedule();
    const disabled = await schedule();
    const healthy = await schedule();
    // Planning fails after the JobRun was inserted: the savepoint must take the JobRun back.
    await h.engine.db.query("UPDATE syncrelay.integrations SET provider = 'gone' WHERE id = $1", [
      broken.integration_id,
    ]);
    await h.engine.db.query('UPDATE syncrelay.integrations SET enabled = false WHERE id = $1', [
      disabled.integration_id,
    ]);

    const result = await tick('2026-01-05T11:00:00Z');
    expect(result.fired.map((f) => f.scheduleId)).toEqual([healthy.id]);
    expect(result.failed.map((f) => f.scheduleId).sort()).toEqual([broken.id, disabled.id].sort());
    expect(result.failed.find((f) => f.scheduleId === disabled.id)!.reason).toMatch(/integration: is disabled/);
    expect(await jobRuns(broken.id)).toEqual([]);
    const { rows } = await h.engine.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM syncrelay.sync_runs WHERE integration_id = $1',
      [broken.integration_id],
    );
    expect(rows[0]!.n).toBe(0);
    for (const id of [broken.id, disabled.id]) {
      expect(await reload(id)).toMatchObject({ last_outcome: 'failed', next_run_at: at('2026-01-05T12:00:00Z') });
    }
    expect((await reload(broken.id)).last_error).toMatch(/gone/);
  });

  it('handles at most `limit` jobs per tick and says there may be more', async () => {
    const ids = [(await schedule()).id, (await schedule()).id, (await schedule()).id];
    clock.set(at('2026-01-05T11:00:00Z'));
    const first = await runSchedulerTick(h.engine.ctx, clock.now(), { limit: 2 });
    expect(first.fired).toHaveLength(2);
    expect(first.more).toBe(true);
    const second = await runSchedulerTick(h.engine.ctx, clock.now(), { limit: 2 });
    expect(second.fired).toHaveLength(1);
    expect(second.more).toBe(false);
    expect([...first.fired, ...second.fired].map((f) => f.scheduleId).sort()).toEqual([...ids].sort());
  });
});

describe('schedule CRUD (planning)', () => {
  const count = async () =>
    (await h.engine.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncrelay.scheduled_jobs')).rows[0]!.n;

  const refusesBadInput =
    'refuses bad cron, time zone and mode naming the field, and another org’s integration, writing nothing';
  it(refusesBadInput, async () => {
    const integrationId = await integration();
    const cases: [Partial<Parameters<typeof createSchedule>[2]>, string][] = [
      [{ cron: '61 * * * *' }, 'cron'],
      [{ cron: '* * * * * *' }, 'cron'],
      [{ cron: '0 0 30 2 *' }, 'cron'],
      [{ timezone: 'Mars/Olympus' }, 'timezone'],
      [{ mode: 'backfill' }, 'mode'],
      [{ mode: 'sometimes' }, 'mode'],
    ];
    for (const [row, field] of cases) {
      const err = await schedule({ integrationId, ...row }).catch((e: unknown) => e);
      expect(err, JSON.stringify(row)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
    }
    const foreign = await integration('org-other');
    await expect(schedule({ integrationId: foreign })).rejects.toBeInstanceOf(NotFoundError);
    expect(await count()).toBe(0);

    const s = await schedule({ integrationId });
    await expect(updateSchedule(h.engine.db, clock, s.id, ORG, { timezone: 'Nowhere/Else' })).rejects.toMatchObject({
      field: 'timezone',
    });
    await expect(updateSchedule(h.engine.db, clock, s.id, 'org-other', { enabled: false })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(deleteSchedule(h.engine.db, s.id, 'org-other')).rejects.toBeInstanceOf(NotFoundError);
    expect(await reload(s.id)).toEqual(s);
  });

  it('a new cron or time zone moves next_run_at to its next slot after now', async () => {
    const s = await schedule();
    clock.set(at('2026-01-05T10:40:00Z'));
    const moved = await updateSchedule(h.engine.db, clock, s.id, ORG, { cron: '30 6 * * *', timezone: 'Asia/Tokyo' });
    expect(moved).toMatchObject({
      cron: '30 6 * * *',
      timezone: 'Asia/Tokyo',
      next_run_at: at('2026-01-05T21:30:00Z'),
    });
    const modeOnly = await updateSchedule(h.engine.db, clock, s.id, ORG, { mode: 'full_resync' });
    expect(modeOnly).toMatchObject({ mode: 'full_resync', next_run_at: at('2026-01-05T21:30:00Z') });
  });

  it('deleting a schedule keeps the JobRuns it started, unlinked', async () => {
    const s = await schedule();
    const fired = (await tick('2026-01-05T11:00:00Z')).fired[0]!;
    await deleteSchedule(h.engine.db, s.id, ORG);
    expect(await getSchedule(h.engine.db, s.id)).toBeNull();
    const { rows } = await h.engine.db.query<{ job_id: string | null; triggered_by: string }>(
      'SELECT job_id, triggered_by FROM syncrelay.job_runs WHERE id = $1',
      [fired.jobRunId],
    );
    expect(rows).toEqual([{ job_id: null, triggered_by: 'schedule' }]);
  });
});

describe('the scheduler loop', () => {
  it('ticks on start and when a schedule changes, and closes cleanly (twice)', async () => {
    const s = await schedule();
    clock.set(at('2026-01-05T11:00:00Z'));
    const loop = await h.engine.startScheduler({ pollIntervalMs: 60_000 });
    expect(loop.status).toBe('running');
    await waitFor(async () => (await jobRuns(s.id)).length === 1, 10_000);

    // The clock passes the next slot; the NOTIFY of another schedule's creation wakes the loop.
    await finishLiveRuns();
    clock.set(at('2026-01-05T12:00:00Z'));
    await schedule();
    await waitFor(async () => (await jobRuns(s.id)).length === 2, 10_000);

    expect(await h.engine.startScheduler()).toBe(loop);
    await loop.close();
    await loop.close();
    expect(loop.status).toBe('stopped');
  });

  it('starts with the reconciler unless told not to', async () => {
    const s = await schedule();
    clock.set(at('2026-01-05T11:00:00Z'));
    await h.engine.startReconciler({ id: 'sched-test' });
    await waitFor(async () => (await jobRuns(s.id)).length === 1, 10_000);
  });
});
