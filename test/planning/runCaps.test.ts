/**
 * The trigger's caps, checked before anything is written: a run over SYNC_RUN_MAX_UNITS (counted
 * by the planner's own code), the live runs of one integration (SYNC_INTEGRATION_MAX_LIVE_RUNS,
 * `force` or not), validation before both and before the conflict check, the scheduler recording
 * a refusal as `failed`, and the dispatch-time cap kept as the backstop.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { ResolvedSettings } from '../../src/config.js';
import { RunConflictError, RunTooLargeError, TooManyLiveRunsError, ValidationError } from '../../src/errors.js';
import { computePlan, planSyncRun } from '../../src/planning/planner.js';
import { runSchedulerTick } from '../../src/planning/scheduler.js';
import { createSchedule } from '../../src/planning/schedules.js';
import type { TriggerArgs } from '../../src/planning/triggers.js';
import { REFERENCE_DATASETS, WORK_ITEM_DATASETS } from '../../src/providers/synthetic.js';
import { getIntegration, listSources } from '../../src/store/integrations.js';
import { getSchedule } from '../../src/store/schedules.js';
import { dispatchSyncRun } from '../../src/tasks/dispatchSyncRun.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';

const ORG = 'org-caps';
const ALL_DATASETS = [...REFERENCE_DATASETS, ...WORK_ITEM_DATASETS];
const DAY = 86_400_000;

let h: TestEngine | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function open(settings: Partial<ResolvedSettings> = {}, clock?: ManualClock): Promise<TestEngine> {
  h = await openTestEngine({ settings, clock });
  return h;
}

async function integration(te: TestEngine, sources: number, datasets: readonly string[] = ALL_DATASETS) {
  const created = await te.engine.createIntegration({
    orgId: ORG,
    provider: 'synthetic',
    name: 'caps',
    sources: Array.from({ length: sources }, (_, i) => `team-${i}`),
    datasets: [...datasets],
    config: { itemsPerDay: 1, latencyMs: 0 },
  });
  return created.id;
}

/** Rows of every table a trigger writes. */
async function written(te: TestEngine): Promise<Record<string, number>> {
  const s = te.engine.db.schema;
  const { rows } = await te.engine.db.query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM ${s.job_runs}) AS job_runs,
            (SELECT count(*)::int FROM ${s.sync_runs}) AS sync_runs,
            (SELECT count(*)::int FROM ${s.sync_run_units}) AS units,
            (SELECT count(*)::int FROM ${s.sync_dispatch_outbox}) AS outbox`,
  );
  return rows[0]!;
}

function backfill(integrationId: string, days: number, extra: Partial<TriggerArgs> = {}): TriggerArgs {
  const since = new Date('2025-01-01T00:00:00Z');
  return {
    orgId: ORG,
    integrationId,
    mode: 'backfill',
    triggeredBy: 'backfill',
    since,
    before: new Date(since.getTime() + days * DAY),
    ...extra,
  };
}

describe('SYNC_RUN_MAX_UNITS, before anything is written', () => {
  const issue = 'refuses the issue’s 106,003-unit request (500 sources, every dataset, a year): count, cap, remedy';
  it(issue, async () => {
    const te = await open();
    const id = await integration(te, 500);
    const before = await written(te);
    const err = await te.engine.trigger(backfill(id, 365, { force: true })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunTooLargeError);
    const e = err as RunTooLargeError;
    expect(e.code).toBe('run_too_large');
    // 3 reference units + 500 sources × 4 work-item datasets × 53 weekly windows.
    expect([e.units, e.maxUnits]).toEqual([106_003, 1000]);
    expect(e.byDataset).toMatchObject({ teams: 1, 'work-items': 26_500 });
    expect(e.message).toBe(
      'this run would plan 106003 units, over the cap of 1000 (SYNC_RUN_MAX_UNITS); narrow it: fewer datasets, ' +
        'a shorter window (since/before) or fewer enabled sources',
    );
    expect(await written(te)).toEqual(before);
    // Repeating it, forced or not, writes nothing either.
    await expect(te.engine.trigger(backfill(id, 365))).rejects.toBeInstanceOf(RunTooLargeError);
    expect(await written(te)).toEqual(before);
  });

  const samePath = 'counts with the code that plans: the count is what would be written; the cap is inclusive';
  it(samePath, async () => {
    const te = await open({ runMaxUnits: 100_000 });
    const id = await integration(te, 3, ['teams', 'work-items', 'work-item-comments']);
    const args = backfill(id, 30);
    const row = (await getIntegration(te.engine.db, id))!;
    const plan = await computePlan(te.engine.db, te.engine.ctx, row, args);
    // 1 reference unit + 3 sources × 2 work-item datasets × 5 windows (7-day chunks of 30 days).
    expect(plan.units).toBe(31);
    const planned = await te.engine.trigger(args);
    expect(planned.units).toBe(plan.units);
    const { rows } = await te.engine.db.query<{ n: number; counted: number }>(
      `SELECT count(*)::int AS n, (SELECT planned_units FROM ${te.engine.db.schema.sync_runs} WHERE id = $1) AS counted
         FROM ${te.engine.db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [planned.syncRunId],
    );
    expect(rows[0]).toEqual({ n: plan.units, counted: plan.units });

    // The same request against a cap of exactly that many passes; one fewer is refused.
    te.engine.ctx.settings.runMaxUnits = plan.units;
    await expect(te.engine.trigger({ ...args, force: true })).resolves.toMatchObject({ units: plan.units });
    te.engine.ctx.settings.runMaxUnits = plan.units - 1;
    const before = await written(te);
    await expect(te.engine.trigger({ ...args, force: true })).rejects.toMatchObject({
      code: 'run_too_large',
      units: plan.units,
      maxUnits: plan.units - 1,
    });
    expect(await written(te)).toEqual(before);
  });

  it('refuses incremental and full_resync runs too, and planSyncRun called by a library user', async () => {
    const te = await open({ runMaxUnits: 10 });
    const id = await integration(te, 6, ['work-items', 'work-item-comments']);
    const before = await written(te);
    for (const mode of ['incremental', 'full_resync'] as const) {
      const err = (await te.engine
        .trigger({ orgId: ORG, integrationId: id, mode, triggeredBy: 'api' })
        .catch((e: unknown) => e)) as RunTooLargeError;
      expect(err).toBeInstanceOf(RunTooLargeError);
      expect(err.units).toBe(12);
      expect(err.message).toContain('narrow it: fewer datasets or fewer enabled sources');
    }
    await expect(
      te.engine.db.transaction((tx) =>
        planSyncRun(tx, te.engine.ctx, { orgId: ORG, integrationId: id, mode: 'full_resync', triggeredBy: 'api' }),
      ),
    ).rejects.toBeInstanceOf(RunTooLargeError);
    expect(await written(te)).toEqual(before);
  });

  it('keeps the dispatch-time cap as the backstop for a run planned past it', async () => {
    const te = await open({ runMaxUnits: 5 });
    const id = await integration(te, 2, ['work-items']);
    // A run planned under a larger cap (another process's settings, an older version) …
    const planned = await te.engine.db.transaction((tx) =>
      planSyncRun(tx, { ...te.engine.ctx, settings: { runMaxUnits: 1000 } }, backfill(id, 28)),
    );
    expect(planned.units).toBe(8);
    // … is still denied when it is dispatched.
    const outcome = await dispatchSyncRun(te.engine.ctx, planned.run.id);
    expect(outcome).toEqual({ kind: 'denied', deniedUnits: 8, runFailed: true });
  });
});

