/**
 * The verify mode through the engine: a run plans one unit per enabled source × dataset whose spec
 * `verifies` (reference-tier ones once per run) over the whole source — since null, before the
 * plan's now; a provider with no such dataset enabled is refused on `mode`, naming it, writing
 * nothing; the unit cap applies; a live verify conflicts with another verify only; a schedule may
 * start one; and a verify unit's success leaves the watermark where it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { formatRunView } from '../../src/cli/commands/runs.js';
import { Engine } from '../../src/engine.js';
import { RunConflictError, RunTooLargeError, ValidationError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { readRunView } from '../../src/planning/runView.js';
import { runSchedulerTick } from '../../src/planning/scheduler.js';
import { createSchedule } from '../../src/planning/schedules.js';
import { triggerSync } from '../../src/planning/triggers.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { DatasetSpec, Provider, UnitContext } from '../../src/sdk/types.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { getSchedule } from '../../src/store/schedules.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { verifyPlan } from './verifyPlan.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-verify';
const NOW = new Date('2026-03-02T12:00:00Z');

function spec(key: string, extra: Partial<DatasetSpec> = {}): DatasetSpec {
  return { key, tier: 'work_item', costClass: 'rest', keepsWatermark: true, surfaces: [], ...extra };
}

/** A reference and a work-item dataset that verify (the latter with one fetched with it); one of each that does not. */
const DATASETS: readonly DatasetSpec[] = [
  spec('teams', { tier: 'reference', keepsWatermark: false, verifies: true }),
  spec('members', { tier: 'reference', keepsWatermark: false }),
  spec('work-items', { verifies: true }),
  spec('work-item-comments', { verifies: true, fetchedWith: 'work-items' }),
  spec('commits'),
];

/** What each verify unit of the test provider reports. */
const FOUND = { checked: 5, missing: 1, stale: 2, restored: 0, deleted: 1 };

const seen: { integrationId: string; mode: string; dataset: string; since: Date | null }[] = [];

function provider(name: string, datasets: readonly DatasetSpec[]): Provider {
  return {
    name,
    windowDays: 7,
    initialDepthDays: 30,
    datasets,
    runUnit: (ctx: UnitContext) => {
      const { integrationId, mode, datasetKey: dataset, since } = ctx.unit;
      seen.push({ integrationId, mode, dataset, since });
      return Promise.resolve({ items: 0, ...(mode === 'verify' ? { verify: FOUND } : {}) });
    },
  };
}

const verifying = provider('verifytest', DATASETS);
/** The same datasets, none declaring `verifies`. */
const listless = provider(
  'listless',
  DATASETS.map(({ verifies: _, ...d }) => d),
);

let t: TestDatabase;
let engine: Engine;
let broker: InProcessBroker;

beforeAll(async () => {
  t = await createTestDatabase();
  broker = new InProcessBroker();
  const registry = new ProviderRegistry()
    .register(verifying, normalizedSink(t.db))
    .register(listless, normalizedSink(t.db));
  engine = await Engine.open({
    settings: testSettings(),
    db: t.db,
    broker,
    registry,
    logger: silentLogger(),
    migrate: false,
  });
});
afterAll(async () => {
  await engine?.close();
  await broker?.close();
  await t?.drop();
});

async function integration(p = 'verifytest', datasets = DATASETS.map((d) => d.key)): Promise<string> {
  const created = await engine.createIntegration({
    orgId: ORG,
    provider: p,
    name: p,
    sources: ['ENG', 'OPS'],
    datasets,
  });
  return created.id;
}

const verify = (integrationId: string, extra: Partial<Parameters<Engine['trigger']>[0]> = {}) =>
  engine.trigger({ orgId: ORG, integrationId, mode: 'verify', triggeredBy: 'api', ...extra });

