/**
 * Dataset families read together: a dataset declaring `fetchedWith` gets no unit of its own when its
 * anchor is planned in the same run — the anchor's units carry it (`carried_datasets`, the provider
 * sees `unit.datasets`); planned alone otherwise. A family's incremental window starts at the earliest
 * of its datasets' watermarks, a success moves all of them, post_sync names every dataset, and the
 * expired-lease policy judges the union of the family's surfaces.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { familiesOf, familyWatermark } from '../../src/planning/families.js';
import { computePlan } from '../../src/planning/planner.js';
import { declaredSurfaces, specsOf } from '../../src/providers/datasets.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { DatasetSpec, PostSyncPayload, Provider, UnitContext } from '../../src/sdk/types.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { getIntegration } from '../../src/store/integrations.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const DAY = 86_400_000;
const ORG = 'org-families';

function spec(key: string, extra: Partial<DatasetSpec> = {}): DatasetSpec {
  return { key, tier: 'work_item', costClass: 'graphql', keepsWatermark: true, surfaces: [], ...extra };
}

const DATASETS: readonly DatasetSpec[] = [
  spec('teams', { tier: 'reference', keepsWatermark: false, surfaces: ['teams'] }),
  spec('work-items', { surfaces: ['work_items'] }),
  spec('work-item-comments', { fetchedWith: 'work-items', surfaces: ['work_item_comments'] }),
  spec('work-item-history', { fetchedWith: 'work-items', surfaces: ['work_item_events'] }),
];

const seen: { dataset: string; datasets: readonly string[]; since: Date | null }[] = [];
const payloads: PostSyncPayload[] = [];

const familyProvider: Provider = {
  name: 'famtest',
  windowDays: 7,
  initialDepthDays: 30,
  datasets: DATASETS,
  runUnit: (ctx: UnitContext) => {
    seen.push({ dataset: ctx.unit.datasetKey, datasets: ctx.unit.datasets, since: ctx.unit.since });
    return Promise.resolve({ items: 0 });
  },
  postSyncHandlers: [
    {
      name: 'capture',
      run: (p) => {
        payloads.push(p);
        return Promise.resolve();
      },
    },
  ],
};

describe('familiesOf and familyWatermark (pure)', () => {
  it('carries members only behind a planned anchor of the same tier, never through a chain', () => {
    const f = familiesOf(DATASETS);
    expect(f.carried.get('work-items')).toEqual(['work-item-comments', 'work-item-history']);
    expect([...f.members].sort()).toEqual(['work-item-comments', 'work-item-history']);
    expect(familiesOf(DATASETS.filter((d) => d.key !== 'work-items')).members.size).toBe(0);
    const chain = [spec('a'), spec('b', { fetchedWith: 'a' }), spec('c', { fetchedWith: 'b' })];
    expect(familiesOf(chain).carried.get('a')).toEqual(['b']);
    expect(familiesOf(chain).members.has('c')).toBe(false);
    const otherTier = [spec('a', { tier: 'reference' }), spec('b', { fetchedWith: 'a' })];
    expect(familiesOf(otherTier).members.size).toBe(0);
    expect(familiesOf([spec('a', { fetchedWith: 'a' })]).members.size).toBe(0);
  });

  it('starts a family at the earliest mark of the datasets that keep one; none when one has none', () => {
    const early = new Date('2026-01-01T00:00:00Z');
    const late = new Date('2026-02-01T00:00:00Z');
    const fam = [spec('a'), spec('b'), spec('c', { keepsWatermark: false })];
    const marks: Record<string, Date | null> = { a: late, b: early, c: null };
    expect(familyWatermark(fam, (k) => marks[k] ?? null)).toEqual(early);
    expect(familyWatermark(fam, (k) => (k === 'b' ? null : late))).toBeNull();
  });

  it('declares the union of the carried datasets’ surfaces; an unknown dataset is undefined', () => {
    const integration = { id: 'i', orgId: ORG, provider: 'famtest', name: 'n', config: {} };
    const specs = specsOf(familyProvider, integration, ['work-items', 'work-item-comments', 'work-item-history']);
    expect(declaredSurfaces(specs!)).toEqual(['work_items', 'work_item_comments', 'work_item_events']);
    expect(specsOf(familyProvider, integration, ['work-items', 'nope'])).toBeUndefined();
  });
});

describe('a family in a run', () => {
  let t: TestDatabase;
  let engine: Engine;
  let broker: InProcessBroker;
  let integrationId: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    broker = new InProcessBroker();
    engine = await Engine.open({
      settings: testSettings(),
      db: t.db,
      broker,
      registry: new ProviderRegistry().register(familyProvider, normalizedSink(t.db)),
      logger: silentLogger(),
      migrate: false,
    });
    const created = await engine.createIntegration({
      orgId: ORG,
      provider: 'famtest',
      name: 'fam',
      sources: ['ENG', 'OPS'],
      datasets: DATASETS.map((d) => d.key),
    });
    integrationId = created.id;
    engine.startWorker({ concurrency: 4 });
    await engine.startReconciler();
  });
  afterAll(async () => {
    await engine?.close();
    await broker?.close();
    await t?.drop();
  });

  async function runToEnd(args: Partial<Parameters<Engine['trigger']>[0]>): Promise<string> {
    seen.length = 0;
    const run = await engine.trigger({ orgId: ORG, integrationId, mode: 'incremental', triggeredBy: 'api', ...args });
    await waitFor(async () => {
      const { rows } = await t.db.query<{ status: string }>(
        `SELECT status FROM ${t.db.schema.sync_runs} WHERE id = $1`,
        [run.syncRunId],
      );
      return rows[0]!.status === 'success';
    });
    return run.syncRunId;
  }

  it('plans one unit per source × window for the family, carrying the members', async () => {
    const since = new Date('2026-01-05T00:00:00Z');
    const runId = await runToEnd({ mode: 'backfill', since, before: new Date(since.getTime() + 21 * DAY) });
    const { rows } = await t.db.query<{ dataset_key: string; carried_datasets: string[]; n: number }>(
      `SELECT dataset_key, carried_datasets, count(*)::int AS n FROM ${t.db.schema.sync_run_units}
        WHERE sync_run_id = $1 GROUP BY 1, 2 ORDER BY 1`,
      [runId],
    );
    expect(rows).toEqual([
      { dataset_key: 'teams', carried_datasets: [], n: 1 },
      { dataset_key: 'work-items', carried_datasets: ['work-item-comments', 'work-item-history'], n: 6 },
    ]);
    const family = seen.filter((s) => s.dataset === 'work-items');
    expect(family).toHaveLength(6);
    for (const s of family) expect(s.datasets).toEqual(['work-items', 'work-item-comments', 'work-item-history']);
    await waitFor(() => Promise.resolve(payloads.some((p) => p.runId === runId)));
    const payload = payloads.find((p) => p.runId === runId)!;
    expect(payload.datasets).toEqual(['teams', 'work-item-comments', 'work-item-history', 'work-items']);
  });

  it('plans a member alone when its anchor is not asked for', async () => {
    await runToEnd({ datasets: ['work-item-comments'] });
    expect(seen.map((s) => s.datasets)).toEqual([['work-item-comments'], ['work-item-comments']]);
  });

  it('moves every member’s watermark and starts the next window at the earliest of them', async () => {
    await runToEnd({});
    const marks = async () =>
      (
        await t.db.query<{ dataset_key: string; n: number }>(
          `SELECT dataset_key, count(*)::int AS n FROM ${t.db.schema.sync_watermarks}
            WHERE integration_id = $1 GROUP BY 1 ORDER BY 1`,
          [integrationId],
        )
      ).rows;
    expect(await marks()).toEqual([
      { dataset_key: 'work-item-comments', n: 2 },
      { dataset_key: 'work-item-history', n: 2 },
      { dataset_key: 'work-items', n: 2 },
    ]);
    const back = new Date(Date.now() - 3 * DAY);
    await t.db.query(
      `UPDATE ${t.db.schema.sync_watermarks} SET watermark_at = $2
        WHERE integration_id = $1 AND dataset_key = 'work-item-history'`,
      [integrationId, back],
    );
    const row = (await getIntegration(t.db, integrationId))!;
    const plan = await computePlan(t.db, { registry: engine.ctx.registry, clock: engine.ctx.clock }, row, {
      orgId: ORG,
      integrationId,
      mode: 'incremental',
      triggeredBy: 'api',
    });
    const family = plan.groups.filter((g) => g.spec.key === 'work-items');
    expect(family).toHaveLength(2);
    for (const g of family) expect(g.windows[0]!.since).toEqual(back);
    expect(plan.groups.some((g) => g.spec.key === 'work-item-history')).toBe(false);
  });

  it("reaches back the provider's overlap before the watermark; the setting overrides it", async () => {
    await runToEnd({});
    const { rows } = await t.db.query<{ m: Date }>(
      `SELECT min(watermark_at) AS m FROM ${t.db.schema.sync_watermarks} WHERE integration_id = $1`,
      [integrationId],
    );
    const mark = rows[0]!.m;
    const row = (await getIntegration(t.db, integrationId))!;
    const lagging = new ProviderRegistry().register(
      { ...familyProvider, incrementalOverlapMs: 90_000 },
      normalizedSink(t.db),
    );
    const sinceWith = async (settings?: { runMaxUnits: number; incrementalOverlapMs: number | null }) => {
      const deps = { registry: lagging, clock: engine.ctx.clock, ...(settings ? { settings } : {}) };
      const plan = await computePlan(t.db, deps, row, {
        orgId: ORG,
        integrationId,
        mode: 'incremental',
        triggeredBy: 'api',
      });
      const windows = plan.groups.filter((g) => g.spec.key === 'work-items').map((g) => g.windows[0]!.since!.getTime());
      expect(windows).toHaveLength(2);
      return Math.max(...windows);
    };
    expect(await sinceWith()).toBe(mark.getTime() - 90_000);
    expect(await sinceWith({ runMaxUnits: 1000, incrementalOverlapMs: null })).toBe(mark.getTime() - 90_000);
    expect(await sinceWith({ runMaxUnits: 1000, incrementalOverlapMs: 5_000 })).toBe(mark.getTime() - 5_000);
    expect(await sinceWith({ runMaxUnits: 1000, incrementalOverlapMs: 0 })).toBe(mark.getTime());
  });
});