describe('SYNC_INTEGRATION_MAX_LIVE_RUNS', () => {
  it('force cannot pile up runs: at the cap a trigger is refused with the count and writes nothing', async () => {
    const te = await open({ integrationMaxLiveRuns: 3 });
    const id = await integration(te, 1, ['work-items']);
    const sync = { orgId: ORG, integrationId: id, mode: 'incremental' as const, triggeredBy: 'api' as const };
    const first = await te.engine.trigger(sync);
    await te.engine.trigger({ ...sync, force: true });
    await te.engine.trigger(backfill(id, 7));
    const before = await written(te);
    for (const args of [
      { ...sync, force: true },
      { ...sync, mode: 'full_resync' as const },
      backfill(id, 7, { force: true }),
    ]) {
      const err = (await te.engine.trigger(args).catch((e: unknown) => e)) as TooManyLiveRunsError;
      expect(err).toBeInstanceOf(TooManyLiveRunsError);
      expect(err).toMatchObject({ code: 'too_many_live_runs', liveRuns: 3, maxLiveRuns: 3 });
      expect(err.message).toContain('SYNC_INTEGRATION_MAX_LIVE_RUNS');
    }
    expect(await written(te)).toEqual(before);
    // Without force, a run of a live mode is still the conflict naming it.
    await expect(te.engine.trigger(sync)).rejects.toBeInstanceOf(RunConflictError);

    // A finished (here: cancelled) run frees a place.
    await te.engine.cancel(first.syncRunId);
    await expect(te.engine.trigger({ ...sync, mode: 'full_resync' })).resolves.toMatchObject({ units: 1 });
  });

  it('counts one integration’s runs only', async () => {
    const te = await open({ integrationMaxLiveRuns: 1 });
    const a = await integration(te, 1, ['work-items']);
    const b = await integration(te, 1, ['work-items']);
    await te.engine.trigger({ orgId: ORG, integrationId: a, mode: 'incremental', triggeredBy: 'api' });
    await expect(
      te.engine.trigger({ orgId: ORG, integrationId: b, mode: 'incremental', triggeredBy: 'api' }),
    ).resolves.toBeTruthy();
  });
});