async function counts(): Promise<Record<string, number>> {
  const s = t.db.schema;
  const { rows } = await t.db.query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM ${s.sync_runs}) AS runs,
            (SELECT count(*)::int FROM ${s.sync_run_units}) AS units,
            (SELECT count(*)::int FROM ${s.job_runs}) AS job_runs,
            (SELECT count(*)::int FROM ${s.sync_dispatch_outbox}) AS outbox`,
  );
  return rows[0]!;
}

/** `syncrelay_verify_items_total` of the test provider, by outcome (0 when absent). */
async function verifyMetric(): Promise<Record<'checked' | 'deleted', number>> {
  const text = await engine.metrics.metrics();
  const of = (outcome: string) => {
    const m = new RegExp(
      `^syncrelay_verify_items_total\\{provider="verifytest",outcome="${outcome}"\\} (\\d+)$`,
      'm',
    ).exec(text);
    return m ? Number(m[1]) : 0;
  };
  return { checked: of('checked'), deleted: of('deleted') };
}

async function units(runId: string) {
  const { rows } = await t.db.query<{ dataset_key: string; mode: string; since_at: Date | null; n: number }>(
    `SELECT dataset_key, mode, since_at, count(*)::int AS n FROM ${t.db.schema.sync_run_units}
      WHERE sync_run_id = $1 GROUP BY 1, 2, 3 ORDER BY 1`,
    [runId],
  );
  return rows;
}

describe('planning a verify run', () => {
  const perSource = 'plans the datasets that verify: reference ones once, work-item ones per source, whole sources';
  it(perSource, async () => {
    const id = await integration();
    const plan = await verifyPlan(t.db, engine, ORG, id, NOW);
    const groups = plan.groups.map((g) => ({
      key: g.spec.key,
      source: g.source?.external_key ?? null,
      windows: g.windows,
    }));
    expect(groups).toEqual([
      { key: 'teams', source: null, windows: [{ since: null, before: NOW }] },
      { key: 'work-items', source: 'ENG', windows: [{ since: null, before: NOW }] },
      { key: 'work-items', source: 'OPS', windows: [{ since: null, before: NOW }] },
    ]);
    expect(plan.units).toBe(3);

    const run = await verify(id);
    expect(run.units).toBe(3);
    expect(await units(run.syncRunId)).toEqual([
      { dataset_key: 'teams', mode: 'verify', since_at: null, n: 1 },
      { dataset_key: 'work-items', mode: 'verify', since_at: null, n: 2 },
    ]);
    const { rows } = await t.db.query<{ mode: string }>(`SELECT mode FROM ${t.db.schema.sync_runs} WHERE id = $1`, [
      run.syncRunId,
    ]);
    expect(rows[0]!.mode).toBe('verify');
  });

  it('plans only the datasets asked for, each of which must verify', async () => {
    const id = await integration();
    const before = await counts();
    await expect(verify(id, { datasets: ['work-items', 'commits'] })).rejects.toMatchObject({
      field: 'datasets',
      message: expect.stringContaining('"commits"') as unknown,
    });
    expect(await counts()).toEqual(before);
    const run = await verify(id, { datasets: ['work-items'] });
    expect(await units(run.syncRunId)).toEqual([{ dataset_key: 'work-items', mode: 'verify', since_at: null, n: 2 }]);
  });

  it('a dataset fetched with another is verified only with it: asked for alone it is refused', async () => {
    const id = await integration('verifytest', ['teams', 'work-item-comments']);
    const before = await counts();
    const err = await verify(id, { datasets: ['work-item-comments'] }).catch((e: unknown) => e);
    expect(err).toMatchObject({ field: 'datasets', message: expect.stringContaining('"work-items"') as unknown });
    expect(await counts()).toEqual(before);
    const run = await verify(id);
    expect((await units(run.syncRunId)).map((u) => u.dataset_key)).toEqual(['teams']);
  });

  const refuses =
    'refuses, on mode and naming the provider, an integration with no dataset that verifies; writes nothing';
  it(refuses, async () => {
    const none = await integration('listless');
    const notEnabled = await integration('verifytest', ['members', 'commits']);
    const before = await counts();
    for (const [id, name] of [
      [none, 'listless'],
      [notEnabled, 'verifytest'],
    ] as const) {
      const err = await verify(id).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe('mode');
      expect((err as ValidationError).message).toContain(`"${name}"`);
    }
    expect(await counts()).toEqual(before);
    // The other modes of those integrations plan as before.
    await expect(
      engine.trigger({ orgId: ORG, integrationId: none, mode: 'full_resync', triggeredBy: 'api' }),
    ).resolves.toMatchObject({ units: 6 });
  });

  it('applies the unit cap, naming verify, before anything is written', async () => {
    const id = await integration();
    const before = await counts();
    const deps = { ...engine.ctx, settings: { ...engine.ctx.settings, runMaxUnits: 2 } };
    const err = await triggerSync(t.db, deps, {
      orgId: ORG,
      integrationId: id,
      mode: 'verify',
      triggeredBy: 'api',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunTooLargeError);
    expect((err as Error).message).toContain('a verify plans one unit per source × dataset');
    expect(await counts()).toEqual(before);
  });

  it('a live verify conflicts with another verify (409) unless forced; other modes are free', async () => {
    const id = await integration();
    const first = await verify(id);
    const err = await verify(id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunConflictError);
    expect((err as RunConflictError).message).toContain(first.syncRunId);
    await expect(
      engine.trigger({ orgId: ORG, integrationId: id, mode: 'incremental', triggeredBy: 'api' }),
    ).resolves.toBeTruthy();
    const forced = await verify(id, { force: true });
    expect(forced.syncRunId).not.toBe(first.syncRunId);
    await engine.cancel(first.syncRunId);
    await engine.cancel(forced.syncRunId);
    await expect(verify(id)).resolves.toMatchObject({ units: 3 });
  });
});

describe('a verify schedule', () => {
  it('fires a verify run; for a provider that verifies nothing the slot fails naming it', async () => {
    const clock = new ManualClock(new Date('2026-01-05T10:20:00Z'));
    const good = await createSchedule(t.db, clock, {
      orgId: ORG,
      integrationId: await integration(),
      cron: '0 * * * *',
      mode: 'verify',
    });
    const bad = await createSchedule(t.db, clock, {
      orgId: ORG,
      integrationId: await integration('listless'),
      cron: '0 * * * *',
      mode: 'verify',
    });
    expect(good.mode).toBe('verify');
    const tick = await runSchedulerTick(engine.ctx, new Date('2026-01-05T11:00:00Z'));
    expect(tick.fired.map((f) => f.scheduleId)).toEqual([good.id]);
    const { rows } = await t.db.query<{ mode: string; triggered_by: string }>(
      `SELECT mode, triggered_by FROM ${t.db.schema.sync_runs} WHERE id = $1`,
      [tick.fired[0]!.syncRunId],
    );
    expect(rows[0]).toEqual({ mode: 'verify', triggered_by: 'schedule' });
    expect(tick.failed.map((f) => f.scheduleId)).toEqual([bad.id]);
    expect((await getSchedule(t.db, bad.id))!.last_error).toMatch(/mode: .*"listless"/);
  });
});

describe('a verify run to its end', () => {
  async function runToEnd(integrationId: string, mode: 'incremental' | 'verify'): Promise<string> {
    const run = await engine.trigger({ orgId: ORG, integrationId, mode, triggeredBy: 'api' });
    await waitFor(async () => {
      const { rows } = await t.db.query<{ status: string }>(
        `SELECT status FROM ${t.db.schema.sync_runs} WHERE id = $1`,
        [run.syncRunId],
      );
      return rows[0]!.status === 'success';
    });
    return run.syncRunId;
  }

  async function watermarks(integrationId: string) {
    const { rows } = await t.db.query<{ source_id: string; dataset_key: string; watermark_at: Date }>(
      `SELECT source_id, dataset_key, watermark_at FROM ${t.db.schema.sync_watermarks}
        WHERE integration_id = $1 ORDER BY 1, 2`,
      [integrationId],
    );
    return rows;
  }

  it("hands the provider whole-source windows; a verify unit's success leaves the watermark as it was", async () => {
    const id = await integration();
    engine.startWorker({ concurrency: 4 });
    await engine.startReconciler({ scheduler: false });
    await runToEnd(id, 'incremental');
    const marks = await watermarks(id);
    const keys = ['commits', 'work-item-comments', 'work-items'];
    expect(marks.map((m) => m.dataset_key)).toEqual([...keys, ...keys]);

    const found = await verifyMetric();
    const runId = await runToEnd(id, 'verify');
    const read = seen
      .filter((s) => s.integrationId === id && s.mode === 'verify')
      .sort((a, b) => a.dataset.localeCompare(b.dataset));
    expect(read.map(({ dataset, since }) => ({ dataset, since }))).toEqual([
      { dataset: 'teams', since: null },
      { dataset: 'work-items', since: null },
      { dataset: 'work-items', since: null },
    ]);
    const { rows } = await t.db.query<{ before_at: Date }>(
      `SELECT before_at FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1 AND dataset_key = 'work-items'`,
      [runId],
    );
    // The verify window ends past the incremental's: a unit moving the watermark would have moved it.
    const latest = Math.max(...marks.map((m) => m.watermark_at.getTime()));
    for (const r of rows) expect(r.before_at.getTime()).toBeGreaterThan(latest);
    expect(await watermarks(id)).toEqual(marks);

    // The run's summary sums its units' counts (3 units); /metrics counts them by provider.
    const view = (await readRunView(t.db, runId))!;
    expect(view.verify).toEqual({ checked: 15, missing: 3, stale: 6, restored: 0, deleted: 3 });
    expect(formatRunView(view)).toMatch(/verify\s+15 checked · 3 missing · 6 stale · 0 restored · 3 deleted/);
    const after = await verifyMetric();
    expect(after.checked - found.checked).toBe(15);
    expect(after.deleted - found.deleted).toBe(3);
  });

  it('a run of another mode has no verify counts', async () => {
    const id = await integration();
    const run = await engine.trigger({ orgId: ORG, integrationId: id, mode: 'full_resync', triggeredBy: 'api' });
    expect((await readRunView(t.db, run.syncRunId))!.verify).toBeNull();
  });
});