describe('validation comes before the conflict check and both caps', () => {
  it('a bad request is a ValidationError while a run of its mode is live and the live-runs cap is met', async () => {
    const te = await open({ integrationMaxLiveRuns: 1 });
    const id = await integration(te, 1, ['teams', 'work-items']);
    await te.engine.trigger(backfill(id, 7));
    const before = await written(te);
    const bad: [string, TriggerArgs][] = [
      ['an unknown dataset', backfill(id, 7, { datasets: ['nope'] })],
      ['a dataset not enabled', backfill(id, 7, { datasets: ['members'] })],
      ['an unknown dataset, forced', backfill(id, 7, { datasets: ['nope'], force: true })],
      ['since ≥ before', backfill(id, -1)],
      ['a window over the maximum', backfill(id, 40, { maxWindowDays: 30 })],
      ['a window given to a sync', { ...backfill(id, 7), mode: 'incremental' }],
    ];
    for (const [what, args] of bad) {
      const err = await te.engine.trigger(args).catch((e: unknown) => e);
      expect(err, what).toBeInstanceOf(ValidationError);
    }
    // A disabled integration is refused as such, not as a conflict.
    await te.engine.db.query(`UPDATE ${te.engine.db.schema.integrations} SET enabled = false WHERE id = $1`, [id]);
    for (const args of [backfill(id, 7), { ...backfill(id, 7), force: true }]) {
      await expect(te.engine.trigger(args)).rejects.toMatchObject({ code: 'invalid_input', field: 'integration' });
    }
    expect(await written(te)).toEqual(before);
  });

  it('a run over the unit cap is refused as such while a run of its mode is live', async () => {
    const te = await open({ runMaxUnits: 3 });
    const id = await integration(te, 1, ['work-items']);
    await te.engine.trigger(backfill(id, 7));
    await expect(te.engine.trigger(backfill(id, 28))).rejects.toBeInstanceOf(RunTooLargeError);
  });
});

describe('scheduled triggers go through the same checks', () => {
  it('a live webhook run does not skip a scheduled incremental; a live scheduled one does', async () => {
    const clock = new ManualClock(new Date('2026-01-05T10:20:00Z'));
    const te = await open({}, clock);
    const id = await integration(te, 2, ['work-items']);
    const integ = (await getIntegration(te.engine.db, id))!;
    const sources = await listSources(te.engine.db, id);
    const incremental = { orgId: ORG, integrationId: id, mode: 'incremental' as const };
    const webhook = await te.engine.trigger({
      ...incremental,
      triggeredBy: 'webhook',
      sourceIds: [sources[0]!.id],
      force: true,
    });
    const schedule = await createSchedule(te.engine.db, clock, {
      orgId: ORG,
      integrationId: integ.id,
      cron: '0 * * * *',
    });

    clock.set(new Date('2026-01-05T11:00:00Z'));
    const first = await runSchedulerTick(te.engine.ctx, clock.now());
    expect(first.skipped).toEqual([]);
    expect(first.fired.map((f) => f.scheduleId)).toEqual([schedule.id]);
    expect(first.fired[0]!.syncRunId).not.toBe(webhook.syncRunId);
    // The API's trigger too: no conflict with the webhook run, one with the scheduled one.
    await expect(te.engine.trigger({ ...incremental, triggeredBy: 'api' })).rejects.toBeInstanceOf(RunConflictError);

    clock.set(new Date('2026-01-05T12:00:00Z'));
    const second = await runSchedulerTick(te.engine.ctx, clock.now());
    expect(second.fired).toEqual([]);
    expect(second.skipped.map((s) => s.existingRunId)).toEqual([first.fired[0]!.syncRunId]);
  });

  it('a refused slot is recorded as failed with the reason; the tick goes on and so does the schedule', async () => {
    const clock = new ManualClock(new Date('2026-01-05T10:20:00Z'));
    const te = await open({ runMaxUnits: 2, integrationMaxLiveRuns: 1 }, clock);
    const big = await integration(te, 3, ['work-items']);
    const busy = await integration(te, 1, ['work-items']);
    await te.engine.trigger(backfill(busy, 7));
    const tooBig = await createSchedule(te.engine.db, clock, { orgId: ORG, integrationId: big, cron: '0 * * * *' });
    const atCap = await createSchedule(te.engine.db, clock, { orgId: ORG, integrationId: busy, cron: '0 * * * *' });
    const before = await written(te);

    clock.set(new Date('2026-01-05T11:00:00Z'));
    const tick = await runSchedulerTick(te.engine.ctx, clock.now());
    expect(tick.errors).toEqual([]);
    expect(tick.fired).toEqual([]);
    expect(tick.skipped).toEqual([]);
    expect(tick.failed.map((f) => f.scheduleId).sort()).toEqual([tooBig.id, atCap.id].sort());
    expect(await written(te)).toEqual(before);

    const a = (await getSchedule(te.engine.db, tooBig.id))!;
    expect(a).toMatchObject({ last_outcome: 'failed', next_run_at: new Date('2026-01-05T12:00:00Z') });
    expect(a.last_error).toContain('would plan 3 units, over the cap of 2 (SYNC_RUN_MAX_UNITS)');
    const b = (await getSchedule(te.engine.db, atCap.id))!;
    expect(b).toMatchObject({ last_outcome: 'failed', next_run_at: new Date('2026-01-05T12:00:00Z') });
    expect(b.last_error).toContain('the cap is 1 (SYNC_INTEGRATION_MAX_LIVE_RUNS');
  });
});
